package actors

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

// oddFails fails the requests of odd episodes, item by item, and answers the
// others with its inner policy. Each call takes a millisecond, as a model
// server's does: requests that arrive meanwhile queue and are batched, so
// batches mix failing and healthy episodes however the scheduler runs.
type oddFails struct{ inner policy.Policy }

func (p oddFails) Act(ctx context.Context, obs []env.Observation, acts []env.Action) error {
	time.Sleep(time.Millisecond)
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

// constant answers every observation with a submit.
type constant struct{}

func (constant) Act(_ context.Context, obs []env.Observation, acts []env.Action) error {
	for i := range obs {
		acts[i] = env.Action{Tool: env.ToolSubmit}
	}
	return nil
}

// An answer to an asker that is gone is dropped, not sent to the dead
// letters: by the flag the asker's request carries (Gone), or, without
// one, by the process registry.
func TestPolicyServerDropsAnswersToTheGone(t *testing.T) {
	system := actor.NewActorSystem()
	var runners sync.WaitGroup
	server := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &policyServer{pol: constant{}, maxBatch: 8, maxInflight: 1, root: system.Root, runners: &runners}
	}))
	defer system.Root.Stop(server)
	got := make(chan *ActResponse, 4)
	alive := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if r, ok := c.Message().(*ActResponse); ok {
			got <- r
		}
	}))
	stopped := system.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	if err := system.Root.StopFuture(stopped).Wait(); err != nil {
		t.Fatal(err)
	}
	var gone, live atomic.Bool
	gone.Store(true)
	for _, r := range []*ActRequest{
		{Obs: env.Observation{Step: 1}, ReplyTo: alive, Gone: &gone}, // flagged gone: dropped
		{Obs: env.Observation{Step: 2}, ReplyTo: stopped},            // not registered: dropped
		{Obs: env.Observation{Step: 3}, ReplyTo: alive, Gone: &live}, // answered
		{Obs: env.Observation{Step: 4}, ReplyTo: alive},              // registered: answered
	} {
		system.Root.Send(server, r)
	}
	var steps []int
	for len(steps) < 2 {
		select {
		case r := <-got:
			steps = append(steps, r.Step)
		case <-time.After(10 * time.Second):
			t.Fatalf("answered steps %v; want 3 and 4", steps)
		}
	}
	runners.Wait()
	res, err := system.Root.RequestFuture(server, &GetStats{}, time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	if st := res.(*PolicyServerStats); st.Dropped != 2 || slices.Contains(steps, 1) || slices.Contains(steps, 2) {
		t.Errorf("answered steps %v, dropped %d; want 3 and 4 answered, 2 dropped", steps, st.Dropped)
	}
}
