package cli

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
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
	results, err := readResults(dir)
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
	if again, _ := readResults(dir); len(again) != 4 {
		t.Errorf("a second invocation left %d runs; want the same 4", len(again))
	}
	more := append([]string(nil), args...)
	more[5] = "3" // --seeds 3
	runJSON(t, more...)
	if again, _ := readResults(dir); len(again) != 6 {
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
