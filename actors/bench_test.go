package actors

import (
	"context"
	"testing"

	"github.com/frognano/frog/curriculum"
)

// benchPipeline runs b.N episodes (at least 1000) at concurrency 1000
// through run and reports episodes/s and, per episode, the bytes and
// allocations of the whole pipeline (B/op and allocs/op: one op is one
// episode). Compare revisions with benchstat; `frog bench` and `frog sim
// --episodes 200000 --concurrency 10000 --time-scale 0` do it at scale.
// Bytes per episode tracks what a simulated run costs in GC and peak
// memory (docs/actors.md has the figures).
func benchPipeline(b *testing.B, run func(context.Context, Config, Deps) (Summary, error), s simSetup) {
	deps, _, _ := simDeps(b, s)
	cfg := testConfig(int64(max(b.N, 1000)), 1000)
	b.ReportAllocs()
	b.ResetTimer()
	sum, err := run(context.Background(), cfg, deps)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(sum.EpisodesPerSecond, "episodes/s")
}

func BenchmarkActors(b *testing.B)   { benchPipeline(b, Run, simSetup{seed: 1}) }
func BenchmarkBaseline(b *testing.B) { benchPipeline(b, RunBaseline, simSetup{seed: 1}) }

// BenchmarkActorsFrontier is BenchmarkActors under frog sim's default
// curriculum (the frontier replay strategy).
func BenchmarkActorsFrontier(b *testing.B) {
	cfg := curriculum.DefaultReplayConfig()
	cfg.Seed = 1
	cur, err := curriculum.NewReplay(cfg)
	if err != nil {
		b.Fatal(err)
	}
	benchPipeline(b, Run, simSetup{seed: 1, curriculum: cur})
}

func TestBaselineAccounts(t *testing.T) {
	deps, _, _ := simDeps(t, simSetup{seed: 1, faultRate: 0.2})
	sum, err := RunBaseline(context.Background(), testConfig(3000, 100), deps)
	if err != nil {
		t.Fatal(err)
	}
	if e := sum.Episodes; !e.Accounted || e.Admitted != 3000 || e.Retries == 0 {
		t.Errorf("baseline: %+v", e)
	}
}
