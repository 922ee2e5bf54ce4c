package taskenv

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/gotask"
	"github.com/frognano/frog/run"
	"github.com/frognano/frog/synth"
)

// CheckConcurrency is how many of n tasks' checks run at once: at most 2
// a core, since a check builds.
func CheckConcurrency(n int) int { return min(n, 2*runtime.NumCPU()) }

// Check checks every record's task (concurrently, n at a time, within
// CheckConcurrency) and returns those that hold up, labelled for the
// report, and the ids of the quarantined ones. A fault of the machine ends
// it with the error; a cancelled ctx with run.ErrInterrupted.
func (e *Env) Check(ctx context.Context, recs []synth.TaskRecord, n int, log zerolog.Logger) ([]actors.EvalTask, []string, error) {
	n = CheckConcurrency(n)
	log.Info().Int("tasks", len(recs)).Int("at_once", n).Msg("checking tasks")
	ptrs := make([]*env.Task, len(recs))
	for i := range recs {
		ptrs[i] = &recs[i].Task
	}
	checked := e.Quarantine.CheckAll(ctx, ptrs, n)
	var errs []error
	done := 0
	for _, err := range checked {
		if err != nil && !errors.Is(err, synth.ErrQuarantined) {
			errs = append(errs, err)
		}
		if err == nil || errors.Is(err, synth.ErrQuarantined) {
			done++
		}
	}
	if ctx.Err() != nil {
		return nil, nil, run.Interrupted("checking the tasks (%d of %d checked): no episode was played", done, len(recs))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, fmt.Errorf("checking tasks: %w", err)
	}
	var tasks []actors.EvalTask
	var quarantined []string
	for i, r := range recs {
		if checked[i] != nil {
			quarantined = append(quarantined, r.ID)
			continue
		}
		tasks = append(tasks, EvalTask(r))
	}
	return tasks, quarantined, nil
}

// EvalTask is a stored task labelled for an evaluation's report.
func EvalTask(r synth.TaskRecord) actors.EvalTask {
	return actors.EvalTask{Task: r.Task, Module: r.Repo, Family: r.Family, K: r.Features.K}
}

// RequireUsable checks recs' tasks in store order, n at a time, until one
// holds up, so that a store none of whose tasks does is an error now,
// naming why, and not a run that starts with nothing to play. The
// verdicts are the quarantine's: a task checked here is not checked again
// when it is served.
func (e *Env) RequireUsable(ctx context.Context, flag, path string, recs []synth.TaskRecord, n int, log zerolog.Logger) error {
	n = CheckConcurrency(n)
	start := time.Now()
	log.Info().Str("store", path).Int("tasks", len(recs)).Msg("checking the store's tasks until one holds up")
	for i := 0; i < len(recs); i += n {
		batch := make([]*env.Task, 0, n)
		for j := i; j < min(i+n, len(recs)); j++ {
			batch = append(batch, &recs[j].Task)
		}
		errs := e.Quarantine.CheckAll(ctx, batch, n)
		if ctx.Err() != nil {
			return run.Interrupted("checking the tasks of %s (%d of %d checked): no episode was played", path, i, len(recs))
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
	return NoTaskHoldsUp(flag, path, len(recs), e.Quarantine.Quarantined())
}

// NoTaskHoldsUp is the error of a store none of whose n tasks holds up:
// all quarantined, the first few named with why.
func NoTaskHoldsUp(flag, path string, n int, q []gotask.Quarantined) error {
	var why []string
	for _, x := range q[:min(len(q), 3)] {
		why = append(why, x.Reason)
	}
	if len(q) > 3 {
		why = append(why, fmt.Sprintf("and %d more", len(q)-3))
	}
	return fmt.Errorf("%s %s: none of its %d tasks holds up, all quarantined (%s)", flag, path, n, strings.Join(why, "; "))
}
