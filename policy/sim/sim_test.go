package sim

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy"
)

func TestSolveRateMatchesLogistic(t *testing.T) {
	for _, gap := range []float64{-2, 0, 1.5} {
		task := &env.Task{ID: "t", Difficulty: 0, File: "f", Patch: "gold"}
		oracle := NewOracle()
		oracle.Add(task.ID, SimFix(task))
		p := Policy{Skill: gap, Seed: 4, Oracle: oracle}
		const n = 20000
		obs := make([]env.Observation, n)
		for i := range obs {
			obs[i] = env.Observation{Episode: uint64(i), Step: 1, Task: new(task.View())}
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
	l := NewLearner(0, 0.1, 1, NewOracle())
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

func TestPolicyWithoutOracleEntryFails(t *testing.T) {
	p := Policy{Oracle: NewOracle()}
	obs := []env.Observation{{Task: &env.TaskView{ID: "unknown"}}}
	if err := p.Act(context.Background(), obs, make([]env.Action, 1)); err == nil {
		t.Fatal("Act on a task the oracle does not know: no error")
	}
}

func TestMultiFileFix(t *testing.T) {
	oracle := NewOracle()
	oracle.Add("t", Fix{Difficulty: -100, Files: []FileContent{{"a.go", "A"}, {"b.go", "B"}}})
	p := Policy{Skill: 0, Seed: 1, Oracle: oracle}
	var hist []env.Step
	var got []env.Action
	for step := 0; step < 6; step++ {
		obs := []env.Observation{{Step: step, Task: &env.TaskView{ID: "t"}, History: hist}}
		if step > 0 {
			obs[0].Last = &hist[len(hist)-1].Result
		}
		acts := make([]env.Action, 1)
		if err := p.Act(context.Background(), obs, acts); err != nil {
			t.Fatal(err)
		}
		got = append(got, acts[0])
		if acts[0].Tool == env.ToolSubmit {
			break
		}
		hist = append(hist, env.Step{Action: acts[0]})
	}
	var tools []string
	for _, a := range got {
		tools = append(tools, a.Tool.String()+":"+a.Path+":"+a.New)
	}
	want := []string{"view:a.go:", "edit:a.go:A", "edit:b.go:B", "submit::"}
	if len(tools) != len(want) {
		t.Fatalf("actions %v, want %v", tools, want)
	}
	for i := range want {
		if tools[i] != want[i] {
			t.Fatalf("actions %v, want %v", tools, want)
		}
	}
}

// TestOracleForgetsTasksNoOneHolds: a tied task's fix is known while the
// task, or a copy of it, is held, and forgotten once none is, so that an
// oracle fed without end does not grow without end; an added one stays.
func TestOracleForgetsTasksNoOneHolds(t *testing.T) {
	o := NewOracle()
	o.Add("kept", Fix{Difficulty: 1})
	held := make([]*env.Task, 100)
	for i := range held {
		held[i] = &env.Task{ID: fmt.Sprint("held", i), File: "f", Patch: "gold"}
		o.Tie(held[i], SimFix(held[i]))
	}
	for i := range 1000 {
		d := &env.Task{ID: fmt.Sprint("dropped", i), File: "f", Patch: "gold"}
		o.Tie(d, SimFix(d))
	}
	copied := *held[70] // a copy keeps the fix as the original does
	clear(held[50:])
	held = held[:50]
	// Cleanups run on their own goroutine after a collection: wait for
	// them (a bound, not a timing).
	for i := 0; i < 200 && o.Known() > 1+50+1; i++ {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	if n := o.Known(); n != 1+50+1 {
		t.Errorf("the oracle knows %d tasks; want 52: the added one, the 50 held and the copy", n)
	}
	for _, id := range []string{"kept", "held0", "held49", "held70"} {
		if _, ok := o.Lookup(id); !ok {
			t.Errorf("the oracle forgot %s, which is still held", id)
		}
	}
	if f, ok := o.Lookup(copied.ID); !ok || f.Files[0].Content != "gold" {
		t.Errorf("the copy's fix: %+v, %v", f, ok)
	}
	for _, id := range []string{"dropped3", "held51"} {
		if _, ok := o.Lookup(id); ok {
			t.Errorf("the oracle still knows %s, which nobody holds", id)
		}
	}
	runtime.KeepAlive(held)
	runtime.KeepAlive(copied)
}
