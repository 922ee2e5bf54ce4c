package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/frognano/frog/actors"
)

// A training run's directory adds to runDir's:
//
//	trajectories/shard-00000.jsonl  every episode's record, 5,000 a shard
//	checkpoints/ckpt-<version>.json the learner's checkpoints (atomic writes)
//	checkpoints/latest              the name of the newest one
//
// and metrics.jsonl holds one JSON object a line with a "kind": "update"
// (one learner update), "eval" (a held-out evaluation) or "baseline" (a
// baseline on the held-out tasks).

// metricsEvent is one line of a training run's metrics.jsonl.
type metricsEvent struct {
	Kind string `json:"kind"`
	// Update lines.
	*actors.UpdateRecord
	// Throughput since the run (or its resumption) started.
	EpisodesPerSecond float64 `json:"episodes_per_second,omitempty"`
	TriesPerSecond    float64 `json:"tries_per_second,omitempty"`
	TrainPassRate     float64 `json:"train_pass_rate,omitempty"`
	ZeroSignalShare   float64 `json:"zero_signal_share,omitempty"`
	// Eval and baseline lines.
	Policy   string       `json:"policy,omitempty"`
	AtUpdate int64        `json:"at_update,omitempty"`
	Solved   *actors.Rate `json:"solved,omitempty"`
	// AtTries is the solve rate within 1, 5 and 10 tries: a policy that
	// learns what to try first gains there before its final rate moves.
	AtTries []actors.RateAt `json:"solved_at_tries,omitempty"`
	Elapsed float64         `json:"elapsed_seconds,omitempty"`
}

// updateEvent is the metrics line of one learner update.
func updateEvent(u actors.UpdateRecord) metricsEvent {
	e := metricsEvent{Kind: "update", UpdateRecord: &u}
	if u.Groups > 0 {
		e.ZeroSignalShare = float64(u.ZeroSignalGroups) / float64(u.Groups)
	}
	return e
}

// writeEvent appends one line to metrics.jsonl.
func (d *runDir) writeEvent(e metricsEvent) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	_, err = d.metrics.Write(append(line, '\n'))
	return err
}

// openMetricsAppend reopens a run's metrics.jsonl to append to (a resumed
// run continues its curve).
func openRunDirAppend(path string) (*runDir, error) {
	f, err := os.OpenFile(filepath.Join(path, "metrics.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	return &runDir{path: path, metrics: f}, nil
}

// shards writes trajectory records as JSONL shards of at most per lines.
type shards struct {
	dir  string
	per  int
	mu   sync.Mutex
	f    *os.File
	n    int
	next int
	err  error
}

func newShards(dir string, per int) (*shards, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// Continue after the shards already there (a resumed run).
	names, _ := filepath.Glob(filepath.Join(dir, "shard-*.jsonl"))
	return &shards{dir: dir, per: per, next: len(names)}, nil
}

// write appends one record; the first error is kept and returned by close.
func (s *shards) write(v any) {
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
			s.f.Close()
		}
		s.f, s.err = os.Create(filepath.Join(s.dir, fmt.Sprintf("shard-%05d.jsonl", s.next)))
		if s.err != nil {
			return
		}
		s.next++
		s.n = 0
	}
	if _, err := s.f.Write(append(line, '\n')); err != nil {
		s.err = err
	}
	s.n++
}

func (s *shards) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		s.err = errors.Join(s.err, s.f.Sync(), s.f.Close())
		s.f = nil
	}
	return s.err
}

// checkpointDir is the learner's checkpoint sink: each checkpoint a file
// written atomically (temporary file, fsync, rename), then the "latest"
// pointer the same way, so that a kill at any point leaves the previous
// checkpoint whole and pointed to. It keeps the newest keep files.
type checkpointDir struct {
	dir  string
	keep int
}

// savedCheckpoint is a checkpoint file: the actors' checkpoint under a
// format tag.
type savedCheckpoint struct {
	Format string `json:"format"`
	actors.Checkpoint
}

const checkpointFileFormat = "frog-checkpoint/1"

func (c *checkpointDir) Save(ck actors.Checkpoint) error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	s := savedCheckpoint{Format: checkpointFileFormat, Checkpoint: ck}
	name := fmt.Sprintf("ckpt-%08d.json", ck.Version)
	if err := writeJSONAtomic(filepath.Join(c.dir, name), s); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(c.dir, "latest"), []byte(name+"\n")); err != nil {
		return err
	}
	c.prune(name)
	return nil
}

// prune removes the oldest checkpoints beyond keep, never the one just
// written (latest names it, whatever the others' versions: a directory may
// hold checkpoints of higher versions than the one a run writes now).
func (c *checkpointDir) prune(current string) {
	names, _ := filepath.Glob(filepath.Join(c.dir, "ckpt-*.json"))
	sort.Strings(names)
	for i := 0; len(names) > c.keep && i < len(names); {
		if filepath.Base(names[i]) == current {
			i++
			continue
		}
		os.Remove(names[i])
		names = append(names[:i], names[i+1:]...)
	}
}

// loadCheckpoint reads the checkpoint a path names: a checkpoint file, or
// a run directory (its latest checkpoint).
func loadCheckpoint(path string) (savedCheckpoint, string, error) {
	file := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		dir := filepath.Join(path, "checkpoints")
		if _, err := os.Stat(dir); err != nil {
			dir = path // a checkpoints directory itself
		}
		name, err := os.ReadFile(filepath.Join(dir, "latest"))
		if err != nil {
			return savedCheckpoint{}, "", fmt.Errorf("%s has no checkpoint (no checkpoints/latest)", path)
		}
		file = filepath.Join(dir, strings.TrimSpace(string(name)))
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return savedCheckpoint{}, "", err
	}
	var s savedCheckpoint
	if err := json.Unmarshal(data, &s); err != nil {
		return savedCheckpoint{}, "", fmt.Errorf("checkpoint %s does not parse (corrupted?): %v", file, err)
	}
	if s.Format != checkpointFileFormat {
		return savedCheckpoint{}, "", fmt.Errorf("%s is not a frog checkpoint (format %q)", file, s.Format)
	}
	return s, file, nil
}
