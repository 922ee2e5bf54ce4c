// Shared helpers for frog's kernels. NVRTC compiles every file in this
// folder as one program, in name order (common.cu first), without any CUDA
// header: only NVRTC's built-ins (threadIdx, expf, atomicAdd, __shfl_xor_sync)
// are used.

#define FROG_FULL_MASK 0xffffffffu

// frog_index and frog_stride walk a grid-stride loop over 64-bit indices.
__device__ __forceinline__ long long frog_index() {
    return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ long long frog_stride() {
    return (long long)blockDim.x * gridDim.x;
}

// frog_warp_sum returns the sum of v over the 32 lanes of a warp, to every lane.
__device__ __forceinline__ float frog_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(FROG_FULL_MASK, v, o);
    }
    return v;
}

// frog_warp_max returns the maximum of v over the 32 lanes of a warp.
__device__ __forceinline__ float frog_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) {
        v = fmaxf(v, __shfl_xor_sync(FROG_FULL_MASK, v, o));
    }
    return v;
}
