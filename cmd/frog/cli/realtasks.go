package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask"
	policysim "github.com/frognano/frog/policy/sim"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/source"
	"github.com/frognano/frog/synth/store"
)

// taskOptions are the flags of commands that play real tasks.
type taskOptions struct {
	Workspaces string   `json:"workspaces"`
	Locals     []string `json:"locals,omitempty"`
	NoCache    bool     `json:"no_outcome_cache"`
	NoServe    bool     `json:"no_try_server,omitempty"`
}

func (t *taskOptions) flags(f *pflag.FlagSet) {
	f.StringVar(&t.Workspaces, "workspaces", gotask.DefaultWorkspaceRoot(), "directory of the tasks' workspace templates (each task's module with its bug), made once and reused")
	f.StringSliceVar(&t.Locals, "local", nil, "a local module directory that stored tasks were made from (repeatable); tasks of modules with a version are fetched through the module proxy")
	f.BoolVar(&t.NoCache, "no-outcome-cache", false, "run every test again instead of answering repeated states from the outcome cache")
	f.BoolVar(&t.NoServe, "no-try-server", false, "start a test process for every try instead of serving an episode's tries from one (process sandboxes)")
}

// taskEnv is what plays real tasks: their workspaces, the harness that runs
// their tests and judges them, and the quarantine that checks each before
// it is served.
type taskEnv struct {
	ws *gotask.Workspaces
	h  *gotask.Harness
	q  *gotask.Quarantine
	// hcfg is h's configuration, for a harness of its own (a later run's).
	hcfg gotask.HarnessConfig
}

// openTaskEnv opens the sandboxes spec names, laying out real tasks from
// o.Workspaces. The func releases the sandboxes.
func openTaskEnv(ctx context.Context, o taskOptions, spec sandboxSpec, log zerolog.Logger) (*taskEnv, env.Provider, func(), error) {
	ws, err := gotask.NewWorkspaces(o.Workspaces, log)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--workspaces %s: %w", o.Workspaces, err)
	}
	for _, dir := range o.Locals {
		m, err := source.Local(dir)
		if err != nil {
			return nil, nil, nil, usagef("--local %s: %v", dir, err)
		}
		ws.AddLocal(m)
	}
	spec.Workspaces = ws
	prov, release, err := openSandboxes(ctx, spec, log)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sandbox %s: %w", spec.Kind, err)
	}
	// The verdict key sits beside the workspaces root, not in it: sandboxes
	// see the root (its templates and binary cache), never the key.
	key, err := gotask.LoadVerdictKey(filepath.Join(filepath.Dir(ws.Root()), "verdict.key"))
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	hcfg := gotask.HarnessConfig{NoCache: o.NoCache, NoServe: o.NoServe, BinCache: filepath.Join(ws.Root(), "bin"), VerdictKey: key}
	h := gotask.NewHarness(ws, hcfg)
	return &taskEnv{ws: ws, h: h, q: gotask.NewQuarantine(ws, h, prov, spec.Run, log), hcfg: hcfg}, prov, release, nil
}

// oracleFix is what frog sim's simulated agent is told of a real task: the
// files of its gold fix (a named simulation; no real policy sees them).
func (e *taskEnv) oracleFix(ctx context.Context, t *env.Task) (policysim.Fix, error) {
	fixed, err := e.ws.Fixed(ctx, t)
	if err != nil {
		return policysim.Fix{}, err
	}
	f := policysim.Fix{Difficulty: t.Difficulty}
	for _, p := range slices.Sorted(maps.Keys(fixed)) {
		f.Files = append(f.Files, policysim.FileContent{Path: p, Content: string(fixed[p])})
	}
	return f, nil
}

// taskReport is what a run of real tasks adds to its summary.
type taskReport struct {
	Quarantined []gotask.Quarantined `json:"quarantined"`
	Harness     gotask.HarnessStats  `json:"harness"`
}

func (e *taskEnv) report() *taskReport {
	if e == nil {
		return nil
	}
	return &taskReport{Quarantined: e.q.Quarantined(), Harness: e.h.Stats()}
}

// loadStore loads the task store a flag names, to play it: a usage error
// when it does not load; a task it holds more than once is kept once, with
// a warning (played twice, it would be counted twice); a store with no
// task is an error that says so.
func loadStore(flag, path string, log zerolog.Logger) ([]synth.TaskRecord, error) {
	recs, err := store.Load(path)
	if err != nil {
		return nil, &UsageError{Err: fmt.Errorf("%s %s: %w", flag, path, err)}
	}
	recs, dups, err := store.Dedup(recs)
	if err != nil {
		return nil, &UsageError{Err: fmt.Errorf("%s %s: %w", flag, path, err)}
	}
	if len(dups) > 0 {
		log.Warn().Str("store", path).Int("tasks", len(dups)).Strs("ids", dups[:min(len(dups), 5)]).
			Msg("the store holds these tasks more than once: each is played and counted once")
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s %s: the store holds no task", flag, path)
	}
	return recs, nil
}

// requireUsable checks recs' tasks in store order, n at a time, until one
// holds up, so that a store none of whose tasks does is an error now,
// naming why, and not a run that starts with nothing to play. The
// verdicts are the quarantine's: a task checked here is not checked again
// when it is served.
func requireUsable(ctx context.Context, tenv *taskEnv, flag, path string, recs []synth.TaskRecord, n int, log zerolog.Logger) error {
	n = checkConcurrency(n)
	start := time.Now()
	log.Info().Str("store", path).Int("tasks", len(recs)).Msg("checking the store's tasks until one holds up")
	for i := 0; i < len(recs); i += n {
		batch := make([]*env.Task, 0, n)
		for j := i; j < min(i+n, len(recs)); j++ {
			batch = append(batch, &recs[j].Task)
		}
		errs := tenv.q.CheckAll(ctx, batch, n)
		if ctx.Err() != nil {
			return interrupted("checking the tasks of %s (%d of %d checked): no episode was played", path, i, len(recs))
		}
		var faults []error
		for _, err := range errs {
			switch {
			case err == nil:
				log.Info().Str("store", path).Int("checked", i+len(batch)).Dur("took", time.Since(start)).Msg("the store has a task that holds up")
				return nil
			case !errors.Is(err, synth.ErrQuarantined):
				faults = append(faults, err)
			}
		}
		if len(faults) > 0 {
			return fmt.Errorf("%s %s: checking its tasks: %w", flag, path, errors.Join(faults...))
		}
	}
	return noTaskHoldsUp(flag, path, len(recs), tenv.q.Quarantined())
}

// noTaskHoldsUp is the error of a store none of whose n tasks holds up:
// all quarantined, the first few named with why.
func noTaskHoldsUp(flag, path string, n int, q []gotask.Quarantined) error {
	var why []string
	for _, x := range q[:min(len(q), 3)] {
		why = append(why, x.Reason)
	}
	if len(q) > 3 {
		why = append(why, fmt.Sprintf("and %d more", len(q)-3))
	}
	return fmt.Errorf("%s %s: none of its %d tasks holds up, all quarantined (%s)", flag, path, n, strings.Join(why, "; "))
}
