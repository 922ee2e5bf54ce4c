package cli

import (
	"context"

	"github.com/frognano/frog/env"
	policysim "github.com/frognano/frog/policy/sim"
	"github.com/frognano/frog/synth"
)

// oracleSource tells the simulated agent's oracle (frog sim's named
// simulation) the fix of every task it serves; fix says what that is.
// Tasks whose fix cannot be had are not served: the error says which.
type oracleSource struct {
	synth.Source
	oracle *policysim.Oracle
	fix    func(ctx context.Context, t *env.Task) (policysim.Fix, error)
}

func (s oracleSource) Tasks(ctx context.Context, n int, d float64) ([]env.Task, error) {
	tasks, err := s.Source.Tasks(ctx, n, d)
	kept := tasks[:0]
	for i := range tasks {
		f, ferr := s.fix(ctx, &tasks[i])
		if ferr != nil {
			if err == nil {
				err = ferr
			}
			continue
		}
		s.oracle.Add(tasks[i].ID, f)
		kept = append(kept, tasks[i])
	}
	return kept, err
}

// simFix is the fix of a task of the simulated sandboxes.
func simFix(_ context.Context, t *env.Task) (policysim.Fix, error) { return policysim.SimFix(t), nil }
