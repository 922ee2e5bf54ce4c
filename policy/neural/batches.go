package neural

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

// A recorded batch is what one update of the learner was given: its groups,
// each trajectory cut down to what the learner reads (the reward, the tries
// count, and every step's tool, log-probability, decision and first try
// result). `frog train --record-batches FILE` writes one JSON line per
// update; ReadBatches reads them back, so that an update can be replayed on
// any backend without the tasks, sandboxes or tests that produced it.

// batchFormat names the layout of a recorded batch line.
const batchFormat = "frog-neural-batch/1"

type batchLine struct {
	Format string       `json:"format"`
	Update int64        `json:"update"`
	Groups []groupTrace `json:"groups"`
}

type groupTrace struct {
	Task         string            `json:"task"`
	TryCost      float64           `json:"try_cost,omitempty"`
	Trajectories []*env.Trajectory `json:"trajectories"`
}

// trace is t cut down to what Learner.collect and tryOutcome read.
func trace(t *env.Trajectory) *env.Trajectory {
	out := &env.Trajectory{Task: t.Task, Episode: t.Episode, Attempt: t.Attempt, Reward: t.Reward,
		Submitted: t.Submitted, Executions: t.Executions, Tries: t.Tries}
	for _, s := range t.Steps {
		if s.Action.Decision == nil {
			continue
		}
		st := env.Step{Action: env.Action{Tool: s.Action.Tool, Version: s.Action.Version, LogProb: s.Action.LogProb,
			Decision: s.Action.Decision}}
		if tries := s.Result.Tries(); len(tries) > 0 {
			st.Result.Detail = &env.StepDetail{Tries: []env.TryResult{tries[0]}}
		}
		out.Steps = append(out.Steps, st)
	}
	return out
}

// BatchRecorder writes each batch a learner is given to a file, one JSON
// line per update, gzip-compressed when the name ends in .gz. It is safe for
// concurrent use; Close flushes and closes the file.
type BatchRecorder struct {
	mu   sync.Mutex
	f    *os.File
	gz   *gzip.Writer
	w    *bufio.Writer
	n    int64
	err  error
	name string
}

// NewBatchRecorder creates (or truncates) path.
func NewBatchRecorder(path string) (*BatchRecorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("record batches: %w", err)
	}
	r := &BatchRecorder{f: f, name: path}
	var w io.Writer = f
	if strings.HasSuffix(path, ".gz") {
		r.gz = gzip.NewWriter(f)
		w = r.gz
	}
	r.w = bufio.NewWriter(w)
	return r, nil
}

// Record writes one batch. The first write error is kept and returned by
// this and every later call, and by Close.
func (r *BatchRecorder) Record(groups []policy.Group) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.n++
	line := batchLine{Format: batchFormat, Update: r.n}
	for _, g := range groups {
		gt := groupTrace{TryCost: g.TryCost}
		if g.Task != nil {
			gt.Task = g.Task.ID
		}
		for _, t := range g.Trajectories {
			gt.Trajectories = append(gt.Trajectories, trace(t))
		}
		line.Groups = append(line.Groups, gt)
	}
	data, err := json.Marshal(line)
	if err == nil {
		_, err = r.w.Write(append(data, '\n'))
	}
	if err != nil {
		r.err = fmt.Errorf("record batches to %s: %w", r.name, err)
	}
	return r.err
}

// Close flushes what was recorded and closes the file.
func (r *BatchRecorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.err
	err = errors.Join(err, r.w.Flush())
	if r.gz != nil {
		err = errors.Join(err, r.gz.Close())
	}
	return errors.Join(err, r.f.Close())
}

// Recording is a Learner that records each batch before updating on it.
// Everything else (checkpoints, the current policy) is the Learner's.
type Recording struct {
	*Learner
	To *BatchRecorder
}

// Update records the batch, then applies it. A failed recording fails the
// update: a recording with a batch missing would replay a different run.
func (r Recording) Update(ctx context.Context, groups []policy.Group) (policy.Policy, policy.UpdateStats, error) {
	if err := r.To.Record(groups); err != nil {
		return nil, policy.UpdateStats{Groups: len(groups)}, err
	}
	return r.Learner.Update(ctx, groups)
}

// ReadBatches reads a file of recorded batches (gzip-compressed when its
// name ends in .gz), one []policy.Group per update in order. A line that
// does not parse or is of another format is an error that names it.
func ReadBatches(path string) ([][]policy.Group, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rd io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		rd = gz
	}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	var out [][]policy.Group
	for n := 1; sc.Scan(); n++ {
		var line batchLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if line.Format != batchFormat {
			return nil, fmt.Errorf("%s:%d: format %q, want %q", path, n, line.Format, batchFormat)
		}
		groups := make([]policy.Group, len(line.Groups))
		for i, g := range line.Groups {
			groups[i] = policy.Group{Task: &env.Task{ID: g.Task}, Trajectories: g.Trajectories, TryCost: g.TryCost}
		}
		out = append(out, groups)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}
