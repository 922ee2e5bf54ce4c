package cuda

import (
	"fmt"
	"math"
)

// The checks below are shared by every backend, so that one call is valid or
// invalid everywhere and the conformance suite can test the contract once.

// invalid formats an argument error wrapping ErrInvalid.
func invalid(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrInvalid)...)
}

// use checks that b is a live buffer of dt allocated by owner.
func use(owner any, op, name string, b Buffer, dt DType) error {
	switch {
	case b.a == nil:
		return invalid("%s: %s is the zero buffer", op, name)
	case b.a.owner != owner:
		return invalid("%s: %s belongs to another backend", op, name)
	case b.a.freed:
		return invalid("%s: %s was freed", op, name)
	case b.a.dt != dt:
		return invalid("%s: %s is %v, want %v", op, name, b.a.dt, dt)
	}
	return nil
}

// arg is a named buffer argument.
type arg struct {
	name string
	b    Buffer
}

// useAll checks several buffers of one dtype.
func useAll(owner any, op string, dt DType, args ...arg) error {
	for _, a := range args {
		if err := use(owner, op, a.name, a.b, dt); err != nil {
			return err
		}
	}
	return nil
}

func checkAlloc(dt DType, n int) error {
	if dt != Float32 && dt != Int32 {
		return invalid("alloc: unknown %v", dt)
	}
	if n < 0 || n > math.MaxInt32*4 {
		return invalid("alloc: %d elements", n)
	}
	return nil
}

func checkFree(owner any, b Buffer) error {
	if err := use(owner, "free", "buffer", b, b.DType()); err != nil {
		return err
	}
	if b.isView() {
		return invalid("free: a view [%d:%d] of an allocation of %d", b.off, b.off+b.n, b.a.n)
	}
	return nil
}

func checkWrite(owner any, op string, dst Buffer, dt DType, n int) error {
	if err := use(owner, op, "dst", dst, dt); err != nil {
		return err
	}
	if n > dst.n {
		return invalid("%s: %d elements into a buffer of %d", op, n, dst.n)
	}
	return nil
}

func checkRead(owner any, op string, src Buffer, dt DType, n int) error {
	if err := use(owner, op, "src", src, dt); err != nil {
		return err
	}
	if n > src.n {
		return invalid("%s: %d elements from a buffer of %d", op, n, src.n)
	}
	return nil
}

func checkCopy(owner any, dst, src Buffer) error {
	if err := use(owner, "copy", "src", src, src.DType()); err != nil {
		return err
	}
	if err := use(owner, "copy", "dst", dst, src.DType()); err != nil {
		return err
	}
	if dst.n != src.n {
		return invalid("copy: %d elements into %d", src.n, dst.n)
	}
	if dst.a == src.a && dst.n > 0 && dst.off < src.off+src.n && src.off < dst.off+dst.n {
		return invalid("copy: dst [%d:%d] overlaps src [%d:%d] of one allocation", dst.off, dst.off+dst.n, src.off, src.off+src.n)
	}
	return nil
}

func checkFill(owner any, dst Buffer) error {
	return use(owner, "fill", "dst", dst, Float32)
}

// gemmPlan is a checked GemmOptions with defaults filled in.
type gemmPlan struct {
	GemmOptions
	rowsA, colsA, rowsB, colsB int // as stored
}

// extent is the number of elements that batch matrices of rows×cols with row
// stride ld and batch stride stride span.
func extent(batch, stride, rows, cols, ld int) int {
	if rows == 0 || cols == 0 {
		return 0
	}
	return (batch-1)*stride + (rows-1)*ld + cols
}

func checkGemm(owner any, o GemmOptions) (gemmPlan, error) {
	p := gemmPlan{GemmOptions: o}
	if err := useAll(owner, "gemm", Float32, arg{"A", o.A}, arg{"B", o.B}, arg{"C", o.C}); err != nil {
		return p, err
	}
	if o.M < 0 || o.N < 0 || o.K < 0 || o.Batch < 0 {
		return p, invalid("gemm: negative size m=%d n=%d k=%d batch=%d", o.M, o.N, o.K, o.Batch)
	}
	if p.Batch == 0 {
		p.Batch = 1
	}
	p.rowsA, p.colsA = o.M, o.K
	if o.TransA {
		p.rowsA, p.colsA = o.K, o.M
	}
	p.rowsB, p.colsB = o.K, o.N
	if o.TransB {
		p.rowsB, p.colsB = o.N, o.K
	}
	fill := func(ld *int, cols int, name string) error {
		if *ld == 0 {
			*ld = max(cols, 1)
		}
		if *ld < max(cols, 1) {
			return invalid("gemm: ld%s=%d below %d columns", name, *ld, cols)
		}
		return nil
	}
	if err := fill(&p.LDA, p.colsA, "a"); err != nil {
		return p, err
	}
	if err := fill(&p.LDB, p.colsB, "b"); err != nil {
		return p, err
	}
	if err := fill(&p.LDC, o.N, "c"); err != nil {
		return p, err
	}
	if p.Batch > 1 {
		if o.StrideA < 0 || o.StrideB < 0 || o.StrideC < 0 {
			return p, invalid("gemm: negative stride")
		}
		if need := extent(1, 0, o.M, o.N, p.LDC); o.StrideC < need && o.M > 0 && o.N > 0 {
			return p, invalid("gemm: strideC=%d makes outputs of %d elements overlap", o.StrideC, need)
		}
	}
	for _, d := range []int{o.M, o.N, o.K, p.LDA, p.LDB, p.LDC, p.Batch} {
		if d > math.MaxInt32 {
			return p, invalid("gemm: size %d over 2^31-1", d)
		}
	}
	for _, m := range []struct {
		name                   string
		b                      Buffer
		stride, rows, cols, ld int
	}{
		{"A", o.A, o.StrideA, p.rowsA, p.colsA, p.LDA},
		{"B", o.B, o.StrideB, p.rowsB, p.colsB, p.LDB},
		{"C", o.C, o.StrideC, o.M, o.N, p.LDC},
	} {
		if need := extent(p.Batch, m.stride, m.rows, m.cols, m.ld); need > m.b.n {
			return p, invalid("gemm: %s needs %d elements, has %d", m.name, need, m.b.n)
		}
	}
	return p, nil
}

// checkMatrix checks that x holds whole rows of cols elements and returns the
// number of rows.
func checkMatrix(op, name string, x Buffer, cols int) (int, error) {
	if cols <= 0 {
		return 0, invalid("%s: %d columns", op, cols)
	}
	if x.n%cols != 0 {
		return 0, invalid("%s: %s has %d elements, not rows of %d", op, name, x.n, cols)
	}
	if rows := x.n / cols; rows > math.MaxInt32 || cols > math.MaxInt32 {
		return 0, invalid("%s: %d×%d over 2^31-1", op, rows, cols)
	}
	return x.n / cols, nil
}

func checkAddBias(owner any, x, bias Buffer) (rows int, err error) {
	if err := useAll(owner, "add bias", Float32, arg{"x", x}, arg{"bias", bias}); err != nil {
		return 0, err
	}
	if bias.n == 0 {
		if x.n != 0 {
			return 0, invalid("add bias: empty bias for %d elements", x.n)
		}
		return 0, nil
	}
	return checkMatrix("add bias", "x", x, bias.n)
}

func checkActivation(f Activation) error {
	if f != ReLU && f != Tanh {
		return invalid("unknown %v", f)
	}
	return nil
}

func checkActivate(owner any, f Activation, dst, src Buffer) error {
	if err := checkActivation(f); err != nil {
		return err
	}
	if err := useAll(owner, "activate", Float32, arg{"dst", dst}, arg{"src", src}); err != nil {
		return err
	}
	if dst.n != src.n {
		return invalid("activate: dst has %d elements, src %d", dst.n, src.n)
	}
	return nil
}

func checkActivateGrad(owner any, f Activation, dx, dy, y Buffer) error {
	if err := checkActivation(f); err != nil {
		return err
	}
	if err := useAll(owner, "activate grad", Float32, arg{"dx", dx}, arg{"dy", dy}, arg{"y", y}); err != nil {
		return err
	}
	if dx.n != dy.n || dy.n != y.n {
		return invalid("activate grad: lengths dx=%d dy=%d y=%d", dx.n, dy.n, y.n)
	}
	return nil
}

// checkSegments checks the offsets buffer of segments over n elements and
// returns the number of segments.
func checkSegments(owner any, op string, offsets Buffer, n int) (int, error) {
	if err := use(owner, op, "offsets", offsets, Int32); err != nil {
		return 0, err
	}
	if offsets.n < 1 {
		return 0, invalid("%s: offsets needs at least one entry", op)
	}
	if n > math.MaxInt32 {
		return 0, invalid("%s: %d elements over 2^31-1", op, n)
	}
	return offsets.n - 1, nil
}

func checkSoftmax(owner any, o SoftmaxOptions) (int, error) {
	if err := useAll(owner, "softmax", Float32, arg{"dst", o.Dst}, arg{"src", o.Src}); err != nil {
		return 0, err
	}
	if o.Dst.n != o.Src.n {
		return 0, invalid("softmax: dst has %d elements, src %d", o.Dst.n, o.Src.n)
	}
	return checkSegments(owner, "softmax", o.Offsets, o.Src.n)
}

func checkSoftmaxGrad(owner any, o SoftmaxGradOptions) (int, error) {
	if err := useAll(owner, "softmax grad", Float32, arg{"dx", o.DX}, arg{"dy", o.DY}, arg{"y", o.Y}); err != nil {
		return 0, err
	}
	if o.DX.n != o.DY.n || o.DY.n != o.Y.n {
		return 0, invalid("softmax grad: lengths dx=%d dy=%d y=%d", o.DX.n, o.DY.n, o.Y.n)
	}
	return checkSegments(owner, "softmax grad", o.Offsets, o.Y.n)
}

// checkRows checks Gather (gather true: dst has a row per index, src is the
// indexed table) and ScatterAdd (dst is the table, src has a row per index).
// It returns the number of rows of the table.
func checkRows(owner any, op string, dst, src, idx Buffer, cols int, gather bool) (int, error) {
	if err := useAll(owner, op, Float32, arg{"dst", dst}, arg{"src", src}); err != nil {
		return 0, err
	}
	if err := use(owner, op, "idx", idx, Int32); err != nil {
		return 0, err
	}
	table, rows, tname, rname := src, dst, "src", "dst"
	if !gather {
		table, rows, tname, rname = dst, src, "dst", "src"
	}
	n, err := checkMatrix(op, tname, table, cols)
	if err != nil {
		return 0, err
	}
	if rows.n != idx.n*cols {
		return 0, invalid("%s: %d indices of rows of %d need %d elements in %s, have %d", op, idx.n, cols, idx.n*cols, rname, rows.n)
	}
	return n, nil
}

func checkSum(owner any, o SumOptions) (rows int, err error) {
	if err := useAll(owner, "sum", Float32, arg{"dst", o.Dst}, arg{"src", o.Src}); err != nil {
		return 0, err
	}
	rows, err = checkMatrix("sum", "src", o.Src, o.Cols)
	if err != nil {
		return 0, err
	}
	want := 0
	switch o.Axis {
	case Rows:
		want = o.Cols
	case Cols:
		want = rows
	default:
		return 0, invalid("sum: unknown axis %d", o.Axis)
	}
	if o.Dst.n != want {
		return 0, invalid("sum: dst has %d elements, want %d", o.Dst.n, want)
	}
	return rows, nil
}

// adamPlan holds the per-step scalars of an Adam update, computed in float64.
type adamPlan struct {
	lr, b1, b2, eps, wd, scale float32
	c1, c2                     float32 // 1/(1−β1^t), 1/(1−β2^t)
}

func checkAdam(owner any, o AdamOptions) (adamPlan, error) {
	if err := useAll(owner, "adam", Float32, arg{"params", o.Params}, arg{"grads", o.Grads}, arg{"m", o.M}, arg{"v", o.V}); err != nil {
		return adamPlan{}, err
	}
	n := o.Params.n
	if o.Grads.n != n || o.M.n != n || o.V.n != n {
		return adamPlan{}, invalid("adam: lengths params=%d grads=%d m=%d v=%d", n, o.Grads.n, o.M.n, o.V.n)
	}
	if o.Step < 1 {
		return adamPlan{}, invalid("adam: step %d, want ≥ 1", o.Step)
	}
	if !(o.Beta1 >= 0 && o.Beta1 < 1 && o.Beta2 >= 0 && o.Beta2 < 1) {
		return adamPlan{}, invalid("adam: betas %g, %g outside [0, 1)", o.Beta1, o.Beta2)
	}
	scale := o.GradScale
	if scale == 0 {
		scale = 1
	}
	t := float64(o.Step)
	return adamPlan{
		lr: o.LR, b1: o.Beta1, b2: o.Beta2, eps: o.Eps, wd: o.WeightDecay, scale: scale,
		c1: float32(1 / (1 - math.Pow(float64(o.Beta1), t))),
		c2: float32(1 / (1 - math.Pow(float64(o.Beta2), t))),
	}, nil
}
