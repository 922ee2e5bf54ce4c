package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/frognano/frog/actors"
)

// A training run's directory adds to Dir's:
//
//	trajectories/shard-00000.jsonl  every episode's record, 5,000 a shard
//	checkpoints/ckpt-<version>.json the learner's checkpoints (atomic writes)
//	checkpoints/latest              the name of the newest one
//
// and metrics.jsonl holds one JSON object a line with a "kind": "update"
// (one learner update), "eval" (a held-out evaluation) or "baseline" (a
// baseline on the held-out tasks).

// Event is one line of a training run's metrics.jsonl.
type Event struct {
	Kind string `json:"kind"`
	// Update lines.
	*actors.UpdateRecord
	// Throughput since the run (or its resumption) started.
	EpisodesPerSecond float64 `json:"episodes_per_second,omitempty"`
	TriesPerSecond    float64 `json:"tries_per_second,omitempty"`
	TrainPassRate     float64 `json:"train_pass_rate,omitempty"`
	ZeroSignalShare   float64 `json:"zero_signal_share,omitempty"`
	RefilledShare     float64 `json:"refilled_share,omitempty"`
	// Eval and baseline lines.
	Policy   string       `json:"policy,omitempty"`
	AtUpdate int64        `json:"at_update,omitempty"`
	Solved   *actors.Rate `json:"solved,omitempty"`
	// AtTries is the solve rate within 1, 3 and 10 tries (1, 5 and 10 in
	// runs of an older frog): a policy that learns what to try first gains
	// there before its final rate moves.
	AtTries []actors.RateAt `json:"solved_at_tries,omitempty"`
	// MRR is the mean reciprocal rank of the first fix, ByFamily every
	// measure per operator family of the bug (actors.EvalReport).
	MRR      *actors.Mean    `json:"mrr,omitempty"`
	ByFamily []actors.RateOf `json:"by_family,omitempty"`
	// FirstSolves are the evaluation's episodes one by one (the try that
	// first fixed each task, 0 for none), so that two evaluations of the
	// same tasks can be compared pair by pair (actors.Compare). Runs of a
	// frog before them have none.
	FirstSolves []actors.FirstSolve `json:"first_solves,omitempty"`
	Elapsed     float64             `json:"elapsed_seconds,omitempty"`
}

// UpdateEvent is the metrics line of one learner update. Its
// ZeroSignalShare is the share of the groups judged since the previous
// update whose rewards were all equal (with refilling, the groups dropped
// for want of signal), RefilledShare the share dropped and refilled: the
// groups of the update's batch alone would hide those, which never reach
// one. A record that counts no judged groups gives its batch's share.
func UpdateEvent(u actors.UpdateRecord) Event {
	e := Event{Kind: "update", UpdateRecord: &u}
	switch j := u.Judged; {
	case j.Groups > 0:
		e.ZeroSignalShare = float64(j.ZeroSignal) / float64(j.Groups)
		e.RefilledShare = float64(j.Refilled) / float64(j.Groups)
	case u.Groups > 0:
		e.ZeroSignalShare = float64(u.ZeroSignalGroups) / float64(u.Groups)
	}
	return e
}

// WriteEvent appends e to metrics.jsonl, one line.
func (d *Dir) WriteEvent(e Event) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.metrics.append(line)
}

// Shards writes trajectory records as JSONL shards of at most per lines
// (shard-00000.jsonl, …). A record whose write fails is cut back
// (jsonlFile), and no record is written after it. Write is safe for
// concurrent use (episodes end on many goroutines); Close is called once,
// after the last Write.
type Shards struct {
	dir  string
	per  int
	mu   sync.Mutex
	f    *jsonlFile
	n    int
	next int
	err  error
}

// NewShards makes dir and returns the writer of its shards, continuing
// after the shards already there (a resumed run's).
func NewShards(dir string, per int) (*Shards, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// Continue after the shards already there (a resumed run).
	names, _ := filepath.Glob(filepath.Join(dir, "shard-*.jsonl"))
	return &Shards{dir: dir, per: per, next: len(names)}, nil
}

// Write appends v as one record; the first error is kept and returned by
// Close.
func (s *Shards) Write(v any) {
	line, err := json.Marshal(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if err != nil {
		s.err = err
		return
	}
	if s.f == nil || s.n >= s.per {
		if s.f != nil {
			s.f.f.Close()
		}
		s.f, s.err = openJSONL(filepath.Join(s.dir, fmt.Sprintf("shard-%05d.jsonl", s.next)), os.O_TRUNC)
		if s.err != nil {
			return
		}
		s.next++
		s.n = 0
	}
	if err := s.f.append(line); err != nil {
		s.err = err
	}
	s.n++
}

// Close syncs and closes the open shard and returns the first error of
// any Write.
func (s *Shards) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		s.err = errors.Join(s.err, s.f.f.Sync(), s.f.f.Close())
		s.f = nil
	}
	return s.err
}

// EpisodeRecord is an episode's line in trajectories/ (frog train and
// frog eval --trajectories): what it played and every step it took.
func EpisodeRecord(r *actors.EpisodeResult) map[string]any {
	rec := map[string]any{"episode": r.Episode, "group": r.Group, "task": r.Task.ID, "kind": r.Kind.String(), "attempts": r.Attempts}
	if tr := r.Trajectory; tr != nil {
		rec["reward"], rec["tries"], rec["executions"], rec["steps"] = tr.Reward, tr.Tries, tr.Executions, tr.Steps
	}
	return rec
}
