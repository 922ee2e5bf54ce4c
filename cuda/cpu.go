package cuda

import (
	"fmt"
	"math"
	"runtime"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// CPU is the Backend on the host: GEMM through gonum's blas32 (whatever
// implementation blas32.Use installed, by default gonum's own Go code, which
// splits large products over GOMAXPROCS goroutines), everything else in plain
// Go on the caller's goroutine. It checks every argument, including the
// contents of index and offset buffers.
type CPU struct {
	closed bool
	live   map[*allocation]struct{}
}

var _ Backend = (*CPU)(nil)

// NewCPU returns a CPU backend.
func NewCPU() *CPU {
	return &CPU{live: make(map[*allocation]struct{})}
}

// Name implements Backend.
func (c *CPU) Name() string {
	return fmt.Sprintf("cpu (gonum blas32, GOMAXPROCS=%d)", runtime.GOMAXPROCS(0))
}

func (c *CPU) open() error {
	if c.closed {
		return ErrClosed
	}
	return nil
}

// f32 and i32 are the host slices behind checked buffers.
func f32(b Buffer) []float32 { return b.a.f32[b.off : b.off+b.n] }
func i32(b Buffer) []int32   { return b.a.i32[b.off : b.off+b.n] }

// Alloc implements Backend.
func (c *CPU) Alloc(dt DType, n int) (Buffer, error) {
	if err := c.open(); err != nil {
		return Buffer{}, err
	}
	if err := checkAlloc(dt, n); err != nil {
		return Buffer{}, err
	}
	a := &allocation{owner: c, dt: dt, n: n}
	if dt == Float32 {
		a.f32 = make([]float32, n)
	} else {
		a.i32 = make([]int32, n)
	}
	c.live[a] = struct{}{}
	return Buffer{a: a, n: n}, nil
}

// Free implements Backend.
func (c *CPU) Free(b Buffer) error {
	if err := c.open(); err != nil {
		return err
	}
	if err := checkFree(c, b); err != nil {
		return err
	}
	c.release(b.a)
	return nil
}

func (c *CPU) release(a *allocation) {
	a.freed, a.f32, a.i32 = true, nil, nil
	delete(c.live, a)
}

// WriteFloat32 implements Backend.
func (c *CPU) WriteFloat32(dst Buffer, src []float32) error {
	if err := c.open(); err != nil {
		return err
	}
	if err := checkWrite(c, "write float32", dst, Float32, len(src)); err != nil {
		return err
	}
	copy(f32(dst), src)
	return nil
}

// ReadFloat32 implements Backend.
func (c *CPU) ReadFloat32(dst []float32, src Buffer) error {
	if err := c.open(); err != nil {
		return err
	}
	if err := checkRead(c, "read float32", src, Float32, len(dst)); err != nil {
		return err
	}
	copy(dst, f32(src))
	return nil
}

// WriteInt32 implements Backend.
func (c *CPU) WriteInt32(dst Buffer, src []int32) error {
	if err := c.open(); err != nil {
		return err
	}
	if err := checkWrite(c, "write int32", dst, Int32, len(src)); err != nil {
		return err
	}
	copy(i32(dst), src)
	return nil
}

// ReadInt32 implements Backend.
func (c *CPU) ReadInt32(dst []int32, src Buffer) error {
	if err := c.open(); err != nil {
		return err
	}
	if err := checkRead(c, "read int32", src, Int32, len(dst)); err != nil {
		return err
	}
	copy(dst, i32(src))
	return nil
}

// Copy implements Backend.
func (c *CPU) Copy(dst, src Buffer) error {
	if err := c.open(); err != nil {
		return err
	}
	if err := checkCopy(c, dst, src); err != nil {
		return err
	}
	if src.DType() == Float32 {
		copy(f32(dst), f32(src))
	} else {
		copy(i32(dst), i32(src))
	}
	return nil
}

// Fill implements Backend.
func (c *CPU) Fill(dst Buffer, v float32) error {
	if err := c.open(); err != nil {
		return err
	}
	if err := checkFill(c, dst); err != nil {
		return err
	}
	d := f32(dst)
	for i := range d {
		d[i] = v
	}
	return nil
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// Gemm implements Backend.
func (c *CPU) Gemm(o GemmOptions) error {
	if err := c.open(); err != nil {
		return err
	}
	p, err := checkGemm(c, o)
	if err != nil {
		return err
	}
	if p.M == 0 || p.N == 0 {
		return nil
	}
	a, b, cc := f32(p.A), f32(p.B), f32(p.C)
	impl := blas32.Implementation()
	for i := range p.Batch {
		ci := cc[i*p.StrideC:]
		if p.K == 0 || p.Alpha == 0 {
			scaleMatrix(ci, p.M, p.N, p.LDC, p.Beta)
			continue
		}
		impl.Sgemm(trans(p.TransA), trans(p.TransB), p.M, p.N, p.K, p.Alpha,
			a[i*p.StrideA:], p.LDA, b[i*p.StrideB:], p.LDB, p.Beta, ci, p.LDC)
	}
	return nil
}

// scaleMatrix sets c = beta·c, overwriting with zeros when beta is 0.
func scaleMatrix(c []float32, m, n, ld int, beta float32) {
	for r := range m {
		row := c[r*ld : r*ld+n]
		for j := range row {
			if beta == 0 {
				row[j] = 0
			} else {
				row[j] *= beta
			}
		}
	}
}

// AddBias implements Backend.
func (c *CPU) AddBias(x, bias Buffer) error {
	if err := c.open(); err != nil {
		return err
	}
	rows, err := checkAddBias(c, x, bias)
	if err != nil {
		return err
	}
	xs, bs := f32(x), f32(bias)
	n := len(bs)
	for r := range rows {
		row := xs[r*n : (r+1)*n]
		for j, b := range bs {
			row[j] += b
		}
	}
	return nil
}

// Activate implements Backend.
func (c *CPU) Activate(f Activation, dst, src Buffer) error {
	if err := c.open(); err != nil {
		return err
	}
	if err := checkActivate(c, f, dst, src); err != nil {
		return err
	}
	d, s := f32(dst), f32(src)
	switch f {
	case ReLU:
		for i, x := range s {
			d[i] = max(x, 0) // NaN for NaN, +0 for −0
		}
	case Tanh:
		for i, x := range s {
			d[i] = float32(math.Tanh(float64(x)))
		}
	}
	return nil
}

// ActivateGrad implements Backend.
func (c *CPU) ActivateGrad(f Activation, dx, dy, y Buffer) error {
	if err := c.open(); err != nil {
		return err
	}
	if err := checkActivateGrad(c, f, dx, dy, y); err != nil {
		return err
	}
	gx, gy, ys := f32(dx), f32(dy), f32(y)
	switch f {
	case ReLU:
		for i, y := range ys {
			if y <= 0 {
				gx[i] = 0
			} else { // y > 0 or NaN
				gx[i] = gy[i]
			}
		}
	case Tanh:
		for i, y := range ys {
			gx[i] = gy[i] * (1 - y*y)
		}
	}
	return nil
}

// segments reads and checks the offsets of s segments over n elements.
func segments(op string, offsets Buffer, n int) ([]int32, error) {
	off := i32(offsets)
	if off[0] != 0 || int(off[len(off)-1]) != n {
		return nil, invalid("%s: offsets run from %d to %d, want 0 to %d", op, off[0], off[len(off)-1], n)
	}
	for s := 1; s < len(off); s++ {
		if off[s] < off[s-1] {
			return nil, invalid("%s: offsets decrease at segment %d (%d < %d)", op, s-1, off[s], off[s-1])
		}
	}
	return off, nil
}

// Softmax implements Backend. It accumulates in float64.
func (c *CPU) Softmax(o SoftmaxOptions) error {
	if err := c.open(); err != nil {
		return err
	}
	if _, err := checkSoftmax(c, o); err != nil {
		return err
	}
	off, err := segments("softmax", o.Offsets, o.Src.n)
	if err != nil {
		return err
	}
	src, dst := f32(o.Src), f32(o.Dst)
	for s := 0; s+1 < len(off); s++ {
		x, y := src[off[s]:off[s+1]], dst[off[s]:off[s+1]]
		if len(x) == 0 {
			continue
		}
		m := x[0]
		for _, v := range x {
			m = max(m, v)
		}
		var sum float64
		for _, v := range x {
			sum += math.Exp(float64(v - m))
		}
		if o.Log {
			ls := math.Log(sum)
			for i, v := range x {
				y[i] = float32(float64(v-m) - ls)
			}
			continue
		}
		for i, v := range x {
			y[i] = float32(math.Exp(float64(v-m)) / sum)
		}
	}
	return nil
}

// SoftmaxGrad implements Backend.
func (c *CPU) SoftmaxGrad(o SoftmaxGradOptions) error {
	if err := c.open(); err != nil {
		return err
	}
	if _, err := checkSoftmaxGrad(c, o); err != nil {
		return err
	}
	off, err := segments("softmax grad", o.Offsets, o.Y.n)
	if err != nil {
		return err
	}
	dx, dy, y := f32(o.DX), f32(o.DY), f32(o.Y)
	for s := 0; s+1 < len(off); s++ {
		lo, hi := off[s], off[s+1]
		var dot float64
		for i := lo; i < hi; i++ {
			if o.Log {
				dot += float64(dy[i])
			} else {
				dot += float64(dy[i]) * float64(y[i])
			}
		}
		for i := lo; i < hi; i++ {
			if o.Log {
				dx[i] = float32(float64(dy[i]) - math.Exp(float64(y[i]))*dot)
			} else {
				dx[i] = float32(float64(y[i]) * (float64(dy[i]) - dot))
			}
		}
	}
	return nil
}

// indices reads idx and checks every entry against the table's rows.
func indices(op string, idx Buffer, rows int) ([]int32, error) {
	ix := i32(idx)
	for i, r := range ix {
		if r < 0 || int(r) >= rows {
			return nil, invalid("%s: idx[%d]=%d outside [0, %d)", op, i, r, rows)
		}
	}
	return ix, nil
}

// Gather implements Backend.
func (c *CPU) Gather(dst, src, idx Buffer, cols int) error {
	if err := c.open(); err != nil {
		return err
	}
	rows, err := checkRows(c, "gather", dst, src, idx, cols, true)
	if err != nil {
		return err
	}
	ix, err := indices("gather", idx, rows)
	if err != nil {
		return err
	}
	d, s := f32(dst), f32(src)
	for i, r := range ix {
		copy(d[i*cols:(i+1)*cols], s[int(r)*cols:])
	}
	return nil
}

// ScatterAdd implements Backend.
func (c *CPU) ScatterAdd(dst, src, idx Buffer, cols int) error {
	if err := c.open(); err != nil {
		return err
	}
	rows, err := checkRows(c, "scatter add", dst, src, idx, cols, false)
	if err != nil {
		return err
	}
	ix, err := indices("scatter add", idx, rows)
	if err != nil {
		return err
	}
	d, s := f32(dst), f32(src)
	for i, r := range ix {
		row := d[int(r)*cols : (int(r)+1)*cols]
		for j, v := range s[i*cols : (i+1)*cols] {
			row[j] += v
		}
	}
	return nil
}

// Sum implements Backend. It accumulates in float64.
func (c *CPU) Sum(o SumOptions) error {
	if err := c.open(); err != nil {
		return err
	}
	rows, err := checkSum(c, o)
	if err != nil {
		return err
	}
	src, dst := f32(o.Src), f32(o.Dst)
	term := func(v float32) float64 {
		if o.Squares {
			return float64(v) * float64(v)
		}
		return float64(v)
	}
	if o.Axis == Cols {
		for r := range rows {
			var s float64
			for _, v := range src[r*o.Cols : (r+1)*o.Cols] {
				s += term(v)
			}
			dst[r] = float32(s)
		}
		return nil
	}
	acc := make([]float64, o.Cols)
	for r := range rows {
		for j, v := range src[r*o.Cols : (r+1)*o.Cols] {
			acc[j] += term(v)
		}
	}
	for j, s := range acc {
		dst[j] = float32(s)
	}
	return nil
}

// Adam implements Backend, in float32 arithmetic as the GPU does.
func (c *CPU) Adam(o AdamOptions) error {
	if err := c.open(); err != nil {
		return err
	}
	p, err := checkAdam(c, o)
	if err != nil {
		return err
	}
	ps, gs, ms, vs := f32(o.Params), f32(o.Grads), f32(o.M), f32(o.V)
	for i := range ps {
		g := p.scale * gs[i]
		m := p.b1*ms[i] + (1-p.b1)*g
		v := p.b2*vs[i] + (1-p.b2)*g*g
		ms[i], vs[i] = m, v
		x := ps[i]
		x -= p.lr * p.wd * x
		x -= p.lr * (m * p.c1) / (float32(math.Sqrt(float64(v*p.c2))) + p.eps)
		ps[i] = x
	}
	return nil
}

// Close implements Backend.
func (c *CPU) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	for a := range c.live {
		c.release(a)
	}
	return nil
}
