// Sums along one axis of a row-major matrix, without atomics, so that one
// input always gives one result.

// frog_sum_cols sets dst[r] = Σ_j src[r, j] (of squares with sq): one block of
// 256 threads per row, rows spread over the grid.
extern "C" __global__ void frog_sum_cols(float* dst, const float* src, int rows, long long cols, int sq) {
    __shared__ float part[32];
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* row = src + (long long)r * cols;
        float s = 0.0f;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
            float v = row[j];
            s += sq ? v * v : v;
        }
        s = frog_warp_sum(s);
        if ((threadIdx.x & 31) == 0) {
            part[threadIdx.x >> 5] = s;
        }
        __syncthreads();
        if (threadIdx.x < 32) {
            s = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : 0.0f;
            s = frog_warp_sum(s);
            if (threadIdx.x == 0) {
                dst[r] = s;
            }
        }
        __syncthreads();
    }
}

// frog_sum_rows sets dst[j] = Σ_r src[r, j] (of squares with sq): blocks of
// 32×32 threads, each block 32 columns, threadIdx.y striding over rows.
extern "C" __global__ void frog_sum_rows(float* dst, const float* src, int rows, int cols, int sq) {
    __shared__ float part[32][33];
    int j = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (j < cols) {
        for (int r = threadIdx.y; r < rows; r += 32) {
            float v = src[(long long)r * cols + j];
            s += sq ? v * v : v;
        }
    }
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0) {
        float t = 0.0f;
        for (int k = 0; k < 32; k++) {
            t += part[k][threadIdx.x];
        }
        if (j < cols) {
            dst[j] = t;
        }
    }
}
