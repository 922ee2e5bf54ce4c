package actors

import (
	"context"
	"testing"
)

// benchPipeline runs b.N episodes at concurrency 1000 through run and reports
// episodes/s. Compare the two with benchstat; `frog bench` does it at scale.
func benchPipeline(b *testing.B, run func(context.Context, Config, Deps) (Summary, error)) {
	deps, _, _ := simDeps(b, simSetup{seed: 1})
	cfg := testConfig(int64(max(b.N, 1000)), 1000)
	b.ResetTimer()
	sum, err := run(context.Background(), cfg, deps)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(sum.EpisodesPerSecond, "episodes/s")
}

func BenchmarkActors(b *testing.B)   { benchPipeline(b, Run) }
func BenchmarkBaseline(b *testing.B) { benchPipeline(b, RunBaseline) }

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
