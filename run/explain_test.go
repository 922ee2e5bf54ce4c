package run

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/env"
	"github.com/frognano/frog/policy/neural"
)

// TestExplainReadsARun writes a run's checkpoint and trajectory shards as
// frog train does and weighs the network over the decisions recorded there:
// the latest ones, at most the number asked for, of the built-in policy's
// kind only, skipping a torn last line.
func TestExplainReadsARun(t *testing.T) {
	dir := t.TempDir()
	lr, err := neural.NewLearner(cuda.NewCPU(), neural.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	data, err := lr.Checkpoint()
	lr.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := NewCheckpoints(filepath.Join(dir, "checkpoints"), 2).Save(actors.Checkpoint{Progress: actors.Progress{Version: 7}, Learner: data}); err != nil {
		t.Fatal(err)
	}
	shards, err := NewShards(filepath.Join(dir, "trajectories"), 30)
	if err != nil {
		t.Fatal(err)
	}
	d := neural.DefaultDims.F
	const records = 40
	for i := range records {
		x := make([]float32, 2*d)
		x[i%d] = 1
		steps := []env.Step{
			{Action: env.Action{Tool: env.ToolTry, Decision: &env.Decision{Kind: neural.Kind, Features: x, Dim: d}}},
			{Action: env.Action{Tool: env.ToolTry, Decision: &env.Decision{Kind: "other", Features: x, Dim: d}}},
		}
		// Long lines, as real records are (a step's reports): a reader that
		// kept a scanner's buffer across lines read them clobbered.
		shards.Write(map[string]any{"episode": i, "steps": steps, "pad": strings.Repeat("x", 100<<10)})
	}
	if err := shards.Close(); err != nil {
		t.Fatal(err)
	}
	ex, err := Explain(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Version != 7 || ex.Decisions != 3 || len(ex.Weights) != d || !strings.HasSuffix(ex.Checkpoint, ".json") {
		t.Errorf("explanation of version %d over %d decisions, %d weights, from %q: want version 7, 3 decisions, %d weights", ex.Version, ex.Decisions, len(ex.Weights), ex.Checkpoint, d)
	}
	for _, w := range ex.Weights {
		if want := neural.Prior[w.Feature]; w.Start != want || w.Wide != want {
			t.Errorf("%s: linear weight %v from %v, want the prior's %v (an untrained network)", w.Feature, w.Wide, w.Start, want)
		}
	}
	decs, err := Decisions(filepath.Join(dir, "trajectories"), neural.Kind, 100)
	if err != nil || len(decs) != records {
		t.Fatalf("Decisions: %d, %v: want the %d of the built-in policy", len(decs), err, records)
	}
	for i, dec := range decs {
		if r := records - 1 - i; dec.Features[r%d] != 1 {
			t.Fatalf("decision %d is not record %d's: Decisions gives the latest first, each read whole", i, r)
		}
	}
	if _, err := Explain(t.TempDir(), 3); err == nil {
		t.Error("Explain of a directory with no checkpoint: no error")
	}
}
