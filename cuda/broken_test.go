package cuda_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/frognano/frog/cuda"
	"github.com/frognano/frog/cuda/cudatest"
)

// The conformance suite is itself tested, as gonum's testblas is: each
// backend below is the CPU backend with one deliberate fault, the kind a
// wrong kernel would have, and TestSuiteCatchesBrokenBackends checks that
// the suite fails on it in the cases meant to catch it (and, where an older
// case missed the fault, that this case still passes: the new case is what
// catches it). Each runs in a child process, since a failing test cannot be
// observed from inside the test binary that runs it.

const brokenEnv = "FROG_BROKEN_BACKEND"

type brokenCase struct {
	name string
	open func() cuda.Backend
	// run runs the part of the suite that must catch the fault; nil means
	// cudatest.Run.
	run func(t *testing.T, b cuda.Backend)
	// subtests selects cudatest.Run's subtests (a -test.run element).
	subtests string
	// fail are the subtests (of TestBrokenBackend, "" for itself) that
	// must fail, pass those that must pass.
	fail, pass []string
}

func brokenCases() []brokenCase {
	cap := cudatest.SmallGridElements / 2
	if *large {
		cap = 65536 * 256 // one launch of 65,536 blocks of 256 threads
	}
	return []brokenCase{
		{
			name:     "softmax without the max subtraction",
			open:     func() cuda.Backend { return &noMaxSoftmax{CPU: cuda.NewCPU()} },
			subtests: "softmax|softmax_extremes",
			fail:     []string{"/softmax_extremes"},
			pass:     []string{"/softmax"},
		},
		{
			name:     "log-softmax as the log of the softmax",
			open:     func() cuda.Backend { return &logOfSoftmax{CPU: cuda.NewCPU()} },
			subtests: "softmax|softmax_extremes",
			fail:     []string{"/softmax_extremes"},
			pass:     []string{"/softmax"},
		},
		{
			name:     "log-softmax clamped to the lowest float32",
			open:     func() cuda.Backend { return &clampedLogSoftmax{CPU: cuda.NewCPU()} },
			subtests: "softmax|softmax_extremes",
			fail:     []string{"/softmax_extremes"},
			pass:     []string{"/softmax"},
		},
		{
			name:     fmt.Sprintf("elementwise operations that stop after %d elements", cap),
			open:     func() cuda.Backend { return &gridCapped{CPU: cuda.NewCPU(), cap: cap} },
			subtests: "activate|activate_grad|add_bias|gather|scatter_add|adam|grid",
			fail: []string{"/grid/alloc_and_fill", "/grid/add_bias", "/grid/relu", "/grid/tanh", "/grid/relu_grad",
				"/grid/tanh_grad", "/grid/gather", "/grid/scatter_add", "/grid/gemm_k_0", "/grid/adam"},
			pass: []string{"/activate", "/activate_grad", "/add_bias", "/gather", "/scatter_add", "/adam"},
		},
		{
			name:     "operations that ignore views' offsets",
			open:     func() cuda.Backend { return &offsetless{CPU: cuda.NewCPU()} },
			subtests: "views",
			fail: []string{"/views/gemm", "/views/add_bias", "/views/relu", "/views/tanh", "/views/relu_grad",
				"/views/tanh_grad", "/views/softmax", "/views/log-softmax", "/views/softmax_grad",
				"/views/log-softmax_grad", "/views/gather", "/views/scatter_add", "/views/sum_rows",
				"/views/sum_cols", "/views/adam", "/views/fill_and_copy"},
		},
		{
			name:     "Alloc that zeroes only float32 buffers",
			open:     func() cuda.Backend { return &dirtyInt32{CPU: cuda.NewCPU()} },
			subtests: "buffers|int32",
			fail:     []string{"/int32"},
			pass:     []string{"/buffers"},
		},
		{
			name:     "Copy of int32 through float32",
			open:     func() cuda.Backend { return &int32AsFloat{CPU: cuda.NewCPU()} },
			subtests: "buffers|int32",
			fail:     []string{"/int32"},
			pass:     []string{"/buffers"},
		},
		{
			name:     "ReLU that turns NaN into 0",
			open:     func() cuda.Backend { return &reluHidesNaN{CPU: cuda.NewCPU()} },
			subtests: "activate",
			fail:     []string{"/activate"},
		},
		{
			name:     "Copy between overlapping views",
			open:     func() cuda.Backend { return &overlappingCopy{CPU: cuda.NewCPU()} },
			subtests: "errors",
			fail:     []string{"/errors/copy_overlapping_views", "/errors/copy_overlapping_views_backwards", "/errors/copy_onto_itself"},
			pass:     []string{"/errors/copy_length_mismatch"},
		},
		{
			name: "methods that check their arguments before ErrClosed",
			open: func() cuda.Backend { return &closedChecksFirst{CPU: cuda.NewCPU()} },
			run:  func(t *testing.T, b cuda.Backend) { cudatest.RunClose(t, b) },
			fail: []string{""},
		},
		{
			name: "reopening that hands back the closed backend",
			open: func() cuda.Backend { return cuda.NewCPU() },
			run: func(t *testing.T, b cuda.Backend) {
				// The first open returns b; every later one b again, closed.
				cudatest.RunReopen(t, func() (cuda.Backend, error) { return b, nil })
			},
			fail: []string{""},
		},
	}
}

// TestBrokenBackend runs the suite against the broken backend named by
// $FROG_BROKEN_BACKEND; only TestSuiteCatchesBrokenBackends sets it.
func TestBrokenBackend(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		t.Skip("run by TestSuiteCatchesBrokenBackends")
	}
	for _, bc := range brokenCases() {
		if bc.name != name {
			continue
		}
		b := bc.open()
		defer b.Close()
		if bc.run != nil {
			bc.run(t, b)
		} else {
			cudatest.Run(t, b, cudatest.Options{Large: *large})
		}
		return
	}
	t.Fatalf("no broken backend %q", name)
}

var verdict = regexp.MustCompile(`--- (PASS|FAIL|SKIP): TestBrokenBackend(\S*) `)

func TestSuiteCatchesBrokenBackends(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		t.Skip("in a child")
	}
	for _, bc := range brokenCases() {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			run := "^TestBrokenBackend$"
			if bc.subtests != "" {
				run += "/^(" + bc.subtests + ")$"
			}
			args := []string{"-test.run", run, "-test.v", "-test.count=1"}
			if *large {
				args = append(args, "-cuda.large")
			}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), brokenEnv+"="+bc.name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("child run: %v, want it to fail\n%s", err, out)
			}
			got := map[string]string{}
			for _, m := range verdict.FindAllStringSubmatch(string(out), -1) {
				got[m[2]] = m[1]
			}
			for _, want := range []struct {
				verdict string
				names   []string
			}{{"FAIL", bc.fail}, {"PASS", bc.pass}} {
				for _, name := range want.names {
					if got[name] != want.verdict {
						t.Errorf("TestBrokenBackend%s: %q, want %s", name, got[name], want.verdict)
					}
				}
				t.Logf("%s as wanted: %q", want.verdict, want.names)
			}
			if t.Failed() {
				t.Logf("child output:\n%s", tail(out, 60))
			}
		})
	}
}

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// readF and writeF move a float32 buffer through the host, for the broken
// operations below, which compute on the host as a wrong kernel would.
func readF(c *cuda.CPU, b cuda.Buffer) []float32 {
	x := make([]float32, b.Len())
	if err := c.ReadFloat32(x, b); err != nil {
		panic(err)
	}
	return x
}

func readI(c *cuda.CPU, b cuda.Buffer) []int32 {
	x := make([]int32, b.Len())
	if err := c.ReadInt32(x, b); err != nil {
		panic(err)
	}
	return x
}

// noMaxSoftmax computes exp(x)/Σexp(x) without subtracting the maximum: it
// overflows at +100 and underflows to 0/0 at −100.
type noMaxSoftmax struct{ *cuda.CPU }

func (c *noMaxSoftmax) Softmax(o cuda.SoftmaxOptions) error {
	if o.Src.Len() != o.Dst.Len() || o.Offsets.DType() != cuda.Int32 {
		return c.CPU.Softmax(o) // its error
	}
	x, off := readF(c.CPU, o.Src), readI(c.CPU, o.Offsets)
	y := make([]float32, len(x))
	for s := 0; s+1 < len(off); s++ {
		var sum float32
		for _, v := range x[off[s]:off[s+1]] {
			sum += float32(math.Exp(float64(v)))
		}
		for i := off[s]; i < off[s+1]; i++ {
			if o.Log {
				y[i] = x[i] - float32(math.Log(float64(sum)))
			} else {
				y[i] = float32(math.Exp(float64(x[i]))) / sum
			}
		}
	}
	return c.WriteFloat32(o.Dst, y)
}

// logOfSoftmax computes a log-softmax as log(softmax(x)) in float32: −inf
// where the probability underflows.
type logOfSoftmax struct{ *cuda.CPU }

func (c *logOfSoftmax) Softmax(o cuda.SoftmaxOptions) error {
	log := o.Log
	o.Log = false
	if err := c.CPU.Softmax(o); err != nil || !log {
		return err
	}
	y := readF(c.CPU, o.Dst)
	for i, v := range y {
		y[i] = float32(math.Log(float64(v)))
	}
	return c.WriteFloat32(o.Dst, y)
}

// clampedLogSoftmax keeps log-probabilities finite: −inf becomes the lowest
// float32.
type clampedLogSoftmax struct{ *cuda.CPU }

func (c *clampedLogSoftmax) Softmax(o cuda.SoftmaxOptions) error {
	if err := c.CPU.Softmax(o); err != nil || !o.Log {
		return err
	}
	y := readF(c.CPU, o.Dst)
	for i, v := range y {
		y[i] = max(v, -math.MaxFloat32)
	}
	return c.WriteFloat32(o.Dst, y)
}

// gridCapped leaves every element past cap as it was, as a kernel launched
// on a capped grid without a grid-stride loop would (Fill, Alloc's zeroing,
// AddBias, Activate, ActivateGrad, Gather, ScatterAdd, GEMM's k = 0 scaling
// and Adam: every grid-stride kernel of the GPU backend).
type gridCapped struct {
	*cuda.CPU
	cap int
}

// capped runs op, then restores the elements of each of outs past cap.
func (c *gridCapped) capped(op func() error, outs ...cuda.Buffer) error {
	var before [][]float32
	for _, b := range outs {
		before = append(before, readF(c.CPU, b))
	}
	if err := op(); err != nil {
		return err
	}
	for k, b := range outs {
		if b.Len() <= c.cap {
			continue
		}
		after := readF(c.CPU, b)
		copy(after[c.cap:], before[k][c.cap:])
		if err := c.WriteFloat32(b, after); err != nil {
			return err
		}
	}
	return nil
}

func (c *gridCapped) Alloc(dt cuda.DType, n int) (cuda.Buffer, error) {
	b, err := c.CPU.Alloc(dt, n)
	if err == nil && dt == cuda.Float32 && n > c.cap {
		junk := make([]float32, n)
		for i := range junk {
			junk[i] = 3
		}
		err = c.WriteFloat32(b, junk)
		if err == nil {
			err = c.capped(func() error { return c.CPU.Fill(b, 0) }, b)
		}
	}
	return b, err
}

func (c *gridCapped) Fill(dst cuda.Buffer, v float32) error {
	return c.capped(func() error { return c.CPU.Fill(dst, v) }, dst)
}

func (c *gridCapped) AddBias(x, bias cuda.Buffer) error {
	return c.capped(func() error { return c.CPU.AddBias(x, bias) }, x)
}

func (c *gridCapped) Activate(f cuda.Activation, dst, src cuda.Buffer) error {
	return c.capped(func() error { return c.CPU.Activate(f, dst, src) }, dst)
}

func (c *gridCapped) ActivateGrad(f cuda.Activation, dx, dy, y cuda.Buffer) error {
	return c.capped(func() error { return c.CPU.ActivateGrad(f, dx, dy, y) }, dx)
}

func (c *gridCapped) Gather(dst, src, idx cuda.Buffer, cols int) error {
	return c.capped(func() error { return c.CPU.Gather(dst, src, idx, cols) }, dst)
}

// ScatterAdd drops the source elements past cap (its grid runs over src).
func (c *gridCapped) ScatterAdd(dst, src, idx cuda.Buffer, cols int) error {
	if src.Len() <= c.cap {
		return c.CPU.ScatterAdd(dst, src, idx, cols)
	}
	x := readF(c.CPU, src)
	clear(x[c.cap:])
	tmp, err := c.CPU.Alloc(cuda.Float32, len(x))
	if err != nil {
		return err
	}
	defer c.CPU.Free(tmp)
	if err := c.WriteFloat32(tmp, x); err != nil {
		return err
	}
	return c.CPU.ScatterAdd(dst, tmp, idx, cols)
}

func (c *gridCapped) Gemm(o cuda.GemmOptions) error {
	if o.K != 0 && o.Alpha != 0 { // cuBLAS, not a frog kernel
		return c.CPU.Gemm(o)
	}
	return c.capped(func() error { return c.CPU.Gemm(o) }, o.C)
}

func (c *gridCapped) Adam(o cuda.AdamOptions) error {
	return c.capped(func() error { return c.CPU.Adam(o) }, o.Params, o.M, o.V)
}

// offsetless addresses every buffer from the start of its allocation, as a
// kernel passed the allocation's address instead of the view's would.
type offsetless struct{ *cuda.CPU }

var z = cuda.StartOf

func (c *offsetless) Copy(dst, src cuda.Buffer) error { return c.CPU.Copy(z(dst), z(src)) }
func (c *offsetless) Fill(dst cuda.Buffer, v float32) error {
	return c.CPU.Fill(z(dst), v)
}
func (c *offsetless) Gemm(o cuda.GemmOptions) error {
	o.A, o.B, o.C = z(o.A), z(o.B), z(o.C)
	return c.CPU.Gemm(o)
}
func (c *offsetless) AddBias(x, bias cuda.Buffer) error { return c.CPU.AddBias(z(x), z(bias)) }
func (c *offsetless) Activate(f cuda.Activation, dst, src cuda.Buffer) error {
	return c.CPU.Activate(f, z(dst), z(src))
}
func (c *offsetless) ActivateGrad(f cuda.Activation, dx, dy, y cuda.Buffer) error {
	return c.CPU.ActivateGrad(f, z(dx), z(dy), z(y))
}
func (c *offsetless) Softmax(o cuda.SoftmaxOptions) error {
	o.Dst, o.Src, o.Offsets = z(o.Dst), z(o.Src), z(o.Offsets)
	return c.CPU.Softmax(o)
}
func (c *offsetless) SoftmaxGrad(o cuda.SoftmaxGradOptions) error {
	o.DX, o.DY, o.Y, o.Offsets = z(o.DX), z(o.DY), z(o.Y), z(o.Offsets)
	return c.CPU.SoftmaxGrad(o)
}
func (c *offsetless) Gather(dst, src, idx cuda.Buffer, cols int) error {
	return c.CPU.Gather(z(dst), z(src), z(idx), cols)
}
func (c *offsetless) ScatterAdd(dst, src, idx cuda.Buffer, cols int) error {
	return c.CPU.ScatterAdd(z(dst), z(src), z(idx), cols)
}
func (c *offsetless) Sum(o cuda.SumOptions) error {
	o.Dst, o.Src = z(o.Dst), z(o.Src)
	return c.CPU.Sum(o)
}
func (c *offsetless) Adam(o cuda.AdamOptions) error {
	o.Params, o.Grads, o.M, o.V = z(o.Params), z(o.Grads), z(o.M), z(o.V)
	return c.CPU.Adam(o)
}

// dirtyInt32 zeroes float32 allocations only; int32 ones hold junk.
type dirtyInt32 struct{ *cuda.CPU }

func (c *dirtyInt32) Alloc(dt cuda.DType, n int) (cuda.Buffer, error) {
	b, err := c.CPU.Alloc(dt, n)
	if err == nil && dt == cuda.Int32 {
		junk := make([]int32, n)
		for i := range junk {
			junk[i] = 0x7f7f7f7f
		}
		err = c.WriteInt32(b, junk)
	}
	return b, err
}

// int32AsFloat copies int32 buffers as if they held float32 values.
type int32AsFloat struct{ *cuda.CPU }

func (c *int32AsFloat) Copy(dst, src cuda.Buffer) error {
	if err := c.CPU.Copy(dst, src); err != nil || src.DType() != cuda.Int32 {
		return err
	}
	x := readI(c.CPU, src)
	for i, v := range x {
		x[i] = int32(float32(v))
	}
	return c.WriteInt32(dst, x)
}

// reluHidesNaN is the GPU's ReLU before NaN was defined: v > 0 ? v : 0.
type reluHidesNaN struct{ *cuda.CPU }

func (c *reluHidesNaN) Activate(f cuda.Activation, dst, src cuda.Buffer) error {
	if err := c.CPU.Activate(f, dst, src); err != nil || f != cuda.ReLU {
		return err
	}
	y := readF(c.CPU, dst)
	for i, v := range y {
		if !(v > 0) {
			y[i] = 0
		}
	}
	return c.WriteFloat32(dst, y)
}

// overlappingCopy copies through the host without the overlap check.
type overlappingCopy struct{ *cuda.CPU }

func (c *overlappingCopy) Copy(dst, src cuda.Buffer) error {
	if src.DType() != cuda.Float32 || dst.Len() != src.Len() {
		return c.CPU.Copy(dst, src)
	}
	return c.WriteFloat32(dst, readF(c.CPU, src))
}

// closedChecksFirst answers ErrInvalid (its buffers were freed by Close)
// instead of ErrClosed from some methods after Close.
type closedChecksFirst struct {
	*cuda.CPU
	closed bool
}

func (c *closedChecksFirst) Close() error { c.closed = true; return c.CPU.Close() }

func (c *closedChecksFirst) stale() error {
	if c.closed {
		return fmt.Errorf("buffer was freed: %w", cuda.ErrInvalid)
	}
	return nil
}

func (c *closedChecksFirst) Gemm(o cuda.GemmOptions) error {
	if err := c.stale(); err != nil {
		return err
	}
	return c.CPU.Gemm(o)
}

func (c *closedChecksFirst) Sum(o cuda.SumOptions) error {
	if err := c.stale(); err != nil {
		return err
	}
	return c.CPU.Sum(o)
}

func (c *closedChecksFirst) Adam(o cuda.AdamOptions) error {
	if err := c.stale(); err != nil {
		return err
	}
	return c.CPU.Adam(o)
}
