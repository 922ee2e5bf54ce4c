package taskenv

import (
	"context"
	"fmt"

	"github.com/frognano/frog/env"
	policysim "github.com/frognano/frog/policy/sim"
	"github.com/frognano/frog/synth"
	synthsim "github.com/frognano/frog/synth/sim"
)

// oracleSource tells the simulated agent's oracle (frog sim's named
// simulation) the fix of every task it serves; fix says what that is.
// Tasks whose fix cannot be had are not served: the error says which.
type oracleSource struct {
	oracle *policysim.Oracle
	fix    func(ctx context.Context, t *env.Task) (policysim.Fix, error)
}

// OracleSource wraps src so that oracle is told the fix of every task it
// serves, for as long as the task lives (Oracle.Tie), keeping src's
// capabilities (synth.Wrap). fix is SimFix or
// FixFor(src) for simulated tasks, Env.OracleFix for real ones.
func OracleSource(src synth.Source, oracle *policysim.Oracle, fix func(context.Context, *env.Task) (policysim.Fix, error)) synth.Source {
	o := oracleSource{oracle: oracle, fix: fix}
	return synth.Wrap(src, func(ctx context.Context, next func() ([]env.Task, error)) ([]env.Task, error) {
		tasks, err := next()
		return o.tell(ctx, tasks, err)
	})
}

func (s oracleSource) tell(ctx context.Context, tasks []env.Task, err error) ([]env.Task, error) {
	kept := tasks[:0]
	for i := range tasks {
		f, ferr := s.fix(ctx, &tasks[i])
		if ferr != nil {
			if err == nil {
				err = ferr
			}
			continue
		}
		s.oracle.Tie(&tasks[i], f)
		kept = append(kept, tasks[i])
	}
	return kept, err
}

// SimFix is the fix of a task of the simulated sandboxes.
func SimFix(_ context.Context, t *env.Task) (policysim.Fix, error) { return policysim.SimFix(t), nil }

// FixFor is the fix function of a simulated source: a binned source tells
// the oracle each task's true difficulty, which the task's own estimate
// (what curricula see) is not.
func FixFor(src synth.Source) func(context.Context, *env.Task) (policysim.Fix, error) {
	b, ok := src.(*synthsim.Binned)
	if !ok {
		return SimFix
	}
	return func(_ context.Context, t *env.Task) (policysim.Fix, error) {
		f := policysim.SimFix(t)
		d, ok := b.Truth(t.ID)
		if !ok {
			return f, fmt.Errorf("sim: task %s was not made by this source", t.ID)
		}
		f.Difficulty = d
		return f, nil
	}
}
