package cudatest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/frognano/frog/cuda"
)

// u is the unit roundoff of float32.
const u = 1.0 / (1 << 24)

// minNormal is the smallest normal float32, 2⁻¹²⁶.
const minNormal = 0x1p-126

// Options tune Run.
type Options struct {
	// Large runs the grid cases at GridElements elements, past the 65,536
	// blocks of 256 threads that one launch of the GPU backend covers, so
	// that every grid-stride loop goes round more than once. They take a
	// few hundred MiB of host memory and seconds of CPU time (the
	// references); without Large they run at SmallGridElements, the same
	// code at a size that does not pass one launch. gpu-check sets it.
	Large bool
}

const (
	// GridElements is the size of the grid cases with Options.Large: more
	// than 65,536 × 256 = 16,777,216, and a multiple of 7 (the columns of
	// their matrices).
	GridElements = 20_000_001
	// SmallGridElements is their size without it.
	SmallGridElements = 200_004
	// SumRows is the number of rows of the large sums, past the 65,536
	// blocks of the GPU's per-row sum; they run at every size.
	SumRows = 70_001
)

// Run runs the conformance suite against b. It does not close b.
func Run(t *testing.T, b cuda.Backend, o Options) {
	t.Helper()
	t.Logf("backend: %s", b.Name())
	grid := SmallGridElements
	if o.Large {
		grid = GridElements
	}
	for _, tc := range []struct {
		name string
		f    func(*testing.T, cuda.Backend)
	}{
		{"buffers", testBuffers},
		{"int32", testInt32},
		{"gemm", testGemm},
		{"add bias", testAddBias},
		{"activate", testActivate},
		{"activate grad", testActivateGrad},
		{"softmax", testSoftmax},
		{"softmax extremes", testSoftmaxExtremes},
		{"softmax grad", testSoftmaxGrad},
		{"gather", testGather},
		{"scatter add", testScatterAdd},
		{"sum", testSum},
		{"adam", testAdam},
		{"views", testViews},
		{"grid", func(t *testing.T, b cuda.Backend) { testGrid(t, b, grid) }},
		{"errors", testErrors},
		{"ranking step", testRankingStep},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, b) })
	}
}

// rng returns the suite's seeded generator for one subtest.
func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

func uniform(r *rand.Rand, n int, lo, hi float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(lo + (hi-lo)*r.Float64())
	}
	return x
}

// upload allocates a buffer holding x, freed when t ends.
func upload(t *testing.T, b cuda.Backend, x []float32) cuda.Buffer {
	t.Helper()
	buf, err := b.Alloc(cuda.Float32, len(x))
	if err != nil {
		t.Fatalf("Alloc(%d): %v", len(x), err)
	}
	t.Cleanup(func() { b.Free(buf) })
	if err := b.WriteFloat32(buf, x); err != nil {
		t.Fatalf("WriteFloat32: %v", err)
	}
	return buf
}

func uploadInt(t *testing.T, b cuda.Backend, x []int32) cuda.Buffer {
	t.Helper()
	buf, err := b.Alloc(cuda.Int32, len(x))
	if err != nil {
		t.Fatalf("Alloc(int32, %d): %v", len(x), err)
	}
	t.Cleanup(func() { b.Free(buf) })
	if err := b.WriteInt32(buf, x); err != nil {
		t.Fatalf("WriteInt32: %v", err)
	}
	return buf
}

func download(t *testing.T, b cuda.Backend, buf cuda.Buffer) []float32 {
	t.Helper()
	x := make([]float32, buf.Len())
	if err := b.ReadFloat32(x, buf); err != nil {
		t.Fatalf("ReadFloat32: %v", err)
	}
	return x
}

func slice(t *testing.T, buf cuda.Buffer, off, n int) cuda.Buffer {
	t.Helper()
	v, err := buf.Slice(off, n)
	if err != nil {
		t.Fatalf("Slice(%d, %d): %v", off, n, err)
	}
	return v
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// errs accumulates the comparison of one subtest and reports it.
type errs struct {
	t         *testing.T
	op        string
	maxAbs    float64
	maxRatio  float64
	failures  int
	compared  int
	exactOnly bool
}

func newErrs(t *testing.T, op string) *errs { return &errs{t: t, op: op} }

// check compares got[i] with want[i] within tol(i).
func (e *errs) check(what string, got []float32, want []float64, tol func(i int) float64) {
	e.t.Helper()
	if len(got) != len(want) {
		e.t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	e.checkEach(what, got, func(i int) (float64, float64) { return want[i], tol(i) })
}

// checkEach compares got[i] with the reference ref(i) = (want, tol), for
// cases too large to hold their references in slices. A NaN wants a NaN and
// an infinity the same infinity, exactly.
func (e *errs) checkEach(what string, got []float32, ref func(i int) (want, tol float64)) {
	e.t.Helper()
	for i := range got {
		w, tl := ref(i)
		g := float64(got[i])
		d := math.Abs(g - w)
		bad := math.IsNaN(g) != math.IsNaN(w)
		switch {
		case math.IsNaN(w):
			d = 0
		case math.IsInf(w, 0):
			bad = g != w
			d = 0
		default:
			bad = bad || !(d <= tl)
		}
		if bad {
			e.failures++
			if e.failures <= 5 {
				e.t.Errorf("%s[%d] = %.9g, want %.9g (error %.3g > tolerance %.3g)", what, i, g, w, d, tl)
			}
			continue
		}
		e.compared++
		e.maxAbs = max(e.maxAbs, d)
		if tl > 0 {
			e.maxRatio = max(e.maxRatio, d/tl)
		}
	}
}

func exact(int) float64 { return 0 }

// report logs the subtest's largest errors; gpu-check greps "maxerr".
func (e *errs) report() {
	e.t.Helper()
	if e.failures > 5 {
		e.t.Errorf("%s: %d elements out of tolerance in all", e.op, e.failures)
	}
	e.t.Logf("maxerr %-16s abs %.3g  of-tolerance %.3f  (%d elements)", e.op, e.maxAbs, e.maxRatio, e.compared)
}

func f64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func testBuffers(t *testing.T, b cuda.Backend) {
	e := newErrs(t, "buffers")
	r := rng(1)
	x := uniform(r, 1000, -1, 1)
	buf := upload(t, b, x)
	e.check("read", download(t, b, buf), f64(x), exact)

	// A partial read and write through views.
	v := slice(t, buf, 100, 50)
	part := uniform(r, 20, -1, 1)
	must(t, "write view", b.WriteFloat32(v, part))
	got := make([]float32, 30)
	must(t, "read view", b.ReadFloat32(got, slice(t, buf, 110, 30)))
	want := f64(append(append([]float32{}, part[10:]...), x[120:140]...))
	e.check("view", got, want, exact)

	// Alloc zeroes; Fill and Copy.
	z, err := b.Alloc(cuda.Float32, 33)
	must(t, "alloc", err)
	defer b.Free(z)
	e.check("alloc zeroed", download(t, b, z), make([]float64, 33), exact)
	must(t, "fill", b.Fill(slice(t, z, 3, 10), 2.5))
	wz := make([]float64, 33)
	for i := 3; i < 13; i++ {
		wz[i] = 2.5
	}
	e.check("fill", download(t, b, z), wz, exact)
	must(t, "copy", b.Copy(slice(t, z, 20, 13), slice(t, buf, 0, 13)))
	for i := range 13 {
		wz[20+i] = float64(x[i])
	}
	e.check("copy", download(t, b, z), wz, exact)

	// Int32 round trip, and a zero-length buffer.
	ix := []int32{0, -1, 7, math.MaxInt32, math.MinInt32}
	ib := uploadInt(t, b, ix)
	gi := make([]int32, len(ix))
	must(t, "read int32", b.ReadInt32(gi, ib))
	for i := range ix {
		if gi[i] != ix[i] {
			t.Errorf("int32[%d] = %d, want %d", i, gi[i], ix[i])
		}
	}
	empty, err := b.Alloc(cuda.Float32, 0)
	must(t, "alloc 0", err)
	must(t, "fill empty", b.Fill(empty, 1))
	must(t, "free empty", b.Free(empty))
	e.report()
}

// gemmRef computes the reference of one GEMM, with the stored layout.
func gemmRef(o cuda.GemmOptions, a, bm, c []float32) (want, tol []float64) {
	batch := max(o.Batch, 1)
	lda, ldb, ldc := o.LDA, o.LDB, o.LDC
	if lda == 0 {
		lda = max(1, o.K)
		if o.TransA {
			lda = max(1, o.M)
		}
	}
	if ldb == 0 {
		ldb = max(1, o.N)
		if o.TransB {
			ldb = max(1, o.K)
		}
	}
	if ldc == 0 {
		ldc = max(1, o.N)
	}
	want, tol = f64(c), make([]float64, len(c))
	for bi := range batch {
		A := func(i, k int) float64 {
			if o.TransA {
				return float64(a[bi*o.StrideA+k*lda+i])
			}
			return float64(a[bi*o.StrideA+i*lda+k])
		}
		B := func(k, j int) float64 {
			if o.TransB {
				return float64(bm[bi*o.StrideB+j*ldb+k])
			}
			return float64(bm[bi*o.StrideB+k*ldb+j])
		}
		for i := range o.M {
			for j := range o.N {
				var s, sa float64
				for k := range o.K {
					s += A(i, k) * B(k, j)
					sa += math.Abs(A(i, k) * B(k, j))
				}
				ci := bi*o.StrideC + i*ldc + j
				cv := float64(c[ci])
				w := float64(o.Alpha) * s
				mag := math.Abs(float64(o.Alpha)) * sa
				if o.Beta != 0 {
					w += float64(o.Beta) * cv
					mag += math.Abs(float64(o.Beta) * cv)
				}
				want[ci] = w
				tol[ci] = 2 * float64(o.K+2) * u * mag
			}
		}
	}
	return want, tol
}

func testGemm(t *testing.T, b cuda.Backend) {
	e := newErrs(t, "gemm")
	type tc struct {
		name        string
		ta, tb      bool
		m, n, k     int
		alpha, beta float32
		padA, padB  int // extra elements per row (ld = cols + pad)
		padC        int
		batch       int
		sa, sb, sc  int // batch strides; -1: tightly packed
		offA        int // A starts this far into its buffer
		nanC        bool
	}
	cases := []tc{
		{name: "nn small", m: 7, n: 5, k: 3, alpha: 1},
		{name: "nt small", tb: true, m: 7, n: 5, k: 3, alpha: 1},
		{name: "tn small", ta: true, m: 7, n: 5, k: 3, alpha: 1},
		{name: "tt small", ta: true, tb: true, m: 7, n: 5, k: 3, alpha: 1},
		{name: "forward 256x64x32", m: 256, n: 64, k: 32, alpha: 1},
		{name: "weight grad tn 32x64x256", ta: true, m: 32, n: 64, k: 256, alpha: 1},
		{name: "input grad nt 256x32x64", tb: true, m: 256, n: 32, k: 64, alpha: 1},
		{name: "vector out 300x1x64", m: 300, n: 1, k: 64, alpha: 1},
		{name: "alpha beta accumulate", m: 33, n: 17, k: 65, alpha: 0.5, beta: 2},
		{name: "beta 0 overwrites NaN", m: 9, n: 11, k: 13, alpha: 1, nanC: true},
		{name: "padded leading dims", ta: true, m: 10, n: 12, k: 14, alpha: 1, beta: 1, padA: 3, padB: 5, padC: 2},
		{name: "k 0 scales c", m: 6, n: 4, k: 0, alpha: 1, beta: 3},
		{name: "alpha 0 scales c", m: 6, n: 4, k: 5, alpha: 0, beta: -1},
		{name: "batched", tb: true, m: 8, n: 6, k: 10, alpha: 1, batch: 3, sa: -1, sb: -1, sc: -1},
		{name: "batched broadcast b", m: 8, n: 6, k: 10, alpha: 1, beta: 1, batch: 4, sa: -1, sb: 0, sc: -1},
		{name: "view of a", m: 5, n: 4, k: 3, alpha: 1, offA: 7},
		{name: "empty m", m: 0, n: 4, k: 3, alpha: 1},
	}
	r := rng(2)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rowsA, colsA := c.m, c.k
			if c.ta {
				rowsA, colsA = c.k, c.m
			}
			rowsB, colsB := c.k, c.n
			if c.tb {
				rowsB, colsB = c.n, c.k
			}
			o := cuda.GemmOptions{TransA: c.ta, TransB: c.tb, M: c.m, N: c.n, K: c.k, Alpha: c.alpha, Beta: c.beta, Batch: c.batch}
			o.LDA, o.LDB, o.LDC = max(colsA, 1)+c.padA, max(colsB, 1)+c.padB, max(c.n, 1)+c.padC
			batch := max(c.batch, 1)
			size := func(rows, ld, s int, stride *int) int {
				one := rows * ld
				switch {
				case batch == 1:
					return one
				case s == -1:
					*stride = one
				default:
					*stride = s
				}
				return (batch-1)**stride + one
			}
			na := size(rowsA, o.LDA, c.sa, &o.StrideA)
			nb := size(rowsB, o.LDB, c.sb, &o.StrideB)
			nc := size(c.m, o.LDC, c.sc, &o.StrideC)
			a := uniform(r, na+c.offA, -1, 1)
			bm := uniform(r, nb, -1, 1)
			cm := uniform(r, nc, -1, 1)
			if c.nanC {
				for i := range cm {
					cm[i] = float32(math.NaN())
				}
			}
			abuf := upload(t, b, a)
			o.A = slice(t, abuf, c.offA, na)
			o.B, o.C = upload(t, b, bm), upload(t, b, cm)
			must(t, "Gemm", b.Gemm(o))
			// Elements of C outside the matrices (padding) must not change:
			// gemmRef leaves them as they were, with tolerance 0.
			want, tol := gemmRef(o, a[c.offA:], bm, cm)
			e.check("C", download(t, b, o.C), want, func(i int) float64 { return tol[i] })
		})
	}
	e.report()
}

func testAddBias(t *testing.T, b cuda.Backend) {
	e := newErrs(t, "add bias")
	r := rng(3)
	for _, sh := range [][2]int{{1, 1}, {37, 64}, {5, 1}, {1000, 3}} {
		rows, cols := sh[0], sh[1]
		x, bias := uniform(r, rows*cols, -1, 1), uniform(r, cols, -1, 1)
		xb := upload(t, b, x)
		must(t, "AddBias", b.AddBias(xb, upload(t, b, bias)))
		want := make([]float64, len(x))
		for i := range x {
			want[i] = float64(x[i]) + float64(bias[i%cols])
		}
		e.check(fmt.Sprintf("%dx%d", rows, cols), download(t, b, xb), want, func(i int) float64 { return 2 * u * math.Abs(want[i]) })
	}
	e.report()
}

func testActivate(t *testing.T, b cuda.Backend) {
	r := rng(4)
	for _, f := range []cuda.Activation{cuda.ReLU, cuda.Tanh} {
		e := newErrs(t, f.String())
		x := uniform(r, 3001, -4, 4)
		x[0], x[1] = 0, 20
		// NaN propagates (a NaN loss must stay visible); −0 gives +0 for
		// ReLU; infinities saturate.
		x[2], x[3], x[4], x[5] = float32(math.NaN()), float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1))
		src := upload(t, b, x)
		dst := upload(t, b, make([]float32, len(x)))
		must(t, "Activate", b.Activate(f, dst, src))
		want := make([]float64, len(x))
		tol := exact
		for i, v := range x {
			if f == cuda.ReLU {
				want[i] = max(float64(v), 0) // NaN for NaN
			} else {
				want[i] = math.Tanh(float64(v))
			}
		}
		if f == cuda.Tanh {
			tol = func(i int) float64 { return 1e-6*math.Abs(want[i]) + 1e-7 }
		}
		e.check("out of place", download(t, b, dst), want, tol)
		must(t, "Activate in place", b.Activate(f, src, src))
		e.check("in place", download(t, b, src), want, tol)
		e.report()
	}
}

func testActivateGrad(t *testing.T, b cuda.Backend) {
	r := rng(5)
	for _, f := range []cuda.Activation{cuda.ReLU, cuda.Tanh} {
		e := newErrs(t, f.String()+" grad")
		n := 2049
		y := uniform(r, n, -1, 1)
		if f == cuda.ReLU {
			for i := range y {
				y[i] = max(y[i], 0)
			}
		}
		dy := uniform(r, n, -2, 2)
		nan := float32(math.NaN())
		y[0], dy[1], y[2], dy[2] = nan, nan, 0, nan // NaN y passes dy; dy NaN where y ≤ 0 is cut
		y[1] = 0.5
		want := make([]float64, n)
		for i := range y {
			if f == cuda.ReLU {
				if !(y[i] <= 0) {
					want[i] = float64(dy[i])
				}
			} else {
				yy := float64(y[i])
				want[i] = float64(dy[i]) * (1 - yy*yy)
			}
		}
		tol := exact
		if f == cuda.Tanh {
			tol = func(i int) float64 { return 4 * u * (math.Abs(float64(dy[i])) + math.Abs(want[i])) }
		}
		dyb, yb := upload(t, b, dy), upload(t, b, y)
		dx := upload(t, b, make([]float32, n))
		must(t, "ActivateGrad", b.ActivateGrad(f, dx, dyb, yb))
		e.check("dx", download(t, b, dx), want, tol)
		must(t, "ActivateGrad in place", b.ActivateGrad(f, dyb, dyb, yb))
		e.check("dx in place", download(t, b, dyb), want, tol)
		e.report()
	}
}

// segmentsOf returns offsets for segments of the given lengths.
func segmentsOf(lens []int) []int32 {
	off := []int32{0}
	for _, l := range lens {
		off = append(off, off[len(off)-1]+int32(l))
	}
	return off
}

// raggedLens returns segment lengths like the learner's: mostly a few to a
// few dozen candidates, some empty, one long.
func raggedLens(r *rand.Rand, n int) []int {
	lens := make([]int, n)
	for i := range lens {
		lens[i] = r.IntN(40)
	}
	lens[0], lens[n/2] = 1, 0
	lens[n-1] = 700
	return lens
}

// softmaxRef returns the reference (log-)softmax and its tolerance.
func softmaxRef(x []float32, off []int32, log bool) (want, tol []float64) {
	want, tol = make([]float64, len(x)), make([]float64, len(x))
	for s := 0; s+1 < len(off); s++ {
		lo, hi := int(off[s]), int(off[s+1])
		if lo == hi {
			continue
		}
		m := math.Inf(-1)
		for _, v := range x[lo:hi] {
			m = max(m, float64(v))
		}
		var sum float64
		for _, v := range x[lo:hi] {
			sum += math.Exp(float64(v) - m)
		}
		n := float64(hi - lo)
		ls := math.Log(sum)
		for i := lo; i < hi; i++ {
			d := float64(x[i]) - m
			if log {
				want[i] = d - ls
				tol[i] = 2 * u * (math.Abs(d) + math.Abs(ls) + math.Abs(want[i]) + n + 8)
			} else {
				want[i] = math.Exp(d) / sum
				// Below float32's normal range (x − max < −87) a result
				// may round to a subnormal or flush to 0.
				tol[i] = 2*(n+8)*u*want[i] + minNormal
			}
		}
	}
	return want, tol
}

func testSoftmax(t *testing.T, b cuda.Backend) {
	r := rng(6)
	lens := raggedLens(r, 200)
	off := segmentsOf(lens)
	n := int(off[len(off)-1])
	x := uniform(r, n, -8, 8)
	ob := uploadInt(t, b, off)
	for _, log := range []bool{false, true} {
		name := "softmax"
		if log {
			name = "log-softmax"
		}
		e := newErrs(t, name)
		want, tol := softmaxRef(x, off, log)
		src := upload(t, b, x)
		dst := upload(t, b, make([]float32, n))
		must(t, "Softmax", b.Softmax(cuda.SoftmaxOptions{Dst: dst, Src: src, Offsets: ob, Log: log}))
		e.check("out of place", download(t, b, dst), want, func(i int) float64 { return tol[i] })
		must(t, "Softmax in place", b.Softmax(cuda.SoftmaxOptions{Dst: src, Src: src, Offsets: ob, Log: log}))
		e.check("in place", download(t, b, src), want, func(i int) float64 { return tol[i] })
		e.report()
	}
	// No segments at all, and segments over an empty buffer.
	empty, err := b.Alloc(cuda.Float32, 0)
	must(t, "alloc", err)
	defer b.Free(empty)
	for _, o := range [][]int32{{0}, {0, 0, 0}} {
		must(t, "Softmax of nothing", b.Softmax(cuda.SoftmaxOptions{Dst: empty, Src: empty, Offsets: uploadInt(t, b, o)}))
	}
}

func testSoftmaxGrad(t *testing.T, b cuda.Backend) {
	r := rng(7)
	lens := raggedLens(r, 150)
	off := segmentsOf(lens)
	n := int(off[len(off)-1])
	x := uniform(r, n, -6, 6)
	dy := uniform(r, n, -1, 1)
	ob := uploadInt(t, b, off)
	for _, log := range []bool{false, true} {
		name := "softmax grad"
		if log {
			name = "log-softmax grad"
		}
		e := newErrs(t, name)
		ref, _ := softmaxRef(x, off, log)
		y := make([]float32, n)
		for i, v := range ref {
			y[i] = float32(v)
		}
		want, tol := make([]float64, n), make([]float64, n)
		for s := 0; s+1 < len(off); s++ {
			lo, hi := int(off[s]), int(off[s+1])
			var dot, mag float64
			for i := lo; i < hi; i++ {
				if log {
					dot += float64(dy[i])
					mag += math.Abs(float64(dy[i]))
				} else {
					dot += float64(dy[i]) * float64(y[i])
					mag += math.Abs(float64(dy[i]) * float64(y[i]))
				}
			}
			nn := float64(hi - lo)
			for i := lo; i < hi; i++ {
				yi, gi := float64(y[i]), float64(dy[i])
				if log {
					want[i] = gi - math.Exp(yi)*dot
					tol[i] = 2*u*math.Abs(gi) + 2*(nn+8)*u*math.Exp(yi)*mag
				} else {
					want[i] = yi * (gi - dot)
					tol[i] = 2 * (nn + 8) * u * yi * (math.Abs(gi) + mag)
				}
			}
		}
		yb, dyb := upload(t, b, y), upload(t, b, dy)
		dx := upload(t, b, make([]float32, n))
		o := cuda.SoftmaxGradOptions{DX: dx, DY: dyb, Y: yb, Offsets: ob, Log: log}
		must(t, "SoftmaxGrad", b.SoftmaxGrad(o))
		e.check("dx", download(t, b, dx), want, func(i int) float64 { return tol[i] })
		o.DX = dyb
		must(t, "SoftmaxGrad in place", b.SoftmaxGrad(o))
		e.check("dx in place", download(t, b, dyb), want, func(i int) float64 { return tol[i] })
		e.report()
	}
}

func testGather(t *testing.T, b cuda.Backend) {
	e := newErrs(t, "gather")
	r := rng(8)
	for _, cols := range []int{1, 3, 64} {
		rows := 50
		table := uniform(r, rows*cols, -1, 1)
		idx := make([]int32, 120)
		for i := range idx {
			idx[i] = int32(r.IntN(rows))
		}
		idx[0], idx[1] = 0, int32(rows-1)
		dst := upload(t, b, make([]float32, len(idx)*cols))
		must(t, "Gather", b.Gather(dst, upload(t, b, table), uploadInt(t, b, idx), cols))
		want := make([]float64, len(idx)*cols)
		for i, s := range idx {
			for j := range cols {
				want[i*cols+j] = float64(table[int(s)*cols+j])
			}
		}
		e.check(fmt.Sprintf("cols %d", cols), download(t, b, dst), want, exact)
	}
	e.report()
}

func testScatterAdd(t *testing.T, b cuda.Backend) {
	e := newErrs(t, "scatter add")
	r := rng(9)
	for _, cols := range []int{1, 5, 64} {
		rows := 40
		base := uniform(r, rows*cols, -1, 1)
		idx := make([]int32, 300) // many repeats
		for i := range idx {
			idx[i] = int32(r.IntN(rows))
		}
		src := uniform(r, len(idx)*cols, -1, 1)
		want, mag, cnt := f64(base), make([]float64, len(base)), make([]float64, len(base))
		for i := range base {
			mag[i], cnt[i] = math.Abs(float64(base[i])), 1
		}
		for i, s := range idx {
			for j := range cols {
				k := int(s)*cols + j
				want[k] += float64(src[i*cols+j])
				mag[k] += math.Abs(float64(src[i*cols+j]))
				cnt[k]++
			}
		}
		dst := upload(t, b, base)
		must(t, "ScatterAdd", b.ScatterAdd(dst, upload(t, b, src), uploadInt(t, b, idx), cols))
		e.check(fmt.Sprintf("cols %d", cols), download(t, b, dst), want, func(i int) float64 {
			return 2 * (cnt[i] + 2) * u * mag[i]
		})
	}
	e.report()
}

func testSum(t *testing.T, b cuda.Backend) {
	e := newErrs(t, "sum")
	r := rng(10)
	for _, c := range []struct {
		rows, cols int
		axis       cuda.Axis
		squares    bool
	}{
		{1, 1, cuda.Cols, false},
		{1, 100003, cuda.Cols, false}, // a whole vector
		{1, 100003, cuda.Cols, true},  // a squared norm
		{300, 64, cuda.Cols, false},
		{SumRows, 3, cuda.Cols, true}, // more rows than one launch's blocks: the row loop runs
		{SumRows, 3, cuda.Rows, false},
		{300, 64, cuda.Rows, false}, // a bias gradient
		{1000, 33, cuda.Rows, true},
		{7, 1, cuda.Rows, false},
		{0, 5, cuda.Rows, false}, // no rows: zeros
	} {
		x := uniform(r, c.rows*c.cols, -1, 1)
		nout := c.rows
		if c.axis == cuda.Rows {
			nout = c.cols
		}
		want, mag, terms := make([]float64, nout), make([]float64, nout), float64(c.cols)
		if c.axis == cuda.Rows {
			terms = float64(c.rows)
		}
		for i := range c.rows {
			for j := range c.cols {
				v := float64(x[i*c.cols+j])
				if c.squares {
					v *= v
				}
				k := i
				if c.axis == cuda.Rows {
					k = j
				}
				want[k] += v
				mag[k] += math.Abs(v)
			}
		}
		dst := upload(t, b, uniform(r, nout, 5, 6)) // overwritten
		must(t, "Sum", b.Sum(cuda.SumOptions{Dst: dst, Src: upload(t, b, x), Cols: c.cols, Axis: c.axis, Squares: c.squares}))
		e.check(fmt.Sprintf("%dx%d axis %d", c.rows, c.cols, c.axis), download(t, b, dst), want, func(i int) float64 {
			return 2 * (terms + 2) * u * mag[i]
		})
	}
	e.report()
}

func testAdam(t *testing.T, b cuda.Backend) {
	e := newErrs(t, "adam")
	r := rng(11)
	n := 5000
	p, m, v := upload(t, b, uniform(r, n, -1, 1)), upload(t, b, make([]float32, n)), upload(t, b, make([]float32, n))
	for step := 1; step <= 3; step++ {
		g := uniform(r, n, -1, 1)
		o := cuda.AdamOptions{
			Params: p, Grads: upload(t, b, g), M: m, V: v,
			LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Step: step,
		}
		if step == 3 {
			o.GradScale = 0.5
		}
		p0, m0, v0 := download(t, b, p), download(t, b, m), download(t, b, v)
		must(t, "Adam", b.Adam(o))
		scale := 1.0
		if o.GradScale != 0 {
			scale = float64(o.GradScale)
		}
		b1, b2 := float64(o.Beta1), float64(o.Beta2)
		c1, c2 := 1/(1-math.Pow(b1, float64(step))), 1/(1-math.Pow(b2, float64(step)))
		wp, wm, wv := make([]float64, n), make([]float64, n), make([]float64, n)
		tp, tm, tv := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range n {
			gi := scale * float64(g[i])
			wm[i] = b1*float64(m0[i]) + (1-b1)*gi
			wv[i] = b2*float64(v0[i]) + (1-b2)*gi*gi
			x := float64(p0[i])
			decay := float64(o.LR) * float64(o.WeightDecay) * x
			upd := float64(o.LR) * (wm[i] * c1) / (math.Sqrt(wv[i]*c2) + float64(o.Eps))
			wp[i] = x - decay - upd
			tm[i] = 8 * u * (math.Abs(b1*float64(m0[i])) + math.Abs((1-b1)*gi))
			tv[i] = 8 * u * (b2*float64(v0[i]) + (1-b2)*gi*gi)
			tp[i] = 8 * u * (math.Abs(x) + math.Abs(upd) + math.Abs(decay))
		}
		e.check(fmt.Sprintf("m step %d", step), download(t, b, m), wm, func(i int) float64 { return tm[i] })
		e.check(fmt.Sprintf("v step %d", step), download(t, b, v), wv, func(i int) float64 { return tv[i] })
		e.check(fmt.Sprintf("params step %d", step), download(t, b, p), wp, func(i int) float64 { return tp[i] })
	}
	e.report()
}

// testErrors checks that misuse is an error wrapping cuda.ErrInvalid, the
// same on every backend (the checks are shared), and never a panic.
func testErrors(t *testing.T, b cuda.Backend) {
	f := upload(t, b, make([]float32, 12))
	i := uploadInt(t, b, []int32{0, 1, 2})
	other := cuda.NewCPU()
	defer other.Close()
	foreign, err := other.Alloc(cuda.Float32, 12)
	must(t, "alloc on another backend", err)
	freed, err := b.Alloc(cuda.Float32, 4)
	must(t, "alloc", err)
	must(t, "free", b.Free(freed))
	view := slice(t, f, 2, 4)

	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"alloc negative", func() error { _, err := b.Alloc(cuda.Float32, -1); return err }},
		{"alloc bad dtype", func() error { _, err := b.Alloc(cuda.DType(9), 1); return err }},
		{"zero buffer", func() error { return b.Fill(cuda.Buffer{}, 1) }},
		{"foreign buffer", func() error { return b.Fill(foreign, 1) }},
		{"use after free", func() error { return b.Fill(freed, 1) }},
		{"double free", func() error { return b.Free(freed) }},
		{"free a view", func() error { return b.Free(view) }},
		{"slice out of range", func() error { _, err := f.Slice(10, 3); return err }},
		{"write too long", func() error { return b.WriteFloat32(f, make([]float32, 13)) }},
		{"read too long", func() error { return b.ReadFloat32(make([]float32, 13), f) }},
		{"write float32 to int32", func() error { return b.WriteFloat32(i, []float32{1}) }},
		{"copy length mismatch", func() error { return b.Copy(f, view) }},
		{"copy dtype mismatch", func() error { return b.Copy(slice(t, f, 0, 3), i) }},
		{"copy overlapping views", func() error { return b.Copy(slice(t, f, 2, 6), slice(t, f, 0, 6)) }},
		{"copy overlapping views backwards", func() error { return b.Copy(slice(t, f, 0, 6), slice(t, f, 5, 6)) }},
		{"copy onto itself", func() error { return b.Copy(view, view) }},
		{"copy int32 overlapping", func() error { return b.Copy(slice(t, i, 1, 2), slice(t, i, 0, 2)) }},
		{"gemm a too short", func() error {
			return b.Gemm(cuda.GemmOptions{M: 4, N: 3, K: 4, Alpha: 1, A: f, B: f, C: f})
		}},
		{"gemm lda too small", func() error {
			return b.Gemm(cuda.GemmOptions{M: 2, N: 2, K: 3, LDA: 2, Alpha: 1, A: f, B: f, C: f})
		}},
		{"gemm negative size", func() error {
			return b.Gemm(cuda.GemmOptions{M: -1, N: 2, K: 3, Alpha: 1, A: f, B: f, C: f})
		}},
		{"gemm outputs overlap", func() error {
			return b.Gemm(cuda.GemmOptions{M: 2, N: 2, K: 1, Alpha: 1, A: f, B: f, C: f, Batch: 2, StrideC: 3})
		}},
		{"gemm int32 operand", func() error {
			return b.Gemm(cuda.GemmOptions{M: 1, N: 1, K: 1, Alpha: 1, A: i, B: f, C: f})
		}},
		{"bias not dividing x", func() error { return b.AddBias(f, slice(t, f, 0, 5)) }},
		{"unknown activation", func() error { return b.Activate(cuda.Activation(0), f, f) }},
		{"activate length mismatch", func() error { return b.Activate(cuda.ReLU, view, f) }},
		{"softmax float offsets", func() error {
			return b.Softmax(cuda.SoftmaxOptions{Dst: f, Src: f, Offsets: view})
		}},
		{"softmax empty offsets", func() error {
			return b.Softmax(cuda.SoftmaxOptions{Dst: f, Src: f, Offsets: slice(t, i, 0, 0)})
		}},
		{"softmax grad length mismatch", func() error {
			return b.SoftmaxGrad(cuda.SoftmaxGradOptions{DX: f, DY: f, Y: view, Offsets: i})
		}},
		{"gather dst size", func() error { return b.Gather(view, f, i, 3) }},
		{"gather zero cols", func() error { return b.Gather(f, f, i, 0) }},
		{"scatter add float idx", func() error { return b.ScatterAdd(f, view, f, 1) }},
		{"sum dst size", func() error {
			return b.Sum(cuda.SumOptions{Dst: view, Src: f, Cols: 3, Axis: cuda.Rows})
		}},
		{"sum unknown axis", func() error { return b.Sum(cuda.SumOptions{Dst: view, Src: f, Cols: 3}) }},
		{"adam step 0", func() error {
			return b.Adam(cuda.AdamOptions{Params: f, Grads: f, M: f, V: f, Beta1: 0.9, Beta2: 0.999})
		}},
		{"adam beta 1", func() error {
			return b.Adam(cuda.AdamOptions{Params: f, Grads: f, M: f, V: f, Beta1: 1, Beta2: 0.999, Step: 1})
		}},
		{"adam length mismatch", func() error {
			return b.Adam(cuda.AdamOptions{Params: f, Grads: view, M: f, V: f, Beta1: 0.9, Beta2: 0.999, Step: 1})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, cuda.ErrInvalid) {
				t.Errorf("got %v, want an error wrapping ErrInvalid", err)
			}
		})
	}
}

func testRankingStep(t *testing.T, b cuda.Backend) {
	cfg := RankerConfig{Decisions: 64, Features: 16, Hidden: 32, Seed: 12}
	cpu := cuda.NewCPU()
	defer cpu.Close()
	const steps = 5
	curve := func(be cuda.Backend) []float64 {
		r, err := NewRanker(be, cfg)
		must(t, "NewRanker on "+be.Name(), err)
		defer r.Close()
		var losses []float64
		for range steps {
			loss, err := r.Step()
			must(t, "Step on "+be.Name(), err)
			losses = append(losses, loss)
		}
		return losses
	}
	got, want := curve(b), curve(cpu)
	e := newErrs(t, "ranking step")
	g32 := make([]float32, len(got))
	for i, v := range got {
		g32[i] = float32(v)
	}
	e.check("loss", g32, want, func(i int) float64 { return 1e-4*math.Abs(want[i]) + 1e-6 })
	if !(want[steps-1] < want[0]) {
		t.Errorf("loss did not fall over %d steps: %v", steps, want)
	}
	e.report()
}
