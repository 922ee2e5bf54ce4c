package sim

import (
	"context"
	"math"
	"testing"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

func TestSolveRateMatchesLogistic(t *testing.T) {
	for _, gap := range []float64{-2, 0, 1.5} {
		p := Policy{Skill: gap, Seed: 4}
		task := &env.Task{Difficulty: 0, File: "f", Patch: "gold"}
		const n = 20000
		obs := make([]env.Observation, n)
		for i := range obs {
			obs[i] = env.Observation{Episode: uint64(i), Step: 1, Task: task}
		}
		acts := make([]env.Action, n)
		if err := p.Act(context.Background(), obs, acts); err != nil {
			t.Fatal(err)
		}
		solved := 0
		for _, a := range acts {
			if a.Tool != env.ToolEdit {
				t.Fatalf("step 1 action %v, want edit", a.Tool)
			}
			if a.New == "gold" {
				solved++
			}
		}
		want := SolveProb(gap, 0)
		if got := float64(solved) / n; math.Abs(got-want) > 0.015 {
			t.Errorf("skill gap %v: solve rate %.4f, want σ = %.4f", gap, got, want)
		}
	}
}

func TestLearnerGainsWithSignal(t *testing.T) {
	l := NewLearner(0, 0.1, 1)
	traj := func(r float64) *env.Trajectory { return &env.Trajectory{Reward: r} }
	batch := []policy.Group{
		{Trajectories: []*env.Trajectory{traj(1), traj(0)}}, // variance 1/4
		{Trajectories: []*env.Trajectory{traj(1), traj(1)}}, // no signal
	}
	_, st, err := l.Update(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(l.Skill()-0.025) > 1e-12 || st.ZeroSignalGroups != 1 || st.Groups != 2 {
		t.Errorf("skill %v (want 0.1 × 0.25), stats %+v", l.Skill(), st)
	}
}
