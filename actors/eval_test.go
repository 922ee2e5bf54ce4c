package actors

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/frognano/frog/env"
	envsim "github.com/frognano/frog/env/sim"
	"github.com/frognano/frog/policy"
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
	samples := map[int]int{}
	for _, f := range rep.FirstSolves {
		samples[f.Sample]++
	}
	if diff := cmp.Diff(samples, map[int]int{0: 40, 1: 40, 2: 40}); diff != "" {
		t.Errorf("first solves by sample (-got +want):\n%s", diff)
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

// simEvaluation is an evaluation of n simulated held-out tasks, two
// episodes at once, and the simulated provider that plays them.
func simEvaluation(t *testing.T, n int) (*envsim.Provider, EvalConfig) {
	t.Helper()
	sp, err := envsim.New(envsim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := synthsim.NewHeldout(1, 1, 0).TasksFor(context.Background(), n, synth.Knobs{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := EvalConfig{Run: DefaultConfig()}
	cfg.Run.Concurrency = 2
	for _, task := range tasks {
		cfg.Tasks = append(cfg.Tasks, EvalTask{Task: task})
	}
	return sp, cfg
}

// TestEvaluateWholeRefusesACutShortEvaluation: a whole evaluation is a
// report of every task; one whose context is cancelled is an error, where
// Evaluate would report the tasks that finished.
func TestEvaluateWholeRefusesACutShortEvaluation(t *testing.T) {
	sp, cfg := simEvaluation(t, 8)
	tasks := cfg.Tasks
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

// TestEvaluateReportsWhatACutShortEvaluationScored: cancelled midway,
// Evaluate reports the episodes that completed, marked as interrupted,
// and counts every episode it leaves out.
func TestEvaluateReportsWhatACutShortEvaluationScored(t *testing.T) {
	sp, cfg := simEvaluation(t, 64)
	tasks := cfg.Tasks
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen atomic.Int32
	deps := Deps{Provider: sp, Log: zerolog.Nop(), OnEpisode: func(*EpisodeResult) {
		if seen.Add(1) == 3 {
			cancel()
		}
	}}
	rep, err := Evaluate(ctx, cfg, submitter{}, deps)
	if err != nil {
		t.Fatal(err)
	}
	o := rep.Outcomes
	if !rep.Interrupted || o.Completed < 3 || o.Completed+o.FailedInfra+o.Cancelled+o.Unplayed != len(tasks) || o.Unplayed == 0 {
		t.Errorf("interrupted %v, outcomes %+v; want marked, at least 3 scored and all %d counted", rep.Interrupted, o, len(tasks))
	}
	if rep.Solved.N != o.Completed || len(rep.FirstSolves) != o.Completed {
		t.Errorf("solved over %d episodes, %d first solves; want the %d completed", rep.Solved.N, len(rep.FirstSolves), o.Completed)
	}
	whole, err := Evaluate(context.Background(), cfg, submitter{}, Deps{Provider: sp, Log: zerolog.Nop()})
	if err != nil || whole.Interrupted || whole.Outcomes.Unplayed != 0 {
		t.Errorf("a whole evaluation: %v, interrupted %v, unplayed %d", err, whole.Interrupted, whole.Outcomes.Unplayed)
	}
}

// TestTallyRanks checks what an evaluation makes of its episodes' first
// solves: within 1, 3 and 10 tries, the mean reciprocal rank, the same per
// family, and the episodes it leaves out (an infrastructure failure).
func TestTallyRanks(t *testing.T) {
	byID := map[string]*EvalTask{}
	for i, fam := range []string{"token", "token", "stmt", "stmt", "stmt", "stmt"} {
		id := fmt.Sprint("t", i)
		byID[id] = &EvalTask{Task: env.Task{ID: id}, Module: "m", Family: fam, K: 1}
	}
	ep := func(episode uint64, id string, kind OutcomeKind, reward float64, tries int) EpisodeResult {
		r := EpisodeResult{Episode: episode, Task: &byID[id].Task, Kind: kind}
		if kind == Completed {
			r.Trajectory = &env.Trajectory{Reward: reward, Tries: tries}
		}
		return r
	}
	results := []EpisodeResult{ // out of order: tally numbers samples by episode
		ep(6, "t5", FailedInfra, 0, 0),
		ep(5, "t4", Completed, 1, 0), // solved by an edit of its own: rank 1
		ep(4, "t3", Completed, 0, 10),
		ep(3, "t2", Completed, 1, 5),
		ep(2, "t1", Completed, 1, 3),
		ep(1, "t0", Completed, 1, 1),
	}
	var r EvalReport
	r.tally(results, byID, DefaultMarks)
	within := func(g []RateAt) []int {
		var ks []int
		for _, a := range g {
			ks = append(ks, a.K)
		}
		return ks
	}
	if r.Episodes != 5 || r.Outcomes.FailedInfra != 1 || r.Solved.K != 4 || r.Solved.N != 5 {
		t.Errorf("episodes %d, infra %d, solved %d/%d; want 5, 1, 4/5", r.Episodes, r.Outcomes.FailedInfra, r.Solved.K, r.Solved.N)
	}
	if diff := cmp.Diff(within(r.AtTries), []int{2, 3, 4}); diff != "" {
		t.Errorf("solved within 1, 3, 10 tries (-got +want):\n%s", diff)
	}
	if want := (1 + 1.0/3 + 1.0/5 + 0 + 1) / 5; math.Abs(r.MRR.Mean-want) > 1e-12 || r.MRR.N != 5 || !(r.MRR.Lo < want && want < r.MRR.Hi) {
		t.Errorf("MRR %+v; want %.4f inside its interval", r.MRR, want)
	}
	if len(r.ByFamily) != 2 {
		t.Fatalf("families %+v; want stmt and token", r.ByFamily)
	}
	stmt, token := r.ByFamily[0], r.ByFamily[1]
	if stmt.Key != "stmt" || stmt.K != 2 || stmt.N != 3 || math.Abs(stmt.MRR.Mean-0.4) > 1e-12 {
		t.Errorf("stmt %+v; want 2/3 solved, MRR 0.4", stmt)
	}
	if diff := cmp.Diff(within(stmt.AtTries), []int{1, 1, 2}); diff != "" {
		t.Errorf("stmt within 1, 3, 10 tries (-got +want):\n%s", diff)
	}
	if token.Key != "token" || token.K != 2 || math.Abs(token.MRR.Mean-2.0/3) > 1e-12 {
		t.Errorf("token %+v; want 2/2 solved, MRR 2/3", token)
	}
	want := []FirstSolve{{"t0", 0, 1}, {"t1", 0, 3}, {"t2", 0, 5}, {"t3", 0, 0}, {"t4", 0, 1}}
	if diff := cmp.Diff(r.FirstSolves, want); diff != "" {
		t.Errorf("first solves (-got +want):\n%s", diff)
	}
}

// TestCompare pairs two evaluations' episodes by task and sample and
// counts the discordant pairs at each mark.
func TestCompare(t *testing.T) {
	a := EvalReport{Policy: "a"}
	b := EvalReport{Policy: "b"}
	// Ten tasks: a solves each at the first try; b solves t0 at try 2 and
	// nothing else. t9 was an infrastructure failure for b: not a pair.
	for i := range 10 {
		id := fmt.Sprint("t", i)
		a.FirstSolves = append(a.FirstSolves, FirstSolve{Task: id, Rank: 1})
		switch i {
		case 0:
			b.FirstSolves = append(b.FirstSolves, FirstSolve{Task: id, Rank: 2})
		case 9:
		default:
			b.FirstSolves = append(b.FirstSolves, FirstSolve{Task: id, Rank: 0})
		}
	}
	// A task only b played.
	b.FirstSolves = append(b.FirstSolves, FirstSolve{Task: "x", Rank: 1})
	got := Compare(a, b, []int{1, 3})
	want := Comparison{A: "a", B: "b", AtTries: []Paired{
		{Tries: 1, Pairs: 9, AOnly: 9, P: policy.McNemar(9, 0)},
		{Tries: 3, Pairs: 9, Both: 1, AOnly: 8, P: policy.McNemar(8, 0)},
	}}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Compare (-got +want):\n%s", diff)
	}
	if got.AtTries[0].P > 0.01 || got.AtTries[1].P > 0.01 {
		t.Errorf("p %v, %v; want < 0.01 for 9-0 and 8-0", got.AtTries[0].P, got.AtTries[1].P)
	}
	// Two samples of a task: the pairs are not independent.
	a.FirstSolves = append(a.FirstSolves, FirstSolve{Task: "x", Sample: 1, Rank: 1})
	b.FirstSolves = append(b.FirstSolves, FirstSolve{Task: "x", Sample: 1, Rank: 1})
	if !Compare(a, b, []int{1}).Approximate {
		t.Error("pairs from a task's second sample: want Approximate")
	}
}
