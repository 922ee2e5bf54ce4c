// Package cuda is the tensor backend frog's learner computes on: the Backend
// interface of float32 operations (GEMM, bias, activations, softmax over
// ragged segments, gather and scatter-add, sums, Adam, host↔device copies),
// a CPU implementation on gonum's blas32, and a GPU implementation that
// loads the NVIDIA driver, NVRTC and cuBLAS at run time.
//
// # Choosing a backend
//
// Open implements --device auto|cpu|cuda and says why it chose what it
// chose; NewCPU and OpenGPU open one backend directly. The binary builds and
// runs everywhere: without cgo, or on a machine without the libraries or a
// device, OpenGPU returns an error wrapping ErrUnavailable that names the
// library or call that failed ("dlopen: libcuda.so.1: cannot open shared
// object file", "cuInit: CUDA_ERROR_NO_DEVICE (100)"), and auto falls back to
// the CPU.
//
// # The GPU backend
//
// All C lives in one file set (gpu_cgo.go, loader.c, loader.h), linked with
// -ldl only. It dlopens libcuda.so.1, libnvrtc.so.13 or .12 and
// libcublas.so.13 or .12 (no major above the driver's), first where the
// dynamic loader looks (LD_LIBRARY_PATH, ld.so.cache), then in the CUDA
// toolkit's folders and the lib folders of NVIDIA's Python wheels
// (site-packages/nvidia/cu13/lib, nvidia/cublas/lib, nvidia/cuda_nvrtc/lib);
// its error lists every place tried. It dlsyms the ABI
// symbols (cuMemAlloc_v2, cuDevicePrimaryCtxRetain, cublasSgemm_v2,
// nvrtcGetCUBIN, ...) into a table of function pointers; the few types are
// declared locally, so no CUDA header is needed to build. It uses the
// device's primary context, cuBLAS for GEMM, and its own kernels for the rest:
// CUDA C sources embedded from kernels/*.cu, compiled by NVRTC to a CUBIN for
// the device's compute capability when the backend opens, and cached under
// DefaultCubinDir keyed by a hash of source, architecture and NVRTC version.
// Every CUDA call runs on one goroutine locked to its OS thread (CUDA
// contexts are per thread), fed by a channel. Failed CUDA calls return *Error,
// which names the call and the status (cuGetErrorName).
//
// # Contract
//
// See Backend: one goroutine at a time, row-major matrices, element counts,
// errors (ErrInvalid, ErrClosed, *Error) instead of panics. The conformance
// suite in cuda/cudatest checks every backend against float64 references
// with documented tolerances.
package cuda
