package cudatest

import (
	"errors"
	"math"
	"testing"

	"github.com/frognano/frog/cuda"
)

// RunClose closes b and checks that every method then returns
// cuda.ErrClosed, called with buffers that were valid before Close (so that
// a backend which checks its arguments before its state answers ErrInvalid
// and fails), and that Close is idempotent.
func RunClose(t *testing.T, b cuda.Backend) {
	t.Helper()
	alloc := func(dt cuda.DType, n int) cuda.Buffer {
		t.Helper()
		buf, err := b.Alloc(dt, n)
		if err != nil {
			t.Fatalf("Alloc: %v", err)
		}
		return buf
	}
	f, g, h, k := alloc(cuda.Float32, 4), alloc(cuda.Float32, 4), alloc(cuda.Float32, 4), alloc(cuda.Float32, 4)
	off, idx := alloc(cuda.Int32, 2), alloc(cuda.Int32, 4)
	if err := errors.Join(b.WriteInt32(off, []int32{0, 4}), b.WriteInt32(idx, []int32{0, 1, 2, 3})); err != nil {
		t.Fatalf("WriteInt32: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Alloc", func() error { _, err := b.Alloc(cuda.Float32, 4); return err }},
		{"Free", func() error { return b.Free(f) }},
		{"WriteFloat32", func() error { return b.WriteFloat32(f, []float32{1}) }},
		{"ReadFloat32", func() error { return b.ReadFloat32(make([]float32, 1), f) }},
		{"WriteInt32", func() error { return b.WriteInt32(idx, []int32{1}) }},
		{"ReadInt32", func() error { return b.ReadInt32(make([]int32, 1), idx) }},
		{"Copy", func() error { return b.Copy(f, g) }},
		{"Fill", func() error { return b.Fill(f, 1) }},
		{"Gemm", func() error { return b.Gemm(cuda.GemmOptions{M: 2, N: 2, K: 2, Alpha: 1, A: f, B: g, C: h}) }},
		{"AddBias", func() error { return b.AddBias(f, g) }},
		{"Activate", func() error { return b.Activate(cuda.ReLU, f, g) }},
		{"ActivateGrad", func() error { return b.ActivateGrad(cuda.Tanh, f, g, h) }},
		{"Softmax", func() error { return b.Softmax(cuda.SoftmaxOptions{Dst: f, Src: g, Offsets: off}) }},
		{"SoftmaxGrad", func() error {
			return b.SoftmaxGrad(cuda.SoftmaxGradOptions{DX: f, DY: g, Y: h, Offsets: off, Log: true})
		}},
		{"Gather", func() error { return b.Gather(f, g, idx, 1) }},
		{"ScatterAdd", func() error { return b.ScatterAdd(f, g, idx, 1) }},
		{"Sum", func() error { return b.Sum(cuda.SumOptions{Dst: f, Src: g, Cols: 4, Axis: cuda.Rows}) }},
		{"Adam", func() error {
			return b.Adam(cuda.AdamOptions{Params: f, Grads: g, M: h, V: k, LR: 1, Beta1: 0.9, Beta2: 0.999, Step: 1})
		}},
	} {
		if err := tc.call(); !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", tc.name, err)
		}
	}
}

// RunReopen opens a backend with open, computes on it, closes it, and does
// so three times in one process (the GPU backend releases and retains the
// device's primary context, reloads its kernels and recreates its cuBLAS
// handle each time). A buffer of a closed backend is foreign to the next.
func RunReopen(t *testing.T, open func() (cuda.Backend, error)) {
	t.Helper()
	var prev cuda.Backend
	var prevBuf cuda.Buffer
	for round := range 3 {
		b, err := open()
		if err != nil {
			t.Fatalf("open %d: %v", round+1, err)
		}
		if prev != nil {
			if _, err := prev.Alloc(cuda.Float32, 1); !errors.Is(err, cuda.ErrClosed) {
				t.Errorf("round %d: the backend closed before answers %v, want ErrClosed", round+1, err)
			}
			if err := b.Fill(prevBuf, 1); !errors.Is(err, cuda.ErrInvalid) {
				t.Errorf("round %d: a buffer of the closed backend: %v, want ErrInvalid", round+1, err)
			}
		}
		// x·w then ReLU then log-softmax over two segments: GEMM, a kernel
		// and a read.
		x, err := b.Alloc(cuda.Float32, 6)
		if err != nil {
			t.Fatalf("round %d: Alloc: %v", round+1, err)
		}
		w, y, ly := mustAlloc(t, b, 2), mustAlloc(t, b, 3), mustAlloc(t, b, 3)
		off, err := b.Alloc(cuda.Int32, 3)
		must(t, "Alloc", err)
		must(t, "write", errors.Join(
			b.WriteFloat32(x, []float32{1, 2, 3, -4, -5, 6}),
			b.WriteFloat32(w, []float32{1, float32(round + 1)}),
			b.WriteInt32(off, []int32{0, 1, 3}),
		))
		must(t, "Gemm", b.Gemm(cuda.GemmOptions{M: 3, N: 1, K: 2, Alpha: 1, A: x, B: w, C: y}))
		must(t, "Activate", b.Activate(cuda.ReLU, y, y))
		must(t, "Softmax", b.Softmax(cuda.SoftmaxOptions{Dst: ly, Src: y, Offsets: off, Log: true}))
		got := make([]float32, 3)
		must(t, "read", b.ReadFloat32(got, ly))
		k := float64(round + 1)
		z := []float64{max(1+2*k, 0), max(3-4*k, 0), max(-5+6*k, 0)}
		want := []float64{0, z[1] - math.Log(math.Exp(z[1])+math.Exp(z[2])), z[2] - math.Log(math.Exp(z[1])+math.Exp(z[2]))}
		for i := range got {
			if math.Abs(float64(got[i])-want[i]) > 1e-5 {
				t.Errorf("round %d: result[%d] = %g, want %g", round+1, i, got[i], want[i])
			}
		}
		if err := b.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round+1, err)
		}
		prev, prevBuf = b, x
	}
}

func mustAlloc(t *testing.T, b cuda.Backend, n int) cuda.Buffer {
	t.Helper()
	buf, err := b.Alloc(cuda.Float32, n)
	must(t, "Alloc", err)
	return buf
}
