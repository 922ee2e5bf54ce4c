package actors

import (
	"context"
	"errors"
	"testing"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

// oddFails fails the requests of odd episodes, item by item, and answers the
// others with its inner policy.
type oddFails struct{ inner policy.Policy }

func (p oddFails) Act(ctx context.Context, obs []env.Observation, acts []env.Action) error {
	errs := make(policy.ItemErrors, len(obs))
	var keep []int
	for i, o := range obs {
		if o.Episode%2 == 1 {
			errs[i] = errors.New("model server said 503")
		} else {
			keep = append(keep, i)
		}
	}
	sub := make([]env.Observation, len(keep))
	for j, i := range keep {
		sub[j] = obs[i]
	}
	subActs := make([]env.Action, len(keep))
	if err := p.inner.Act(ctx, sub, subActs); err != nil {
		return err
	}
	for j, i := range keep {
		acts[i] = subActs[j]
	}
	return errs
}

type oddFailsLearner struct{ policy.Learner }

func (l oddFailsLearner) Policy() policy.Policy { return oddFails{l.Learner.Policy()} }

// Update wraps every new policy too: the server swaps them in.
func (l oddFailsLearner) Update(ctx context.Context, b []policy.Group) (policy.Policy, policy.UpdateStats, error) {
	p, st, err := l.Learner.Update(ctx, b)
	return oddFails{p}, st, err
}

func TestPolicyServerErrorsArePerItem(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(map[bool]string{true: "inline", false: "runners"}[inline], func(t *testing.T) {
			deps, _, _ := simDeps(t, simSetup{seed: 1})
			if !inline {
				deps.Provider = runnerOnly{deps.Provider}
			}
			deps.Learner = oddFailsLearner{deps.Learner}
			var odd, even int64
			var results []EpisodeResult
			deps.OnEpisode = func(r *EpisodeResult) { results = append(results, *r) }
			cfg := testConfig(40, 40)
			cfg.MaxAttempts = 2
			sum, err := Run(context.Background(), cfg, deps)
			if err != nil {
				t.Fatal(err)
			}
			checkAccounting(t, sum, 40)
			if sum.PolicyServer.MeanBatch <= 1 {
				t.Fatalf("mean batch %.1f: the test needs batches that mix failing and healthy episodes", sum.PolicyServer.MeanBatch)
			}
			for _, r := range results {
				switch {
				case r.Episode%2 == 1:
					odd++
					if r.Kind != FailedInfra || !errors.Is(r.Err, env.ErrInfra) {
						steps := -1
						if r.Trajectory != nil {
							steps = len(r.Trajectory.Steps)
						}
						t.Errorf("episode %d (its requests fail): %s after %d attempts (%d steps), err %v; want failed_infra", r.Episode, r.Kind, r.Attempts, steps, r.Err)
					}
				default:
					even++
					if r.Kind != Completed || r.Attempts != 1 {
						t.Errorf("episode %d (healthy, batched with failing ones): %s after %d attempts, err %v; want completed at once", r.Episode, r.Kind, r.Attempts, r.Err)
					}
				}
			}
			if odd == 0 || even == 0 {
				t.Fatalf("episodes: %d odd, %d even; want both", odd, even)
			}
			if sum.PolicyServer.Errors != 2*odd {
				t.Errorf("policy server errors %d, want %d (one per failed request: two attempts of %d episodes)", sum.PolicyServer.Errors, 2*odd, odd)
			}
		})
	}
}
