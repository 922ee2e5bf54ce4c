package cudatest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/frognano/frog/cuda"
)

// guard fills the elements of an allocation around a view: an operation
// that ignores the view's offset reads it (a wrong result) or writes over it
// (a changed guard).
const guard = 7777.5

// padded is a view of len(x) elements at element off of a larger allocation
// whose other elements hold guard.
type padded struct {
	whole, view cuda.Buffer
	off, n      int
}

func uploadPadded(t *testing.T, b cuda.Backend, x []float32, off int) padded {
	t.Helper()
	all := make([]float32, off+len(x)+5)
	for i := range all {
		all[i] = guard
	}
	copy(all[off:], x)
	whole := upload(t, b, all)
	return padded{whole: whole, view: slice(t, whole, off, len(x)), off: off, n: len(x)}
}

// result returns the view's elements and fails t if any element outside it
// changed.
func (p padded) result(t *testing.T, b cuda.Backend) []float32 {
	t.Helper()
	all := download(t, b, p.whole)
	for i, v := range all {
		if (i < p.off || i >= p.off+p.n) && v != guard {
			t.Errorf("element %d, outside the view [%d:%d], changed to %g", i, p.off, p.off+p.n, v)
			break
		}
	}
	return all[p.off : p.off+p.n]
}

// uploadIntPadded returns a view of x at element off of a larger Int32
// allocation whose other elements are −7 (no valid index or offset).
func uploadIntPadded(t *testing.T, b cuda.Backend, x []int32, off int) cuda.Buffer {
	t.Helper()
	all := make([]int32, off+len(x)+5)
	for i := range all {
		all[i] = -7
	}
	copy(all[off:], x)
	return slice(t, uploadInt(t, b, all), off, len(x))
}

// testViews runs every operation on views that start inside their
// allocations, each argument at a different offset, and checks the results
// and that nothing outside the views changed.
func testViews(t *testing.T, b cuda.Backend) {
	r := rng(15)
	testViewsLinear(t, b, r)
	testViewsActivations(t, b, r)
	testViewsSoftmax(t, b, r)
	testViewsRows(t, b, r)
	testViewsReduce(t, b, r)
}

// testViewsLinear is a linear layer's operations, Gemm (strided, batched,
// B transposed) and AddBias, on views.
func testViewsLinear(t *testing.T, b cuda.Backend, r *rand.Rand) {
	t.Run("gemm", func(t *testing.T) {
		e := newErrs(t, "views gemm")
		const m, n, k, batch = 6, 5, 4, 2
		o := cuda.GemmOptions{M: m, N: n, K: k, Alpha: 1, Beta: 0.5, TransB: true, Batch: batch,
			StrideA: m*k + 1, StrideB: n*k + 2, StrideC: m*n + 3}
		a := uniform(r, o.StrideA+m*k, -1, 1)
		bm := uniform(r, o.StrideB+n*k, -1, 1)
		c := uniform(r, o.StrideC+m*n, -1, 1)
		pa, pb, pc := uploadPadded(t, b, a, 3), uploadPadded(t, b, bm, 5), uploadPadded(t, b, c, 11)
		o.A, o.B, o.C = pa.view, pb.view, pc.view
		must(t, "Gemm", b.Gemm(o))
		want, tol := gemmRef(o, a, bm, c)
		e.check("C", pc.result(t, b), want, func(i int) float64 { return tol[i] })
		e.report()
	})
	t.Run("add bias", func(t *testing.T) {
		e := newErrs(t, "views add bias")
		x, bias := uniform(r, 9*4, -1, 1), uniform(r, 4, -1, 1)
		px, pb := uploadPadded(t, b, x, 3), uploadPadded(t, b, bias, 5)
		must(t, "AddBias", b.AddBias(px.view, pb.view))
		want := make([]float64, len(x))
		for i := range x {
			want[i] = float64(x[i]) + float64(bias[i%4])
		}
		e.check("x", px.result(t, b), want, func(i int) float64 { return 2 * u * math.Abs(want[i]) })
		pb.result(t, b)
		e.report()
	})
}

// testViewsActivations is Activate and ActivateGrad, ReLU and Tanh, on
// views.
func testViewsActivations(t *testing.T, b cuda.Backend, r *rand.Rand) {
	for _, f := range []cuda.Activation{cuda.ReLU, cuda.Tanh} {
		t.Run(f.String(), func(t *testing.T) {
			e := newErrs(t, "views "+f.String())
			x := uniform(r, 50, -3, 3)
			ps, pd := uploadPadded(t, b, x, 3), uploadPadded(t, b, make([]float32, len(x)), 5)
			must(t, "Activate", b.Activate(f, pd.view, ps.view))
			want := make([]float64, len(x))
			for i, v := range x {
				if f == cuda.ReLU {
					want[i] = max(float64(v), 0)
				} else {
					want[i] = math.Tanh(float64(v))
				}
			}
			e.check("dst", pd.result(t, b), want, func(i int) float64 { return 1e-6*math.Abs(want[i]) + 1e-7 })
			e.report()
		})
		t.Run(f.String()+" grad", func(t *testing.T) {
			e := newErrs(t, "views "+f.String()+" grad")
			y, dy := uniform(r, 50, -1, 1), uniform(r, 50, -1, 1)
			pdx, pdy, py := uploadPadded(t, b, make([]float32, len(y)), 2), uploadPadded(t, b, dy, 5), uploadPadded(t, b, y, 3)
			must(t, "ActivateGrad", b.ActivateGrad(f, pdx.view, pdy.view, py.view))
			want := make([]float64, len(y))
			for i := range y {
				switch {
				case f == cuda.Tanh:
					want[i] = float64(dy[i]) * (1 - float64(y[i])*float64(y[i]))
				case y[i] > 0:
					want[i] = float64(dy[i])
				}
			}
			e.check("dx", pdx.result(t, b), want, func(i int) float64 { return 4 * u * (math.Abs(float64(dy[i])) + math.Abs(want[i])) })
			e.report()
		})
	}
}

// testViewsSoftmax is Softmax and SoftmaxGrad, plain and log, over
// segments of several lengths (one empty), the offsets a view too.
func testViewsSoftmax(t *testing.T, b cuda.Backend, r *rand.Rand) {
	lens := []int{3, 0, 7, 1, 12}
	off := segmentsOf(lens)
	ns := int(off[len(off)-1])
	for _, log := range []bool{false, true} {
		name := map[bool]string{false: "softmax", true: "log-softmax"}[log]
		t.Run(name, func(t *testing.T) {
			e := newErrs(t, "views "+name)
			x := uniform(r, ns, -4, 4)
			ps, pd := uploadPadded(t, b, x, 3), uploadPadded(t, b, make([]float32, ns), 6)
			must(t, "Softmax", b.Softmax(cuda.SoftmaxOptions{Dst: pd.view, Src: ps.view, Offsets: uploadIntPadded(t, b, off, 4), Log: log}))
			want, tol := softmaxRef(x, off, log)
			e.check("dst", pd.result(t, b), want, func(i int) float64 { return tol[i] })
			e.report()
		})
		t.Run(name+" grad", func(t *testing.T) {
			e := newErrs(t, "views "+name+" grad")
			ref, _ := softmaxRef(uniform(r, ns, -4, 4), off, log)
			y := make([]float32, ns)
			for i, v := range ref {
				y[i] = float32(v)
			}
			dy := uniform(r, ns, -1, 1)
			pdx, pdy, py := uploadPadded(t, b, make([]float32, ns), 2), uploadPadded(t, b, dy, 5), uploadPadded(t, b, y, 3)
			must(t, "SoftmaxGrad", b.SoftmaxGrad(cuda.SoftmaxGradOptions{DX: pdx.view, DY: pdy.view, Y: py.view,
				Offsets: uploadIntPadded(t, b, off, 6), Log: log}))
			want := make([]float64, ns)
			for s := 0; s+1 < len(off); s++ {
				var dot float64
				for i := off[s]; i < off[s+1]; i++ {
					if log {
						dot += float64(dy[i])
					} else {
						dot += float64(dy[i]) * float64(y[i])
					}
				}
				for i := off[s]; i < off[s+1]; i++ {
					if log {
						want[i] = float64(dy[i]) - math.Exp(float64(y[i]))*dot
					} else {
						want[i] = float64(y[i]) * (float64(dy[i]) - dot)
					}
				}
			}
			e.check("dx", pdx.result(t, b), want, func(i int) float64 { return 64 * u * (math.Abs(want[i]) + 1) })
			e.report()
		})
	}
}

// testViewsRows is Gather and ScatterAdd on views, the indices a view too.
func testViewsRows(t *testing.T, b cuda.Backend, r *rand.Rand) {
	t.Run("gather", func(t *testing.T) {
		e := newErrs(t, "views gather")
		const cols, rows = 3, 8
		table := uniform(r, rows*cols, -1, 1)
		idx := []int32{7, 0, 3, 3, 5}
		pd, pt := uploadPadded(t, b, make([]float32, len(idx)*cols), 2), uploadPadded(t, b, table, 5)
		must(t, "Gather", b.Gather(pd.view, pt.view, uploadIntPadded(t, b, idx, 3), cols))
		want := make([]float64, len(idx)*cols)
		for i, s := range idx {
			for j := range cols {
				want[i*cols+j] = float64(table[int(s)*cols+j])
			}
		}
		e.check("dst", pd.result(t, b), want, exact)
		e.report()
	})
	t.Run("scatter add", func(t *testing.T) {
		e := newErrs(t, "views scatter add")
		const cols, rows = 3, 8
		base := uniform(r, rows*cols, -1, 1)
		idx := []int32{7, 0, 3, 3, 5}
		src := uniform(r, len(idx)*cols, -1, 1)
		pd, ps := uploadPadded(t, b, base, 4), uploadPadded(t, b, src, 2)
		must(t, "ScatterAdd", b.ScatterAdd(pd.view, ps.view, uploadIntPadded(t, b, idx, 5), cols))
		want := f64(base)
		for i, s := range idx {
			for j := range cols {
				want[int(s)*cols+j] += float64(src[i*cols+j])
			}
		}
		e.check("dst", pd.result(t, b), want, func(i int) float64 { return 8 * u * (math.Abs(want[i]) + 2) })
		e.report()
	})
}

// testViewsReduce is Sum over rows and columns, Adam, Copy and Fill on
// views.
func testViewsReduce(t *testing.T, b cuda.Backend, r *rand.Rand) {
	for _, axis := range []cuda.Axis{cuda.Rows, cuda.Cols} {
		name := map[cuda.Axis]string{cuda.Rows: "sum rows", cuda.Cols: "sum cols"}[axis]
		t.Run(name, func(t *testing.T) {
			e := newErrs(t, "views "+name)
			const rows, cols = 9, 4
			x := uniform(r, rows*cols, -1, 1)
			nout := cols
			if axis == cuda.Cols {
				nout = rows
			}
			pd, ps := uploadPadded(t, b, make([]float32, nout), 3), uploadPadded(t, b, x, 5)
			must(t, "Sum", b.Sum(cuda.SumOptions{Dst: pd.view, Src: ps.view, Cols: cols, Axis: axis}))
			want := make([]float64, nout)
			for i := range rows {
				for j := range cols {
					if axis == cuda.Rows {
						want[j] += float64(x[i*cols+j])
					} else {
						want[i] += float64(x[i*cols+j])
					}
				}
			}
			e.check("dst", pd.result(t, b), want, func(int) float64 { return 32 * u * rows * cols })
			e.report()
		})
	}
	t.Run("adam", func(t *testing.T) {
		e := newErrs(t, "views adam")
		const n = 40
		p0, g, m0, v0 := uniform(r, n, -1, 1), uniform(r, n, -1, 1), uniform(r, n, -0.1, 0.1), uniform(r, n, 0, 0.01)
		pp, pg, pm, pv := uploadPadded(t, b, p0, 1), uploadPadded(t, b, g, 2), uploadPadded(t, b, m0, 3), uploadPadded(t, b, v0, 4)
		o := cuda.AdamOptions{Params: pp.view, Grads: pg.view, M: pm.view, V: pv.view,
			LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Step: 2}
		must(t, "Adam", b.Adam(o))
		wp, wm, wv := adamRef(o, p0, g, m0, v0)
		tol := func(w []float64) func(int) float64 {
			return func(i int) float64 { return 64 * u * (math.Abs(w[i]) + 1e-2) }
		}
		e.check("m", pm.result(t, b), wm, tol(wm))
		e.check("v", pv.result(t, b), wv, tol(wv))
		e.check("params", pp.result(t, b), wp, tol(wp))
		pg.result(t, b)
		e.report()
	})
	t.Run("fill and copy", func(t *testing.T) {
		e := newErrs(t, "views fill copy")
		x := uniform(r, 30, -1, 1)
		ps, pd := uploadPadded(t, b, x, 3), uploadPadded(t, b, make([]float32, 30), 6)
		must(t, "Copy", b.Copy(pd.view, ps.view))
		e.check("copy", pd.result(t, b), f64(x), exact)
		must(t, "Fill", b.Fill(ps.view, -2))
		want := make([]float64, 30)
		for i := range want {
			want[i] = -2
		}
		e.check("fill", ps.result(t, b), want, exact)
		e.report()
	})
}

// adamRef is one Adam(W) step in float64 on the given float32 state.
func adamRef(o cuda.AdamOptions, p0, g, m0, v0 []float32) (wp, wm, wv []float64) {
	n := len(p0)
	scale := 1.0
	if o.GradScale != 0 {
		scale = float64(o.GradScale)
	}
	b1, b2 := float64(o.Beta1), float64(o.Beta2)
	c1, c2 := 1/(1-math.Pow(b1, float64(o.Step))), 1/(1-math.Pow(b2, float64(o.Step)))
	wp, wm, wv = make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		gi := scale * float64(g[i])
		wm[i] = b1*float64(m0[i]) + (1-b1)*gi
		wv[i] = b2*float64(v0[i]) + (1-b2)*gi*gi
		x := float64(p0[i])
		x -= float64(o.LR) * float64(o.WeightDecay) * x
		wp[i] = x - float64(o.LR)*(wm[i]*c1)/(math.Sqrt(wv[i]*c2)+float64(o.Eps))
	}
	return wp, wm, wv
}
