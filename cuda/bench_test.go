package cuda_test

import (
	"fmt"
	"testing"

	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/cuda/cudatest"
)

// benchBackends returns the CPU backend and, where one opens, the GPU
// backend, each with a short name; the caller closes them.
func benchBackends(b *testing.B) map[string]cuda.Backend {
	bs := map[string]cuda.Backend{"cpu": cuda.NewCPU()}
	if g, err := cuda.OpenGPU(cuda.GPUOptions{}); err == nil {
		bs["cuda"] = g
	} else {
		b.Logf("GPU benchmarks skipped: %v", err)
	}
	return bs
}

func closeAll(bs map[string]cuda.Backend) {
	for _, be := range bs {
		be.Close()
	}
}

// BenchmarkGemm reports GEMM GFLOP/s at the learner's shapes (candidates ×
// hidden × features) and at large squares: 2048³ on both backends, 8192³ on
// the GPU only.
func BenchmarkGemm(b *testing.B) {
	bs := benchBackends(b)
	defer closeAll(bs)
	for _, kind := range []string{"cpu", "cuda"} {
		be, ok := bs[kind]
		if !ok {
			continue
		}
		for _, sh := range []struct {
			m, n, k int
			gpuOnly bool
		}{
			{4096, 64, 64, false},
			{16384, 64, 64, false},
			{2048, 2048, 2048, false},
			{8192, 8192, 8192, true},
		} {
			if sh.gpuOnly && kind != "cuda" {
				continue
			}
			b.Run(fmt.Sprintf("%s/%dx%dx%d", kind, sh.m, sh.n, sh.k), func(b *testing.B) {
				benchGemm(b, be, sh.m, sh.n, sh.k)
			})
		}
	}
}

func benchGemm(b *testing.B, be cuda.Backend, m, n, k int) {
	alloc := func(size int) cuda.Buffer {
		buf, err := be.Alloc(cuda.Float32, size)
		if err != nil {
			b.Fatal(err)
		}
		if err := be.Fill(buf, 0.5); err != nil {
			b.Fatal(err)
		}
		return buf
	}
	a, bm, c := alloc(m*k), alloc(k*n), alloc(m*n)
	defer func() { be.Free(a); be.Free(bm); be.Free(c) }()
	o := cuda.GemmOptions{M: m, N: n, K: k, Alpha: 1, A: a, B: bm, C: c}
	sync := make([]float32, 1)
	if err := be.Gemm(o); err != nil { // warm up (cuBLAS picks its kernels)
		b.Fatal(err)
	}
	if err := be.ReadFloat32(sync, c); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N { // not b.Loop: the timer must run until the read below
		if err := be.Gemm(o); err != nil {
			b.Fatal(err)
		}
	}
	if err := be.ReadFloat32(sync, c); err != nil { // wait for the GPU
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if err := checkGemmResult(be, c, m, n, k); err != nil {
		b.Fatal(err) // a fast wrong GEMM is no figure
	}
}

// checkGemmResult checks the C of benchGemm: A and B hold 0.5, so every
// element of C = A·B is 0.25·k, exactly (every partial sum is a multiple of
// 0.25 below 2²⁴ in float32, in any order).
func checkGemmResult(be cuda.Backend, c cuda.Buffer, m, n, k int) error {
	got := make([]float32, m*n)
	if err := be.ReadFloat32(got, c); err != nil {
		return err
	}
	want := float32(0.25 * float64(k))
	bad := 0
	first := -1
	for i, v := range got {
		if v != want {
			if bad++; first < 0 {
				first = i
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("gemm %dx%dx%d: %d of %d elements wrong, C[%d, %d] = %g, want %g",
			m, n, k, bad, len(got), first/n, first%n, got[first], want)
	}
	return nil
}

// TestGemmBenchmarkChecks checks that the GEMM benchmark rejects a wrong
// product (one that drops the last of k terms) and accepts a right one.
func TestGemmBenchmarkChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		be   cuda.Backend
		ok   bool
	}{
		{"cpu", cuda.NewCPU(), true},
		{"k off by one", &shortGemm{CPU: cuda.NewCPU()}, false},
	} {
		defer tc.be.Close()
		r := testing.Benchmark(func(b *testing.B) { benchGemm(b, tc.be, 33, 17, 64) })
		if ran := r.N > 0; ran != tc.ok { // a benchmark that failed reports N = 0
			t.Errorf("%s: benchmark ran %d times, want it to %s", tc.name, r.N, map[bool]string{true: "pass", false: "fail"}[tc.ok])
		}
	}
}

// shortGemm sums k−1 of the k terms of a product.
type shortGemm struct{ *cuda.CPU }

func (c *shortGemm) Gemm(o cuda.GemmOptions) error {
	if o.K > 1 {
		o.K--
	}
	return c.CPU.Gemm(o)
}

// BenchmarkUpdate times one full update of the ranking network of
// cudatest.Ranker (64 features, 64 hidden units, 16 candidates a decision)
// at batch sizes from 256 to 16,384 candidates.
func BenchmarkUpdate(b *testing.B) {
	bs := benchBackends(b)
	defer closeAll(bs)
	for _, kind := range []string{"cpu", "cuda"} {
		be, ok := bs[kind]
		if !ok {
			continue
		}
		for _, n := range []int{256, 1024, 4096, 16384} {
			b.Run(fmt.Sprintf("%s/candidates=%d", kind, n), func(b *testing.B) {
				r, err := cudatest.NewRanker(be, cudatest.RankerConfig{Candidates: n, Features: 64, Hidden: 64, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				if _, err := r.Step(); err != nil { // warm: first launches, cuBLAS's choice of kernels
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := r.Step(); err != nil { // Step reads the loss back: it waits for the GPU
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "candidates/s")
			})
		}
	}
}

// BenchmarkCallOverhead is what one backend call costs beyond its
// arithmetic: a Fill of one element (on the GPU a kernel launch, handed to
// the backend's CUDA thread) and a ReadFloat32 of one element (on the GPU a
// launch's worth of hand-off plus a wait for the device and a copy back).
// A learner's step makes about 35 calls and 3 reads: at small batches this
// is its time.
func BenchmarkCallOverhead(b *testing.B) {
	bs := benchBackends(b)
	defer closeAll(bs)
	for _, kind := range []string{"cpu", "cuda"} {
		be, ok := bs[kind]
		if !ok {
			continue
		}
		buf, err := be.Alloc(cuda.Float32, 1)
		if err != nil {
			b.Fatal(err)
		}
		one := make([]float32, 1)
		const calls = 1000 // an op is this many calls (and one read after the fills)
		b.Run(kind+"/fill-1", func(b *testing.B) {
			if err := be.Fill(buf, 1); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				for range calls {
					if err := be.Fill(buf, 1); err != nil {
						b.Fatal(err)
					}
				}
				if err := be.ReadFloat32(one, buf); err != nil { // the launches done
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*calls), "ns/call")
		})
		b.Run(kind+"/read-1", func(b *testing.B) {
			for b.Loop() {
				for range calls {
					if err := be.ReadFloat32(one, buf); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*calls), "ns/call")
		})
		be.Free(buf)
	}
}
