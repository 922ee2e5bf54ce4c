// Package cudatest is the conformance suite of cuda.Backend: Run checks every
// operation of a backend against a straightforward float64 reference written
// here, on seeded random inputs, and checks the argument contract (errors
// wrapping cuda.ErrInvalid, never panics). Every backend runs the same suite:
// the CPU one always, the GPU one where a GPU opens.
//
// # Tolerances
//
// Results are float32; references are float64 on the same float32 inputs.
// With u = 2⁻²⁴ (the unit roundoff of float32), an element passes when
// |got − want| ≤ tol, where tol is:
//
//	write/read, copy, fill, relu, relu grad, gather:  0 (exact)
//	add bias:        2u·|want|
//	tanh:            1e-6·|want| + 1e-7 (CUDA's tanhf is within 2 ulp)
//	tanh grad:       4u·(|dy| + |want|)
//	gemm:            2(K+2)·u·(|α|·Σ_k |a_ik|·|b_kj| + |β|·|c_ij|), the classic
//	                 γ_K bound for any summation order, doubled
//	softmax:         2(n+8)·u·want + 2⁻¹²⁶, n the segment's length (the
//	                 absolute term: a probability below float32's normal
//	                 range may be subnormal or flushed to 0)
//	log-softmax:     2u·(|x−max| + |log Σ| + |want| + n + 8)
//	softmax grad:    2(n+8)·u·y·(|dy| + Σ_j |dy_j·y_j|)
//	log-softmax grad: 2u·|dy| + 2(n+8)·u·exp(y)·Σ_j |dy_j|
//	scatter add:     2(d+2)·u·Σ|terms|, d the number of terms at that element
//	sum:             2(n+2)·u·Σ|terms|, n the number of terms
//	adam, per step:  8u·(|p| + |update| + |decay|) for p; 8u·Σ|terms| for m, v
//
// A reference that is NaN wants NaN, and one that is ±inf the same infinity,
// exactly (ReLU of NaN, a log-probability of −inf). The views cases (every
// operation on views at offsets inside their allocations, guard elements
// around them that must not change) and the grid cases (past one launch's
// grid: see Options) test addressing; they use the tolerances above or
// looser ones.
//
// Each subtest logs its largest error and its largest ratio of error to
// tolerance on a line starting "maxerr", which make gpu-check prints.
//
// # What the suite catches
//
// cuda/broken_test.go runs it against deliberately wrong backends (the CPU
// backend with one fault each: a softmax without the max subtraction, a
// log-softmax taken as the log of the softmax or clamped to a finite value,
// kernels that stop after one launch's worth of elements, operations that
// ignore views' offsets, int32 buffers not zeroed or copied through
// float32, a ReLU that turns NaN into 0, a Copy that allows overlap,
// methods that answer ErrInvalid after Close, a reopen that hands back the
// closed backend) and checks that the case meant to catch each fails.
//
// RunClose checks that every method returns cuda.ErrClosed after Close;
// RunReopen opens, uses and closes a backend three times in one process.
//
// A composite check, "ranking step", trains a small ranking network (the
// learner's shape: GEMMs, ReLU, segment log-softmax, gather, scatter-add,
// sums, Adam) for a few steps on the backend and on the CPU backend and
// compares the loss curves within a relative 1e-4.
package cudatest
