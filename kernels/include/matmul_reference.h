// The two reference kernels of kernels/matmul.hip, not rungs of the ladder: every matmul point is checked against
// one of them (FP32 points and the vendor's SGEMM against matmul_reference_f64, FP64 points and DGEMM against
// matmul_reference_dot2_f64), and each is itself checked against the host at sampled elements. Kept out of
// matmul.hip, whose kernels are one step of the ladder each; included by it, so they are in the same code object.
// Needs gpu.h and matmul_io.h (MATMUL_PARAMS_OF) first.
#pragma once

// ---------------------------------------------------------------------------------------------------------------
// matmul_reference_dot2_f64 — not a rung of the ladder: the reference every FP64 point is checked against.
//
// Idea: an FP64 kernel's own rounding cannot be checked against a plain FP64 sum, which rounds as much. This one
// sums each element with Ogita, Rump and Oishi's Dot2 ("Accurate sum and dot product", SIAM J. Sci. Comput. 26(6),
// 2005, Algorithm 5.3): every product a·b is split exactly into p + e (p = a·b rounded, e = fma(a, b, −p)), every
// addition s + p exactly into s' + f (TwoSum, Knuth's six operations), and the errors e and f are summed on the
// side and added once at the end. The result is as accurate as if computed in twice the working precision and then
// rounded: |result − c| <= u·|c| + γ²_K·Σ|a·b| with u = 2⁻⁵³ and γ_K = K·u/(1 − K·u), i.e. within one rounding of
// the exact c at the sizes the suite runs (the second term is below 10⁻²¹·Σ|a·b| at K = 8192). The host checks it
// at sampled elements against its own Dot2 sums (suite/src/experiments/matmul/cases.rs).
// Launch: group (16, 16, 1), grid (ceil(N/16), ceil(M/16)). Any M, N, K. C need not be zeroed.
// ---------------------------------------------------------------------------------------------------------------
// Dot2 needs every product and sum rounded on its own: nvcc fuses a·b + s into one FMA by default, and so does clang
// for HIP unless told not to, which would round once where the error terms assume two roundings.
#if defined(GPU_PLATFORM_NVIDIA)
__device__ __forceinline__ double dot2_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double dot2_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double dot2_sub(double a, double b) { return __dsub_rn(a, b); }
#else
__device__ __forceinline__ double dot2_mul(double a, double b) {
#pragma clang fp contract(off)
    return a * b;
}
__device__ __forceinline__ double dot2_add(double a, double b) {
#pragma clang fp contract(off)
    return a + b;
}
__device__ __forceinline__ double dot2_sub(double a, double b) {
#pragma clang fp contract(off)
    return a - b;
}
#endif

GPU_KERNEL __launch_bounds__(16 * 16) void matmul_reference_dot2_f64(MATMUL_PARAMS_OF(double)) {
    constexpr int TILE = 16;
    __shared__ double As[TILE][TILE];
    __shared__ double Bs[TILE][TILE];
    const int x = threadIdx.x;
    const int y = threadIdx.y;
    const int row = blockIdx.y * TILE + y;
    const int col = blockIdx.x * TILE + x;
    const double* a = A + (size_t)row * K;  // only dereferenced when row < M
    double sum = 0.0, err = 0.0;            // the sum so far and the sum of every rounding error made in it
    for (int t = 0; t < K; t += TILE) {
        As[y][x] = (row < M && t + x < K) ? a[t + x] : 0.0;
        Bs[y][x] = (t + y < K && col < N) ? B[(size_t)(t + y) * N + col] : 0.0;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) {
            const double p = dot2_mul(As[y][k], Bs[k][x]);
            const double pe = fma(As[y][k], Bs[k][x], -p);  // TwoProduct: a·b = p + pe exactly
            const double s = dot2_add(sum, p);              // TwoSum: sum + p = s + se exactly
            const double z = dot2_sub(s, sum);
            const double se = dot2_add(dot2_sub(sum, dot2_sub(s, z)), dot2_sub(p, z));
            sum = s;
            err = dot2_add(err, dot2_add(pe, se));
        }
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = dot2_add(sum, err);
}

// ---------------------------------------------------------------------------------------------------------------
// matmul_reference_f64 — not a rung of the ladder: the reference every kernel (and the vendor BLAS) is checked
// against at every element.
//
// Idea: the tiled kernel with 16×16 LDS tiles, accumulating each product a·b in FP64 (exact: a product of two
// floats fits a double) and rounding the sum to FP32 once at the end, so the result is within about half an FP32
// ulp of the exact C, far inside any FP32 kernel's own rounding error. Computing it on the GPU keeps a full check
// practical at 8192³ (5.5·10¹¹ multiply-adds: well under a second of FP64 on a data-centre GPU, minutes on a host);
// the host checks this kernel in turn, at sampled elements, against its own FP64 sums.
// Launch: group (16, 16, 1), grid (ceil(N/16), ceil(M/16)). Any M, N, K. C need not be zeroed.
// ---------------------------------------------------------------------------------------------------------------
#define REFERENCE_TILE 16

GPU_KERNEL __launch_bounds__(REFERENCE_TILE* REFERENCE_TILE) void matmul_reference_f64(const float* __restrict__ A,
                                                                                       const float* __restrict__ B,
                                                                                       float* __restrict__ C,
                                                                                       int M, int N, int K) {
    __shared__ float As[REFERENCE_TILE][REFERENCE_TILE];
    __shared__ float Bs[REFERENCE_TILE][REFERENCE_TILE];
    const int x = threadIdx.x;
    const int y = threadIdx.y;
    const int row = blockIdx.y * REFERENCE_TILE + y;
    const int col = blockIdx.x * REFERENCE_TILE + x;
    const float* a = A + (size_t)row * K;  // only dereferenced when row < M
    double sum = 0.0;
    for (int t = 0; t < K; t += REFERENCE_TILE) {
        As[y][x] = (row < M && t + x < K) ? a[t + x] : 0.0f;
        Bs[y][x] = (t + y < K && col < N) ? B[(size_t)(t + y) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < REFERENCE_TILE; ++k) sum += (double)As[y][k] * (double)Bs[k][x];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = (float)sum;
}
