package cuda_test

import (
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/cuda/cudatest"
)

// large sizes the conformance suite's grid cases past one GPU launch
// (cudatest.Options.Large) on the CPU backend too; gpu-check sets it. The
// GPU backend runs them at full size always.
var large = flag.Bool("cuda.large", false, "run the CPU backend's grid cases at full size (slow with -race)")

func TestCPUConformance(t *testing.T) {
	b := cuda.NewCPU()
	defer b.Close()
	cudatest.Run(t, b, cudatest.Options{Large: *large})
}

func TestCPUClose(t *testing.T) {
	cudatest.RunClose(t, cuda.NewCPU())
}

func TestCPUReopen(t *testing.T) {
	cudatest.RunReopen(t, func() (cuda.Backend, error) { return cuda.NewCPU(), nil })
}

// openGPU opens the GPU backend with a test's own kernel cache, or skips.
func openGPU(t *testing.T) cuda.Backend {
	t.Helper()
	g, err := cuda.OpenGPU(cuda.GPUOptions{CacheDir: t.TempDir()})
	if err != nil {
		cuda.RequireGPU(t, err)
	}
	return g
}

func TestGPUConformance(t *testing.T) {
	g := openGPU(t)
	defer g.Close()
	cudatest.Run(t, g, cudatest.Options{Large: true})
}

func TestGPUClose(t *testing.T) {
	cudatest.RunClose(t, openGPU(t))
}

func TestGPUReopen(t *testing.T) {
	openGPU(t).Close()
	dir := t.TempDir()
	cudatest.RunReopen(t, func() (cuda.Backend, error) { return cuda.OpenGPU(cuda.GPUOptions{CacheDir: dir}) })
}

func TestGPUUnavailable(t *testing.T) {
	g, err := cuda.OpenGPU(cuda.GPUOptions{NoCache: true})
	if err == nil {
		g.Close()
		t.Skip("a GPU opened here")
	}
	if !errors.Is(err, cuda.ErrUnavailable) {
		t.Errorf("OpenGPU error %v does not wrap ErrUnavailable", err)
	}
	t.Logf("OpenGPU: %v", err)
}

func TestOpen(t *testing.T) {
	g, gpuErr := cuda.OpenGPU(cuda.GPUOptions{NoCache: true})
	haveGPU := gpuErr == nil
	if haveGPU {
		g.Close()
	}
	for _, tc := range []struct {
		kind        string
		wantErr     error
		wantCPU     bool // the backend is the CPU one
		wantWhyText string
	}{
		{kind: "cpu", wantCPU: true, wantWhyText: "--device cpu"},
		{kind: "auto", wantCPU: !haveGPU, wantWhyText: map[bool]string{true: "GPU found", false: "no usable GPU: "}[haveGPU]},
		{kind: "", wantCPU: !haveGPU},
		{kind: "cuda", wantErr: map[bool]error{true: nil, false: cuda.ErrUnavailable}[haveGPU]},
		{kind: "tpu", wantErr: cuda.ErrInvalid},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			b, why, err := cuda.Open(tc.kind)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Open(%q) error %v, want %v", tc.kind, err, tc.wantErr)
				}
				t.Logf("Open(%q): %v", tc.kind, err)
				return
			}
			if err != nil {
				t.Fatalf("Open(%q): %v", tc.kind, err)
			}
			defer b.Close()
			_, isCPU := b.(*cuda.CPU)
			if isCPU != tc.wantCPU {
				t.Errorf("Open(%q) = %s, want CPU %v", tc.kind, b.Name(), tc.wantCPU)
			}
			if !strings.Contains(why, tc.wantWhyText) {
				t.Errorf("Open(%q) why = %q, want it to contain %q", tc.kind, why, tc.wantWhyText)
			}
			t.Logf("Open(%q) = %s because %s", tc.kind, b.Name(), why)
		})
	}
}

// TestCPUChecksContents covers what only the CPU backend checks: the
// contents of index and offset buffers.
func TestCPUChecksContents(t *testing.T) {
	b := cuda.NewCPU()
	defer b.Close()
	alloc := func(dt cuda.DType, n int) cuda.Buffer {
		buf, err := b.Alloc(dt, n)
		if err != nil {
			t.Fatal(err)
		}
		return buf
	}
	f := alloc(cuda.Float32, 6)
	ints := func(v ...int32) cuda.Buffer {
		buf := alloc(cuda.Int32, len(v))
		if err := b.WriteInt32(buf, v); err != nil {
			t.Fatal(err)
		}
		return buf
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"gather index out of range", func() error { return b.Gather(alloc(cuda.Float32, 2), f, ints(0, 6), 1) }},
		{"gather negative index", func() error { return b.Gather(alloc(cuda.Float32, 2), f, ints(-1, 0), 1) }},
		{"scatter index out of range", func() error { return b.ScatterAdd(f, alloc(cuda.Float32, 3), ints(3), 3) }},
		{"offsets not from 0", func() error { return b.Softmax(cuda.SoftmaxOptions{Dst: f, Src: f, Offsets: ints(1, 6)}) }},
		{"offsets not to n", func() error { return b.Softmax(cuda.SoftmaxOptions{Dst: f, Src: f, Offsets: ints(0, 5)}) }},
		{"offsets decrease", func() error {
			return b.SoftmaxGrad(cuda.SoftmaxGradOptions{DX: f, DY: f, Y: f, Offsets: ints(0, 4, 2, 6)})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, cuda.ErrInvalid) {
				t.Errorf("got %v, want an error wrapping ErrInvalid", err)
			}
		})
	}
}
