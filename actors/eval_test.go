package actors

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	envsim "github.com/frognano/frog/env/sim"
	policysim "github.com/frognano/frog/policy/sim"
	"github.com/frognano/frog/synth"
	synthsim "github.com/frognano/frog/synth/sim"
)

func TestEvaluate(t *testing.T) {
	prov, err := envsim.New(envsim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	oracle := policysim.NewOracle()
	var tasks []EvalTask
	for i := range 40 {
		task := env.Task{ID: fmt.Sprint("t", i), File: "f.go", Patch: "fixed", Difficulty: float64(i%2) * 100, TestCmd: []string{"go", "test"}}
		oracle.Add(task.ID, policysim.SimFix(&task))
		tasks = append(tasks, EvalTask{Task: task, Module: fmt.Sprint("m", i%4), Family: "token", K: 1 + i%2})
	}
	cfg := EvalConfig{Run: testConfig(0, 8), Tasks: tasks, Samples: 3}
	rep, err := Evaluate(context.Background(), cfg, policysim.Policy{Skill: 10, Seed: 1, Oracle: oracle}, Deps{Provider: prov})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Episodes != 120 || rep.Summary.Episodes.Admitted != 120 || !rep.Summary.Episodes.Accounted {
		t.Fatalf("episodes %d, summary %+v", rep.Episodes, rep.Summary.Episodes)
	}
	// Even tasks are easy (difficulty 0, skill 10), odd ones hopeless.
	if rep.Solved.K < 50 || rep.Solved.K > 61 || !(rep.Solved.Lo < rep.Solved.Rate && rep.Solved.Rate < rep.Solved.Hi) {
		t.Errorf("solved %+v; want about half, inside its interval", rep.Solved)
	}
	if len(rep.ByModule) != 4 || len(rep.ByK) != 2 || rep.ByK[1].K != 0 {
		t.Errorf("groups: modules %+v, k %+v; want 4 modules and k=2 never solved", rep.ByModule, rep.ByK)
	}
}

// submitter submits at once: an evaluation's episodes then end at their
// first step.
type submitter struct{}

func (submitter) Act(ctx context.Context, obs []env.Observation, acts []env.Action) error {
	for i := range obs {
		acts[i] = env.Action{Tool: env.ToolSubmit}
	}
	return nil
}

// TestEvaluateWholeRefusesACutShortEvaluation: a whole evaluation is a
// report of every task; one whose context is cancelled is an error, where
// Evaluate would report the tasks that finished.
func TestEvaluateWholeRefusesACutShortEvaluation(t *testing.T) {
	sp, err := envsim.New(envsim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := synthsim.NewHeldout(1, 1, 0).TasksFor(context.Background(), 8, synth.Knobs{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := EvalConfig{Run: DefaultConfig()}
	cfg.Run.Concurrency = 2
	for _, task := range tasks {
		cfg.Tasks = append(cfg.Tasks, EvalTask{Task: task})
	}
	deps := Deps{Provider: sp, Log: zerolog.Nop()}
	rep, err := EvaluateWhole(context.Background(), cfg, submitter{}, deps)
	if err != nil || rep.Outcomes.Completed != len(tasks) {
		t.Fatalf("a whole evaluation: %v, %d of %d completed", err, rep.Outcomes.Completed, len(tasks))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := EvaluateWhole(ctx, cfg, submitter{}, deps); !errors.Is(err, context.Canceled) {
		t.Errorf("an evaluation cut short: %v; want context.Canceled", err)
	}
}
