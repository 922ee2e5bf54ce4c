package cuda

import (
	"errors"
	"fmt"
)

// Backend computes on float32 tensors held in Buffers it allocated.
//
// Threading: a Backend is used from one goroutine at a time (the learner's);
// calls block until their result is ready or, for a GPU, until the work is
// queued in order behind earlier work (reads wait for it). The GPU backend
// runs every CUDA call on one goroutine of its own, locked to its OS thread
// with runtime.LockOSThread and fed by a channel, because CUDA contexts are
// per thread; the CPU backend runs on the caller's goroutine. Neither takes a
// context: every call is short, and Close ends everything.
//
// Matrices are row-major. Sizes are element counts, not bytes. Every method
// checks its arguments (dtypes, lengths, ownership, freed buffers) and
// returns an error wrapping ErrInvalid instead of panicking; device faults
// return an *Error. In-place use (dst the same buffer as a source) is allowed
// wherever a method says so, and nowhere else.
type Backend interface {
	// Name says which backend this is and on what, e.g. "cpu (gonum, 2
	// threads)" or "cuda (NVIDIA H200, sm_90, driver 12.8)".
	Name() string

	// Alloc returns a zeroed buffer of n elements of dt.
	Alloc(dt DType, n int) (Buffer, error)
	// Free releases an allocation. Freeing a view (from Buffer.Slice) is an
	// error; views die with their allocation. Using a freed buffer is an
	// error.
	Free(b Buffer) error

	// WriteFloat32 copies src into the first len(src) elements of dst.
	WriteFloat32(dst Buffer, src []float32) error
	// ReadFloat32 copies the first len(dst) elements of src into dst,
	// after all earlier work on the backend has finished.
	ReadFloat32(dst []float32, src Buffer) error
	// WriteInt32 copies src into the first len(src) elements of dst.
	WriteInt32(dst Buffer, src []int32) error
	// ReadInt32 copies the first len(dst) elements of src into dst.
	ReadInt32(dst []int32, src Buffer) error
	// Copy copies src into dst, two buffers of one dtype and length that
	// do not overlap: views of one allocation that share an element are an
	// error wrapping ErrInvalid (copy through a temporary buffer instead),
	// and so is a buffer copied onto itself.
	Copy(dst, src Buffer) error
	// Fill sets every element of the float32 buffer dst to v.
	Fill(dst Buffer, v float32) error

	// Gemm computes C = Alpha·op(A)·op(B) + Beta·C, for each of the Batch
	// matrices (see GemmOptions).
	Gemm(o GemmOptions) error
	// AddBias adds bias (n elements) to every row of x (rows×n), in place.
	AddBias(x, bias Buffer) error
	// Activate sets dst = f(src) elementwise; dst may be src. NaN
	// propagates: ReLU(NaN) and Tanh(NaN) are NaN, so a NaN loss stays
	// visible on every backend.
	Activate(f Activation, dst, src Buffer) error
	// ActivateGrad sets dx = dy·f'(x), computed from the forward output
	// y = f(x): for ReLU dx is 0 where y ≤ 0 and dy elsewhere (where y is
	// NaN too, so dx keeps the NaN of dy and hides none); for Tanh it is
	// dy·(1−y²). dx may be dy.
	ActivateGrad(f Activation, dx, dy, y Buffer) error

	// Softmax computes a softmax (or, with o.Log, a log-softmax) of o.Src
	// over each segment [Offsets[s], Offsets[s+1]) into o.Dst (see
	// SoftmaxOptions). Dst may be Src. A −inf entry (a masked candidate)
	// gets probability 0 and log-probability −inf, exactly; a segment of
	// only −inf entries has no distribution and gives NaN.
	Softmax(o SoftmaxOptions) error
	// SoftmaxGrad back-propagates through Softmax: given the forward output
	// o.Y and the gradient o.DY of the loss with respect to it, it sets o.DX
	// to the gradient with respect to the input. For a softmax
	// dx_i = y_i·(dy_i − Σ_j dy_j·y_j); for a log-softmax
	// dx_i = dy_i − exp(y_i)·Σ_j dy_j, sums over i's segment. DX may be DY.
	SoftmaxGrad(o SoftmaxGradOptions) error

	// Gather copies rows: dst row i = src row idx[i], for rows of cols
	// elements; idx is an Int32 buffer, dst has idx.Len()·cols elements.
	Gather(dst, src, idx Buffer, cols int) error
	// ScatterAdd adds rows: dst row idx[i] += src row i; repeated indices
	// accumulate (on a GPU in no fixed order). src has idx.Len()·cols
	// elements.
	ScatterAdd(dst, src, idx Buffer, cols int) error

	// Sum reduces a matrix along one axis into o.Dst (see SumOptions).
	Sum(o SumOptions) error
	// Adam applies one Adam (or AdamW) step to o.Params in place, updating
	// the moment estimates o.M and o.V (see AdamOptions).
	Adam(o AdamOptions) error

	// Close frees every buffer still allocated and releases the device. A
	// closed backend returns ErrClosed. Close is idempotent.
	Close() error
}

// DType is the element type of a Buffer.
type DType uint8

const (
	// Float32 is the type of every tensor.
	Float32 DType = iota + 1
	// Int32 is the type of indices and segment offsets.
	Int32
)

func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Int32:
		return "int32"
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// Activation is an elementwise nonlinearity.
type Activation uint8

const (
	// ReLU is max(x, 0), NaN for NaN (and +0 for −0).
	ReLU Activation = iota + 1
	// Tanh is the hyperbolic tangent.
	Tanh
)

func (a Activation) String() string {
	switch a {
	case ReLU:
		return "relu"
	case Tanh:
		return "tanh"
	}
	return fmt.Sprintf("Activation(%d)", uint8(a))
}

// Axis names the axis of a matrix that Sum reduces.
type Axis uint8

const (
	// Rows reduces over the rows: Dst[c] = Σ_r Src[r, c] (a bias gradient).
	Rows Axis = iota + 1
	// Cols reduces over the columns: Dst[r] = Σ_c Src[r, c]; with one row
	// it is the sum of a whole vector.
	Cols
)

// GemmOptions describes C = Alpha·op(A)·op(B) + Beta·C on row-major matrices,
// where op(X) is X or, with TransX, its transpose. op(A) is M×K, op(B) is K×N
// and C is M×N. Alpha and Beta are used as given: set Alpha to 1 for a plain
// product; with Beta 0, C is overwritten (even NaNs in it).
type GemmOptions struct {
	TransA, TransB bool
	M, N, K        int
	Alpha, Beta    float32
	A, B, C        Buffer
	// LDA, LDB and LDC are the row strides of A, B and C as stored (A is
	// K×M when TransA, else M×K); 0 means tightly packed.
	LDA, LDB, LDC int
	// Batch is the number of products (0 means 1). The i-th uses the
	// matrices at offsets i·StrideA, i·StrideB and i·StrideC elements;
	// StrideA or StrideB may be 0 to reuse one matrix for every product,
	// StrideC must keep the outputs apart.
	Batch                     int
	StrideA, StrideB, StrideC int
}

// SoftmaxOptions describes a softmax over ragged segments: segment s is
// elements [Offsets[s], Offsets[s+1]) of Src and Dst, one segment per
// decision's list of candidates. Offsets is an Int32 buffer of S+1
// non-decreasing entries from 0 to Src.Len(); empty segments are allowed.
// The CPU backend checks Offsets; the GPU backend does not read it back and
// leaves elements outside well-formed segments unspecified.
type SoftmaxOptions struct {
	Dst, Src, Offsets Buffer
	// Log asks for log-softmax: x_i − max − log Σ_j exp(x_j − max).
	Log bool
}

// SoftmaxGradOptions describes the backward pass of Softmax over the same
// segments; Log must match the forward pass.
type SoftmaxGradOptions struct {
	DX, DY, Y, Offsets Buffer
	Log                bool
}

// SumOptions describes a reduction of the row-major matrix Src, of Cols
// columns and Src.Len()/Cols rows, along Axis into Dst.
type SumOptions struct {
	Dst, Src Buffer
	Cols     int
	Axis     Axis
	// Squares sums the squares of the elements (for a gradient norm).
	Squares bool
}

// AdamOptions describes one step of Adam (Kingma & Ba), with decoupled weight
// decay (AdamW, Loshchilov & Hutter) when WeightDecay is set:
//
//	g  = GradScale·grad
//	m  = Beta1·m + (1−Beta1)·g
//	v  = Beta2·v + (1−Beta2)·g²
//	p -= LR·WeightDecay·p
//	p -= LR·(m/(1−Beta1^Step)) / (sqrt(v/(1−Beta2^Step)) + Eps)
//
// Params, Grads, M and V are float32 buffers of one length; M and V start at
// zero. Step counts from 1.
type AdamOptions struct {
	Params, Grads, M, V Buffer
	LR, Beta1, Beta2    float32
	Eps, WeightDecay    float32
	Step                int
	// GradScale multiplies the gradients, e.g. to clip their global norm;
	// 0 means 1.
	GradScale float32
}

// Buffer is a run of elements on one backend: an allocation or a view of part
// of one. It is a small value, copied freely; the zero Buffer is invalid.
type Buffer struct {
	a      *allocation
	off, n int
}

// allocation is what Alloc made; views share it.
type allocation struct {
	owner any // the backend that allocated it
	dt    DType
	n     int
	freed bool
	f32   []float32 // CPU storage of a Float32 allocation
	i32   []int32   // CPU storage of an Int32 allocation
	dptr  uint64    // device address of a GPU allocation
}

// Len is the number of elements.
func (b Buffer) Len() int { return b.n }

// DType is the element type; 0 for the zero Buffer.
func (b Buffer) DType() DType {
	if b.a == nil {
		return 0
	}
	return b.a.dt
}

// Slice returns the view of n elements from element off.
func (b Buffer) Slice(off, n int) (Buffer, error) {
	if b.a == nil {
		return Buffer{}, fmt.Errorf("slice of the zero buffer: %w", ErrInvalid)
	}
	if off < 0 || n < 0 || off+n > b.n {
		return Buffer{}, fmt.Errorf("slice [%d:%d] of a buffer of %d: %w", off, off+n, b.n, ErrInvalid)
	}
	return Buffer{a: b.a, off: b.off + off, n: n}, nil
}

// isView says whether b is less than its whole allocation.
func (b Buffer) isView() bool { return b.off != 0 || b.n != b.a.n }

var (
	// ErrUnavailable says that no usable GPU was found: the driver, NVRTC
	// or cuBLAS did not load, no device answered, or frog was built without
	// cgo. Open's errors for --device cuda wrap it.
	ErrUnavailable = errors.New("cuda unavailable")
	// ErrInvalid is wrapped by every error about arguments: shapes,
	// dtypes, foreign or freed buffers.
	ErrInvalid = errors.New("invalid argument")
	// ErrClosed is returned by a Backend used after Close.
	ErrClosed = errors.New("backend closed")
)

// Error is a failed call into the CUDA driver, NVRTC or cuBLAS.
type Error struct {
	Call string // the C function, e.g. "cuMemAlloc_v2"
	Code int    // its status code
	Name string // the status's name, e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Log  string // NVRTC's compile log, if any
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Code)
	if e.Log != "" {
		s += ":\n" + e.Log
	}
	return s
}
