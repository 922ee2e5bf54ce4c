package neural

import (
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/policy/repair"
)

// backends are the tensor backends to run on: the CPU always, the GPU
// where one opens (a GPU that should be there but does not open fails the
// test under FROG_REQUIRE_GPU, as in cuda's own suite).
func backends(t testing.TB) map[string]cuda.Backend {
	out := map[string]cuda.Backend{"cpu": cuda.NewCPU()}
	g, err := cuda.OpenGPU(cuda.GPUOptions{})
	switch {
	case err == nil:
		out["gpu"] = g
	case os.Getenv("FROG_REQUIRE_GPU") != "":
		t.Fatalf("FROG_REQUIRE_GPU is set and the GPU backend does not open: %v", err)
	default:
		t.Logf("no GPU backend: %v", err)
	}
	return out
}

// TestUpdateAgreesAcrossBackends runs the same GRPO updates of the real
// network on every backend and compares losses and weights with the CPU's:
// within 1e-3 relative (the conformance suite's GEMM tolerance in float32,
// compounded over a few steps).
func TestUpdateAgreesAcrossBackends(t *testing.T) {
	bs := backends(t)
	if len(bs) < 2 {
		t.Skip("no GPU backend: nothing to compare the CPU's update with (FROG_REQUIRE_GPU makes a missing GPU fail)")
	}
	cfg := DefaultConfig()
	results := map[string][]float64{}
	params := map[string][]float32{}
	for name, b := range bs {
		l, err := NewLearner(b, cfg)
		if err != nil {
			t.Fatal(err)
		}
		batch := randomBatch(t, l, 64, 11, 0.2)
		w, err := l.newWork(len(batch.x)/cfg.Dims.F, len(batch.chosen))
		if err != nil {
			t.Fatal(err)
		}
		w.upload(batch)
		for range 5 {
			st, err := w.step(batch)
			if err != nil {
				t.Fatal(err)
			}
			results[name] = append(results[name], st.loss, st.entropy, st.gradNorm)
		}
		w.free()
		p := make([]float32, cfg.Dims.Params())
		if err := b.ReadFloat32(p, l.params); err != nil {
			t.Fatal(err)
		}
		params[name] = p
		l.Close()
		b.Close()
	}
	for name := range bs {
		if name == "cpu" {
			continue
		}
		for i, v := range results[name] {
			c := results["cpu"][i]
			if math.Abs(v-c) > 1e-3*math.Max(1, math.Abs(c)) {
				t.Errorf("%s: figure %d of the steps = %v, cpu %v", name, i, v, c)
			}
		}
		worst := 0.0
		for i, v := range params[name] {
			worst = math.Max(worst, math.Abs(float64(v-params["cpu"][i])))
		}
		t.Logf("%s against cpu: largest weight difference %.3g after 5 updates", name, worst)
		if worst > 1e-3 {
			t.Errorf("%s: weights differ from the cpu's by %.3g", name, worst)
		}
	}
}

// BenchmarkUpdate is one full step of the learner's update (forward,
// backward, Adam) at 256, 4,096 and 16,384 candidates in decisions of 16, on
// each backend, for the default network (64×32 hidden units) and a wide one
// (512×256, `frog train --hidden1 512 --hidden2 256`), where a GPU should
// matter.
func BenchmarkUpdate(b *testing.B) {
	nets := []struct{ h1, h2 int }{{DefaultDims.H1, DefaultDims.H2}, {512, 256}}
	bs := backends(b)
	for _, name := range []string{"cpu", "gpu"} {
		be, ok := bs[name]
		if !ok {
			continue
		}
		for _, net := range nets {
			for _, n := range []int{256, 4096, 16384} {
				b.Run(fmt.Sprintf("%s/net=%dx%d/candidates=%d", name, net.h1, net.h2, n), func(b *testing.B) {
					cfg := DefaultConfig()
					cfg.Dims = Dims{F: repair.Dim, H1: net.h1, H2: net.h2}
					l, err := NewLearner(be, cfg)
					if err != nil {
						b.Fatal(err)
					}
					defer l.Close()
					batch := fixedBatch(l, n, 16)
					w, err := l.newWork(n, len(batch.chosen))
					if err != nil {
						b.Fatal(err)
					}
					defer w.free()
					if err := w.upload(batch); err != nil {
						b.Fatal(err)
					}
					if _, err := w.step(batch); err != nil { // warm: first launches, cuBLAS's workspace
						b.Fatal(err)
					}
					b.ResetTimer()
					for range b.N {
						if _, err := w.step(batch); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "candidates/s")
				})
			}
		}
	}
}

// fixedBatch is n options in decisions of per, with sparse features.
func fixedBatch(l *Learner, n, per int) batch {
	var b batch
	b.off = []int32{0}
	F := l.cfg.Dims.F
	b.x = make([]float32, n*F)
	for i := range b.x {
		if i%3 == 0 {
			b.x[i] = float32(i%7) / 7
		}
	}
	for start := 0; start < n; start += per {
		end := min(start+per, n)
		b.off = append(b.off, int32(end))
		b.chosen = append(b.chosen, int32(start+(start/per)%(end-start)))
		b.adv = append(b.adv, float32(start%5)-2)
		b.old = append(b.old, -math.Log(float64(end-start)))
	}
	return b
}
