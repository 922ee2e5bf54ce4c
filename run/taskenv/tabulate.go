package taskenv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/env/replay"
	"github.com/frognano/frog/gotask"
	"github.com/frognano/frog/policy/baseline"
	"github.com/frognano/frog/policy/repair"
)

// TabulateOptions say what a replay table records: the repair protocol
// whose candidate lists are searched (the built-in policy's), how the
// search's episodes run (Run: the run's name, concurrency, retries), and
// the table's header (Tabulate sets its protocol and steps).
type TabulateOptions struct {
	Protocol repair.Config
	Run      actors.Config
	Header   replay.Header
}

// tabulateSteps bounds the search's episodes, as the ceiling's in frog
// eval: it takes seven steps at most on a protocol that keeps nothing.
const tabulateSteps = 40

// Tabulate plays the exhaustive search of o.Protocol (policy/baseline's
// Exhaustive: the ceiling search on the protocol's own lines) once on
// each task, in sandboxes of prov judged by e's harness, and makes the
// replay table of what it found: per task, what the protocol observes at
// the start and every listed candidate's verdict. The tasks are ones that
// passed the task check (Check); quarantined holds the check's word on
// those that did not, and a task whose search did not end (an
// infrastructure fault past the retries) or whose record cannot be made
// is left out too, each counted by its reason. A cancelled ctx is
// run.ErrInterrupted's, and no table.
func (e *Env) Tabulate(ctx context.Context, prov env.Provider, tasks []actors.EvalTask, quarantined []gotask.Quarantined, o TabulateOptions, log zerolog.Logger) (*replay.Table, error) {
	proto, err := json.Marshal(o.Protocol)
	if err != nil {
		return nil, err
	}
	t := &replay.Table{Header: o.Header, LeftOut: map[string]int{}}
	t.Header.Settings.Protocol, t.Header.Settings.MaxSteps = proto, tabulateSteps
	for _, q := range quarantined {
		t.LeftOut[leftOutReason(q.ID, q.Reason)]++
	}
	cfg := o.Run
	cfg.MaxTries, cfg.MaxSteps = 0, tabulateSteps
	// Each search's trajectory, copied out of the learner's callback as
	// JSON (its pointers are the learner's), by task.
	var mu sync.Mutex
	found := map[string][]byte{}
	failed := map[string]string{}
	deps := actors.Deps{Provider: prov, Harness: e.Harness, Log: log, OnEpisode: func(r *actors.EpisodeResult) {
		mu.Lock()
		defer mu.Unlock()
		if r.Kind != actors.Completed || r.Trajectory == nil {
			failed[r.Task.ID] = fmt.Sprintf("the search did not end: %v (%v)", r.Kind, r.Err)
			return
		}
		data, err := json.Marshal(r.Trajectory)
		if err != nil {
			failed[r.Task.ID] = "the search's trajectory: " + err.Error()
			return
		}
		found[r.Task.ID] = data
	}}
	pol := baseline.Exhaustive("tabulate", o.Protocol, 1)
	log.Info().Int("tasks", len(tasks)).Msg("tabulating: every candidate of the protocol's lists tried, for real")
	if _, err := actors.Evaluate(ctx, actors.EvalConfig{Run: cfg, Tasks: tasks, Samples: 1}, pol, deps); err != nil {
		return nil, fmt.Errorf("tabulate: %w", err)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	for _, et := range tasks {
		task := et.Task
		data, ok := found[task.ID]
		if !ok {
			why := failed[task.ID]
			if why == "" {
				why = "the search was not played"
			}
			log.Warn().Str("task", task.ID).Str("reason", why).Msg("left out of the table")
			t.LeftOut[why]++
			continue
		}
		var traj env.Trajectory
		if err := json.Unmarshal(data, &traj); err != nil {
			return nil, fmt.Errorf("task %s: the search's trajectory: %w", task.ID, err)
		}
		rec, err := replay.FromSearch(task, &traj, e.reader(ctx, &task))
		if err != nil {
			log.Warn().Str("task", task.ID).Err(err).Msg("left out of the table")
			t.LeftOut["no record: "+err.Error()]++
			continue
		}
		rec.Module, rec.Family, rec.K = et.Module, et.Family, et.K
		t.Records = append(t.Records, rec)
	}
	return t, nil
}

// reader reads files of task's starting workspace, its template.
func (e *Env) reader(ctx context.Context, task *env.Task) func(string) ([]byte, error) {
	return func(file string) ([]byte, error) {
		dir, err := e.Workspaces.Template(ctx, task)
		if err != nil {
			return nil, err
		}
		if !filepath.IsLocal(file) {
			return nil, fmt.Errorf("%s: not a path in the workspace", file)
		}
		return os.ReadFile(filepath.Join(dir, filepath.FromSlash(file)))
	}
}

// leftOutReason is the quarantine's reason without the task's name, so
// that tasks left out alike count together.
func leftOutReason(id, reason string) string {
	return "quarantined: " + strings.TrimPrefix(strings.TrimPrefix(reason, "task "+id+": "), "quarantined: ")
}
