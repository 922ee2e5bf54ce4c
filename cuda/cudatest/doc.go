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
//	softmax:         2(n+8)·u·want, n the segment's length
//	log-softmax:     2u·(|x−max| + |log Σ| + |want| + n + 8)
//	softmax grad:    2(n+8)·u·y·(|dy| + Σ_j |dy_j·y_j|)
//	log-softmax grad: 2u·|dy| + 2(n+8)·u·exp(y)·Σ_j |dy_j|
//	scatter add:     2(d+2)·u·Σ|terms|, d the number of terms at that element
//	sum:             2(n+2)·u·Σ|terms|, n the number of terms
//	adam, per step:  8u·(|p| + |update| + |decay|) for p; 8u·Σ|terms| for m, v
//
// Each subtest logs its largest error and its largest ratio of error to
// tolerance on a line starting "maxerr", which make gpu-check prints.
//
// A composite check, "ranking step", trains a small ranking network (the
// learner's shape: GEMMs, ReLU, segment log-softmax, gather, scatter-add,
// sums, Adam) for a few steps on the backend and on the CPU backend and
// compares the loss curves within a relative 1e-4.
package cudatest
