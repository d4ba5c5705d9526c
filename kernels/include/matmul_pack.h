// The copies of A and B that the _packed matmul kernels read (kernels/matmul.hip, matmul_pack_operands: its comment
// says what and why), in FP32.
#pragma once
#include "gpu.h"
#include "matmul_io.h"

__device__ __forceinline__ void pack_operands(const float* __restrict__ A, const float* __restrict__ B,
                                              float* __restrict__ Ap, float* __restrict__ Bp, int M, int N, int K,
                                              int pack_a, int pack_b) {
    const bool is_a = blockIdx.z == 0;
    if (!(is_a ? pack_a : pack_b)) return;
    const float* src = is_a ? A : B;
    float* dst = is_a ? Ap : Bp;
    const int rows = is_a ? M : K, cols = is_a ? K : N;
    const int ld = (cols + 3) / 4 * 4;
    const int c = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (c >= ld) return;
    const int count = cols - c;  // elements of this quad inside the source row (>= 1: c < ld)
    const int step = gridDim.y;
    for (int r0 = blockIdx.y; r0 < rows; r0 += 4 * step) {
        float4 v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int r = r0 + u * step;
            v[u] = r < rows ? load_first_or_zero(src + (size_t)r * cols + c, count) : make_float4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int r = r0 + u * step;
            if (r < rows) *reinterpret_cast<float4*>(dst + (size_t)r * ld + c) = v[u];
        }
    }
}
