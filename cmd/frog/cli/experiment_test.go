package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/frognano/frog/run/experiment"
)

// TestExperimentCurriculum runs a small sim experiment: every run spends
// exactly its budget of test executions, frontier's held-out rate beats
// uniform's on the same seeds, a second invocation runs nothing again, a
// further seed runs only that seed, and other settings in the same
// directory are refused.
func TestExperimentCurriculum(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "exp")
	args := []string{"experiment", "curriculum", "--strategies", "frontier,uniform", "--seeds", "2", "--budget", "6000",
		"--dir", dir, "--json", "--log-level", "disabled"}
	tab := runJSON(t, args...)
	results, err := experiment.ReadResults(dir)
	if err != nil || len(results) != 4 {
		t.Fatalf("results.jsonl: %d runs, %v; want 4", len(results), err)
	}
	final := map[string]float64{}
	for _, r := range results {
		if r.Executions != 6000 || r.Episodes != 6000 {
			t.Errorf("%s seed %d: %d test executions, %d episodes; want the budget, 6000", r.Strategy, r.Seed, r.Executions, r.Episodes)
		}
		if len(r.CurveX) != 21 || r.CurveX[20] != 6000 || r.Final != r.CurveY[20] {
			t.Errorf("%s seed %d: curve %v → %v", r.Strategy, r.Seed, r.CurveX, r.CurveY)
		}
		final[r.Strategy] += r.Final / 2
	}
	if !(final["frontier"] > final["uniform"]) {
		t.Errorf("held-out after 6000 executions: frontier %.3f, uniform %.3f", final["frontier"], final["uniform"])
	}
	rows, _ := path(tab, "strategies")
	if rs, ok := rows.([]any); !ok || len(rs) != 2 {
		t.Fatalf("table rows %v", rows)
	}
	if v, ok := path(tab, "strategies"); ok {
		front := v.([]any)[0].(map[string]any)
		if front["strategy"] != "frontier" || front["final_minus_uniform"] == nil {
			t.Errorf("frontier row %v: want its paired difference from uniform", front)
		}
	}

	runJSON(t, args...) // resumed: nothing left to run
	if again, _ := experiment.ReadResults(dir); len(again) != 4 {
		t.Errorf("a second invocation left %d runs; want the same 4", len(again))
	}
	more := append([]string(nil), args...)
	more[5] = "3" // --seeds 3
	runJSON(t, more...)
	if again, _ := experiment.ReadResults(dir); len(again) != 6 {
		t.Errorf("--seeds 3 after 2 left %d runs; want 6", len(again))
	}

	other := append([]string(nil), args...)
	other[7] = "7000" // --budget
	var out, errb bytes.Buffer
	err = Run(context.Background(), other, &out, &errb)
	var ue *UsageError
	if !errors.As(err, &ue) {
		t.Errorf("another budget in the same directory: %v; want a usage error", err)
	}
}

// TestExperimentCurriculumReal runs a tiny real experiment: the neural
// policy trained on real tasks in process sandboxes. Each run spends at
// least its budget of test executions and stops admitting there (the
// episodes running then may overshoot it by a few), the curve starts at
// the seed's initial policy (the same for both strategies), and a second
// invocation runs nothing again.
func TestExperimentCurriculumReal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	tiny, err := filepath.Abs("../../../synth/validate/testdata/tiny")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	tasks := filepath.Join(tmp, "tasks.jsonl")
	var out, errb bytes.Buffer
	if err := Run(context.Background(), []string{"synth", "--source", tiny, "--n", "4", "--out", tasks, "--min-timeout", "5s", "--log-level", "warn"}, &out, &errb); err != nil {
		t.Fatalf("synth: %v\n%s", err, errb.String())
	}
	dir := filepath.Join(tmp, "exp")
	const budget, concurrency, tries = 24, 2, 3
	args := []string{"experiment", "curriculum", "--mode", "real", "--tasks", tasks, "--heldout-tasks", tasks, "--heldout", "2",
		"--local", tiny, "--workspaces", filepath.Join(tmp, "ws"), "--strategies", "frontier,uniform", "--seeds", "1",
		"--budget", fmt.Sprint(budget), "--points", "2", "--group-size", "2", "--groups-per-update", "1", "--refill-zero-variance=false",
		"--concurrency", fmt.Sprint(concurrency), "--tries", fmt.Sprint(tries), "--eval-tries", "3", "--device", "cpu",
		"--dir", dir, "--json", "--log-level", "disabled"}
	runJSON(t, args...)
	results, err := experiment.ReadResults(dir)
	if err != nil || len(results) != 2 {
		t.Fatalf("results.jsonl: %d runs, %v; want 2", len(results), err)
	}
	// An episode runs its tests at most once a step: --tries + 12 steps
	// and the deciding run.
	most := int64(budget + concurrency*(tries+12+1))
	for _, r := range results {
		if r.Executions < budget || r.Executions > most {
			t.Errorf("%s: %d test executions; want the budget %d, overshot by at most the running episodes' (%d)", r.Strategy, r.Executions, budget, most)
		}
		if r.Updates == 0 || r.Episodes == 0 {
			t.Errorf("%s: %d updates of %d episodes; want some", r.Strategy, r.Updates, r.Episodes)
		}
		if !slices.Equal(r.CurveX, []int64{0, budget / 2, budget}) || len(r.CurveY) != 3 || r.Final != r.CurveY[2] ||
			len(r.Points) != 3 || r.Points[2].Solved != r.Final || r.Points[0].TriesPerEpisode == 0 {
			t.Errorf("%s: curve %v → %v", r.Strategy, r.CurveX, r.CurveY)
		}
	}
	if results[0].CurveY[0] != results[1].CurveY[0] {
		t.Errorf("the start of the curve differs between strategies of one seed: %v, %v", results[0].CurveY, results[1].CurveY)
	}
	var held struct {
		Tasks []string `json:"tasks"`
	}
	if data, err := os.ReadFile(filepath.Join(dir, "heldout.json")); err != nil || json.Unmarshal(data, &held) != nil || len(held.Tasks) != 2 {
		t.Errorf("heldout.json: %v %+v; want the 2 held-out tasks recorded", err, held)
	}
	runJSON(t, args...)
	if again, _ := experiment.ReadResults(dir); len(again) != 2 {
		t.Errorf("a second invocation left %d runs; want the same 2", len(again))
	}

	// With --budget-episodes the budget is the run's episodes, every one
	// charged, and the curve's points fall on them.
	const episodes = 12
	edir := filepath.Join(tmp, "exp-episodes")
	eargs := slices.Clone(args)
	eargs[slices.Index(eargs, "--budget")+1] = fmt.Sprint(episodes)
	eargs[slices.Index(eargs, "--strategies")+1] = "uniform"
	eargs[slices.Index(eargs, "--dir")+1] = edir
	if tab := runJSON(t, append(eargs, "--budget-episodes")...); tab["budget_episodes"] != true {
		t.Errorf("the table of a budget in episodes: budget_episodes %v; want it said", tab["budget_episodes"])
	}
	results, err = experiment.ReadResults(edir)
	if err != nil || len(results) != 1 {
		t.Fatalf("results.jsonl: %d runs, %v; want 1", len(results), err)
	}
	if r := results[0]; r.Episodes != episodes || r.Executions != episodes || !slices.Equal(r.CurveX, []int64{0, episodes / 2, episodes}) {
		t.Errorf("budget of %d episodes: %d episodes, %d counted, curve at %v; want the budget, its halves", episodes, r.Episodes, r.Executions, r.CurveX)
	}
}

// TestExperimentRefusesBadArms checks that an arm the experiment cannot
// read, or a start it does not know, is a usage error before anything
// runs.
func TestExperimentRefusesBadArms(t *testing.T) {
	for _, args := range [][]string{
		{"--strategies", "frontier:bogus"},
		{"--strategies", "frontier:t=0"},
		{"--strategies", "nosuch"},
		{"--mode", "real", "--tasks", "x.jsonl", "--start", "middle"},
		{"--budget-episodes"}, // sim mode
	} {
		dir := filepath.Join(t.TempDir(), "exp")
		var out, errb bytes.Buffer
		err := Run(context.Background(), append([]string{"experiment", "curriculum", "--dir", dir, "--log-level", "disabled"}, args...), &out, &errb)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v; want a usage error", args, err)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%v: the experiment directory was made", args)
		}
	}
}
