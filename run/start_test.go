package run

import (
	"path/filepath"
	"testing"

	"github.com/frognano/frog/actors"
	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/policy/neural"
	"github.com/frognano/frog/policy/repair"
)

// TestCheckpointSaysItsStart saves a learner of each start as a run's
// checkpoint and loads it back: the checkpoint says the start, and its
// policy is the network of that start.
func TestCheckpointSaysItsStart(t *testing.T) {
	for _, start := range neural.Starts {
		t.Run(start, func(t *testing.T) {
			cfg, err := neural.StartConfig(start)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Dims = neural.Dims{F: repair.Dim, H1: 8, H2: 4}
			l, err := neural.NewLearner(cuda.NewCPU(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			blob, err := l.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := NewCheckpoints(filepath.Join(dir, "checkpoints"), 3).Save(actors.Checkpoint{Progress: actors.Progress{Version: 1}, Learner: blob}); err != nil {
				t.Fatal(err)
			}
			ck, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ck.Start()
			if err != nil || got != start {
				t.Errorf("start %q (%v); want %q", got, err, start)
			}
			p, err := ck.Policy()
			if err != nil {
				t.Fatal(err)
			}
			want := neural.Init(cfg.Dims, cfg.Seed, start == neural.StartPrior)
			for i := range want {
				if p.Params[i] != want[i] {
					t.Fatalf("parameter %d: %v, want %v (Init of the %s start)", i, p.Params[i], want[i], start)
				}
			}
		})
	}
	if _, err := (Loaded{File: "x", Checkpoint: actors.Checkpoint{Learner: []byte("{}")}}).Start(); err == nil {
		t.Error("a learner blob that is no checkpoint: no error")
	}
}
