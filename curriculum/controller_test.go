package curriculum_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/frognano/frog/curriculum"
	"github.com/frognano/frog/env"
	synthsim "github.com/frognano/frog/synth/sim"
)

// TestControllerKeepsFreshTasksNearTheTarget plays a simulated policy of
// fixed skill, σ(skill − d), against the binned simulated synthesizer:
// frontier's steered requests bring the fresh tasks' pass rate near one
// half, where the synthesizer's own mix (uniform) is far from it.
func TestControllerKeepsFreshTasksNearTheTarget(t *testing.T) {
	run := func(strategy string, skill float64) float64 {
		cfg := curriculum.DefaultReplayConfig()
		cfg.Strategy, cfg.Seed = strategy, 3
		r, err := curriculum.NewReplay(cfg)
		if err != nil {
			t.Fatal(err)
		}
		src := synthsim.NewBinned(3, 0.5, 0.5)
		rng := rand.New(rand.NewPCG(3, 4))
		solves := func(task *env.Task) bool {
			d, ok := src.Truth(task.ID)
			if !ok {
				t.Fatalf("no truth for %s", task.ID)
			}
			return rng.Float64() < 1/(1+math.Exp(d-skill))
		}
		var pass, n float64
		var group uint64
		const plans, g = 3000, 8
		for i := range plans {
			p := r.Plan(2)
			tasks := p.Replay
			if p.Fresh > 0 {
				req := r.Request()
				got, err := src.TasksFor(context.Background(), p.Fresh, *req.Knobs)
				if err != nil {
					t.Fatal(err)
				}
				r.Synthesized(req, got)
				fresh := make([]*env.Task, len(got))
				for j := range got {
					fresh[j] = &got[j]
				}
				r.Admit(fresh)
				tasks = append(tasks, fresh...)
				for _, task := range fresh {
					group++
					for range g {
						if i >= plans/2 {
							n++
						}
						if solves(task) {
							if i >= plans/2 {
								pass++
							}
							r.Observe(task, 1, group)
						} else {
							r.Observe(task, 0, group)
						}
					}
				}
				tasks = p.Replay
			}
			for _, task := range tasks {
				group++
				for range g {
					rew := 0.0
					if solves(task) {
						rew = 1
					}
					r.Observe(task, rew, group)
				}
			}
			if i%4 == 3 {
				r.Advance(int64(i/4 + 1))
			}
		}
		return pass / n
	}
	for _, skill := range []float64{0, 2.5} {
		f, u := run(curriculum.StrategyFrontier, skill), run(curriculum.StrategyUniform, skill)
		t.Logf("skill %v: fresh pass rate frontier %.3f, uniform %.3f", skill, f, u)
		if math.Abs(f-0.5) > 0.08 {
			t.Errorf("skill %v: frontier's fresh tasks pass %.3f of the time, want 0.5 ± 0.08", skill, f)
		}
		if math.Abs(f-0.5) >= math.Abs(u-0.5) {
			t.Errorf("skill %v: frontier's fresh pass rate %.3f no nearer one half than uniform's %.3f", skill, f, u)
		}
	}
}
