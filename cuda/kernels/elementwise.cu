// Elementwise kernels: one thread per element, grid-stride loops.

extern "C" __global__ void frog_fill(float* x, long long n, float v) {
    for (long long i = frog_index(); i < n; i += frog_stride()) {
        x[i] = v;
    }
}

// frog_scale_matrix sets batch matrices of m×n (row stride ld, batch stride
// stride) to beta·c, or to 0 when beta is 0: GEMM with k = 0 or alpha = 0.
extern "C" __global__ void frog_scale_matrix(float* c, int m, int n, int ld, long long stride,
                                             int batch, float beta) {
    long long per = (long long)m * n;
    long long total = per * batch;
    for (long long i = frog_index(); i < total; i += frog_stride()) {
        long long b = i / per;
        long long r = (i % per) / n;
        long long j = i % n;
        float* p = c + b * stride + r * ld + j;
        *p = beta == 0.0f ? 0.0f : beta * *p;
    }
}

// frog_add_bias adds bias[j] to x[r, j], x being rows of cols.
extern "C" __global__ void frog_add_bias(float* x, const float* bias, long long n, int cols) {
    for (long long i = frog_index(); i < n; i += frog_stride()) {
        x[i] += bias[i % cols];
    }
}

// frog_relu is max(x, 0) with NaN propagated (fmaxf would drop it), +0 for −0:
// what the CPU backend's Go max gives.
extern "C" __global__ void frog_relu(float* y, const float* x, long long n) {
    for (long long i = frog_index(); i < n; i += frog_stride()) {
        float v = x[i];
        y[i] = (v > 0.0f || v != v) ? v : 0.0f;
    }
}

extern "C" __global__ void frog_tanh(float* y, const float* x, long long n) {
    for (long long i = frog_index(); i < n; i += frog_stride()) {
        y[i] = tanhf(x[i]);
    }
}

// frog_relu_grad and frog_tanh_grad compute dx from dy and the forward output y.
// ReLU's dx is 0 where y <= 0 and dy elsewhere, where y is NaN included.
extern "C" __global__ void frog_relu_grad(float* dx, const float* dy, const float* y, long long n) {
    for (long long i = frog_index(); i < n; i += frog_stride()) {
        dx[i] = y[i] <= 0.0f ? 0.0f : dy[i];
    }
}

extern "C" __global__ void frog_tanh_grad(float* dx, const float* dy, const float* y, long long n) {
    for (long long i = frog_index(); i < n; i += frog_stride()) {
        float v = y[i];
        dx[i] = dy[i] * (1.0f - v * v);
    }
}

// frog_gather sets dst row i to src row idx[i]; rows of cols, n = len(idx)·cols.
// An index outside [0, rows) gives a row of zeros (the CPU backend reports it).
extern "C" __global__ void frog_gather(float* dst, const float* src, const int* idx, long long n,
                                       int cols, int rows) {
    for (long long i = frog_index(); i < n; i += frog_stride()) {
        int s = idx[i / cols];
        dst[i] = (s >= 0 && s < rows) ? src[(long long)s * cols + i % cols] : 0.0f;
    }
}

// frog_scatter_add adds src row i to dst row idx[i]; out-of-range indices are skipped.
extern "C" __global__ void frog_scatter_add(float* dst, const float* src, const int* idx, long long n,
                                            int cols, int rows) {
    for (long long i = frog_index(); i < n; i += frog_stride()) {
        int s = idx[i / cols];
        if (s >= 0 && s < rows) {
            atomicAdd(dst + (long long)s * cols + i % cols, src[i]);
        }
    }
}

// frog_adam is one Adam(W) step; c1 = 1/(1−β1^t), c2 = 1/(1−β2^t).
extern "C" __global__ void frog_adam(float* p, const float* g, float* m, float* v, long long n,
                                     float lr, float b1, float b2, float eps, float wd,
                                     float scale, float c1, float c2) {
    for (long long i = frog_index(); i < n; i += frog_stride()) {
        float gi = scale * g[i];
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float x = p[i];
        x -= lr * wd * x;
        x -= lr * (mi * c1) / (sqrtf(vi * c2) + eps);
        p[i] = x;
    }
}
