// Softmax over ragged segments: one warp per segment [off[s], off[s+1]).
// Launch with blockDim.x a multiple of 32 and at least nseg warps in all.
// Offsets are clamped into [0, n], so malformed ones cannot fault.

__device__ __forceinline__ void frog_segment(const int* off, int s, int n, int* lo, int* hi) {
    int a = off[s], b = off[s + 1];
    a = a < 0 ? 0 : (a > n ? n : a);
    b = b < a ? a : (b > n ? n : b);
    *lo = a;
    *hi = b;
}

extern "C" __global__ void frog_softmax(float* y, const float* x, const int* off, int nseg, int n,
                                        int logsm) {
    int s = (int)(frog_index() >> 5);
    int lane = threadIdx.x & 31;
    if (s >= nseg) {
        return; // uniform across the warp
    }
    int lo, hi;
    frog_segment(off, s, n, &lo, &hi);
    float m = -3.402823466e+38f;
    for (int i = lo + lane; i < hi; i += 32) {
        m = fmaxf(m, x[i]);
    }
    m = frog_warp_max(m);
    float sum = 0.0f;
    for (int i = lo + lane; i < hi; i += 32) {
        sum += expf(x[i] - m);
    }
    sum = frog_warp_sum(sum);
    if (logsm) {
        float ls = logf(sum);
        for (int i = lo + lane; i < hi; i += 32) {
            y[i] = (x[i] - m) - ls;
        }
    } else {
        for (int i = lo + lane; i < hi; i += 32) {
            y[i] = expf(x[i] - m) / sum;
        }
    }
}

extern "C" __global__ void frog_softmax_grad(float* dx, const float* dy, const float* y,
                                             const int* off, int nseg, int n, int logsm) {
    int s = (int)(frog_index() >> 5);
    int lane = threadIdx.x & 31;
    if (s >= nseg) {
        return;
    }
    int lo, hi;
    frog_segment(off, s, n, &lo, &hi);
    float dot = 0.0f;
    for (int i = lo + lane; i < hi; i += 32) {
        dot += logsm ? dy[i] : dy[i] * y[i];
    }
    dot = frog_warp_sum(dot);
    for (int i = lo + lane; i < hi; i += 32) {
        float g = dy[i];
        dx[i] = logsm ? g - expf(y[i]) * dot : y[i] * (g - dot);
    }
}
