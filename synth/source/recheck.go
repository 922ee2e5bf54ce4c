package source

import (
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/synth"
	"github.com/frognano/frog/synth/validate"
)

// Rechecker re-validates stored tasks in one sandbox, each against its own
// module (see validate.Checker), the way `frog synth verify` does. It is
// used by one goroutine at a time (its sandbox's rule).
type Rechecker struct {
	sb    env.Sandbox
	work  string
	local map[string]Module
	log   zerolog.Logger

	checkers map[string]*validate.Checker // by repo@version
	missing  map[string]error             // modules that could not be opened
}

// NewRechecker returns a Rechecker that runs in sb. A task's module is the
// one of local whose path is the task's repo, or else repo@version
// fetched under work (Open).
func NewRechecker(sb env.Sandbox, local []Module, work string, log zerolog.Logger) *Rechecker {
	r := &Rechecker{sb: sb, work: work, local: map[string]Module{}, log: log,
		checkers: map[string]*validate.Checker{}, missing: map[string]error{}}
	for _, m := range local {
		r.local[m.Path] = m
	}
	return r
}

// Check re-validates rec. A task that does not hold up gives an error
// wrapping validate.ErrRecheck: one that fails its tests or whose gold
// patch does not fix it, but also one that is not a usable record, names
// a path outside its module or a file the module lacks, or whose module
// cannot be found or fetched (asked once per module). Any other error is a
// fault of the sandbox, or ctx's end: what follows would fail the same
// way.
func (r *Rechecker) Check(ctx context.Context, rec synth.TaskRecord) error {
	if err := rec.Validate(); err != nil {
		return fmt.Errorf("task %s: %w: %w", rec.ID, validate.ErrRecheck, err)
	}
	ch, err := r.checker(ctx, rec)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("task %s: %w: %w", rec.ID, validate.ErrRecheck, err)
	}
	return ch.Check(ctx, rec)
}

func (r *Rechecker) checker(ctx context.Context, rec synth.TaskRecord) (*validate.Checker, error) {
	key := rec.Repo + "@" + rec.Version
	if ch := r.checkers[key]; ch != nil {
		return ch, nil
	}
	if err := r.missing[key]; err != nil {
		return nil, err
	}
	m, ok := r.local[rec.Repo]
	var err error
	switch {
	case ok:
	case rec.Version == "":
		err = fmt.Errorf("module %s has no version: pass its directory with --source", rec.Repo)
	default:
		m, err = Open(ctx, key, r.work)
	}
	var ch *validate.Checker
	if err == nil {
		ch, err = validate.NewChecker(m.Dir, r.sb, fmt.Sprintf("m%d", len(r.checkers)), r.log)
	}
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, env.ErrInfra) {
			r.missing[key] = err
		}
		return nil, err
	}
	r.checkers[key] = ch
	return ch, nil
}
