package cudatest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/frognano/frog/cuda"
)

// gridCols is the row length of the grid cases.
const gridCols = 7

// testGrid runs the elementwise operations and Adam on n elements (a
// multiple of 7): with Options.Large, more than one launch's grid of the GPU
// backend covers, so that its grid-stride loops go round again and an
// implementation that covers only the first launch's worth is seen to leave
// the rest. Every element is checked, against references computed one
// element at a time (no float64 copies of the inputs).
func testGrid(t *testing.T, b cuda.Backend, n int) {
	r := rng(16)
	t.Logf("grid cases of %d elements", n)
	testGridElementwise(t, b, r, n)
	testGridRows(t, b, r, n)
	testGridAdam(t, b, r, n)
}

// testGridElementwise is Alloc, Fill, AddBias, Activate and ActivateGrad
// on n elements, rows of gridCols.
func testGridElementwise(t *testing.T, b cuda.Backend, r *rand.Rand, n int) {
	const cols = gridCols
	t.Run("alloc and fill", func(t *testing.T) {
		e := newErrs(t, "grid fill")
		buf, err := b.Alloc(cuda.Float32, n)
		must(t, "Alloc", err)
		defer b.Free(buf)
		e.checkEach("alloc zeroed", download(t, b, buf), func(int) (float64, float64) { return 0, 0 })
		must(t, "Fill", b.Fill(buf, 1.5))
		e.checkEach("fill", download(t, b, buf), func(int) (float64, float64) { return 1.5, 0 })
		e.report()
	})
	t.Run("add bias", func(t *testing.T) {
		e := newErrs(t, "grid add bias")
		x, bias := uniform(r, n, -1, 1), uniform(r, cols, -1, 1)
		xb := upload(t, b, x)
		must(t, "AddBias", b.AddBias(xb, upload(t, b, bias)))
		e.checkEach("x", download(t, b, xb), func(i int) (float64, float64) {
			w := float64(x[i]) + float64(bias[i%cols])
			return w, 2 * u * math.Abs(w)
		})
		e.report()
	})
	for _, f := range []cuda.Activation{cuda.ReLU, cuda.Tanh} {
		t.Run(f.String(), func(t *testing.T) {
			e := newErrs(t, "grid "+f.String())
			x := uniform(r, n, -3, 3)
			src, dst := upload(t, b, x), upload(t, b, make([]float32, n))
			must(t, "Activate", b.Activate(f, dst, src))
			e.checkEach("dst", download(t, b, dst), func(i int) (float64, float64) {
				if f == cuda.ReLU {
					return max(float64(x[i]), 0), 0
				}
				w := math.Tanh(float64(x[i]))
				return w, 1e-6*math.Abs(w) + 1e-7
			})
			e.report()
		})
		t.Run(f.String()+" grad", func(t *testing.T) {
			e := newErrs(t, "grid "+f.String()+" grad")
			y, dy := uniform(r, n, -1, 1), uniform(r, n, -1, 1)
			dyb := upload(t, b, dy)
			must(t, "ActivateGrad", b.ActivateGrad(f, dyb, dyb, upload(t, b, y)))
			e.checkEach("dx", download(t, b, dyb), func(i int) (float64, float64) {
				if f == cuda.ReLU {
					if y[i] > 0 {
						return float64(dy[i]), 0
					}
					return 0, 0
				}
				w := float64(dy[i]) * (1 - float64(y[i])*float64(y[i]))
				return w, 4 * u * (math.Abs(float64(dy[i])) + math.Abs(w))
			})
			e.report()
		})
	}
}

// testGridRows is Gather, ScatterAdd and Gemm with K = 0 on n elements,
// rows of gridCols.
func testGridRows(t *testing.T, b cuda.Backend, r *rand.Rand, n int) {
	const cols = gridCols
	rows := n / cols
	t.Run("gather", func(t *testing.T) {
		e := newErrs(t, "grid gather")
		const tableRows = 1000
		table := uniform(r, tableRows*cols, -1, 1)
		idx := make([]int32, rows)
		for i := range idx {
			idx[i] = int32(r.IntN(tableRows))
		}
		dst := upload(t, b, make([]float32, n))
		must(t, "Gather", b.Gather(dst, upload(t, b, table), uploadInt(t, b, idx), cols))
		e.checkEach("dst", download(t, b, dst), func(i int) (float64, float64) {
			return float64(table[int(idx[i/cols])*cols+i%cols]), 0
		})
		e.report()
	})
	t.Run("scatter add", func(t *testing.T) {
		e := newErrs(t, "grid scatter add")
		base, src := uniform(r, n, -1, 1), uniform(r, n, -1, 1)
		idx := make([]int32, rows) // row i of src lands on row rows−1−i of dst
		for i := range idx {
			idx[i] = int32(rows - 1 - i)
		}
		dst := upload(t, b, base)
		must(t, "ScatterAdd", b.ScatterAdd(dst, upload(t, b, src), uploadInt(t, b, idx), cols))
		e.checkEach("dst", download(t, b, dst), func(i int) (float64, float64) {
			s := (rows-1-i/cols)*cols + i%cols
			return float64(base[i]) + float64(src[s]), 6 * u * (math.Abs(float64(base[i])) + math.Abs(float64(src[s])))
		})
		e.report()
	})
	t.Run("gemm k 0", func(t *testing.T) {
		e := newErrs(t, "grid gemm k=0")
		c := uniform(r, n, -1, 1)
		cb := upload(t, b, c)
		empty, err := b.Alloc(cuda.Float32, 0)
		must(t, "Alloc", err)
		defer b.Free(empty)
		must(t, "Gemm", b.Gemm(cuda.GemmOptions{M: rows, N: cols, K: 0, Alpha: 1, Beta: -2, A: empty, B: empty, C: cb}))
		e.checkEach("C", download(t, b, cb), func(i int) (float64, float64) { return -2 * float64(c[i]), 0 })
		e.report()
	})
}

// testGridAdam is one Adam step on n elements.
func testGridAdam(t *testing.T, b cuda.Backend, r *rand.Rand, n int) {
	t.Run("adam", func(t *testing.T) {
		e := newErrs(t, "grid adam")
		p0, g := uniform(r, n, -1, 1), uniform(r, n, -1, 1)
		p, m, v := upload(t, b, p0), upload(t, b, make([]float32, n)), upload(t, b, make([]float32, n))
		o := cuda.AdamOptions{Params: p, Grads: upload(t, b, g), M: m, V: v,
			LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Step: 1}
		must(t, "Adam", b.Adam(o))
		// Step 1 from zero moments: m = (1−β1)·g, v = (1−β2)·g².
		b1, b2, lr, wd := float64(o.Beta1), float64(o.Beta2), float64(o.LR), float64(o.WeightDecay)
		e.checkEach("m", download(t, b, m), func(i int) (float64, float64) {
			w := (1 - b1) * float64(g[i])
			return w, 8 * u * math.Abs(w)
		})
		e.checkEach("v", download(t, b, v), func(i int) (float64, float64) {
			w := (1 - b2) * float64(g[i]) * float64(g[i])
			return w, 8 * u * w
		})
		e.checkEach("params", download(t, b, p), func(i int) (float64, float64) {
			gi := float64(g[i])
			mi, vi := (1-b1)*gi, (1-b2)*gi*gi
			x := float64(p0[i])
			decay := lr * wd * x
			upd := lr * (mi / (1 - b1)) / (math.Sqrt(vi/(1-b2)) + float64(o.Eps))
			return x - decay - upd, 8 * u * (math.Abs(x) + math.Abs(upd) + math.Abs(decay))
		})
		e.report()
	})
}
