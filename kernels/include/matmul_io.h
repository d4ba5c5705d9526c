// The inputs and outputs of the matmul kernels (kernels/matmul.hip), shared by its rungs: the parameter list of every
// kernel, and the global-memory accesses of the 16-byte rungs (6 to 10): a float4 load with and without a guard, its
// 4-byte twin for rows that are not 16-byte aligned, and the element-guarded store at the right edge of a C row.
// matmul.hip's header comment states the conventions they serve (row-major FP32, aligned rows, any M, N, K).
#pragma once
#include "gpu.h"

// The parameters of every matmul kernel, and the two more of the kernels with a workspace (9 and 10).
#define MATMUL_PARAMS \
    const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K
#define NO_MORE_PARAMS
#define WORKSPACE_PARAMS , float* __restrict__ work, unsigned* counters

// A float4 of global memory, or zeros when it lies outside the matrix (ok == false). Written as a guarded
// assignment rather than `ok ? *p : zero`: clang turns that select into a select of two addresses (global vs a
// private zero) and then has to issue a slow generic (flat) load through scratch on AMD.
__device__ __forceinline__ float4 load_or_zero(const float* p, bool ok) {
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (ok) v = *reinterpret_cast<const float4*>(p);
    return v;
}

// An unguarded float4 of global memory (p 16-byte aligned).
__device__ __forceinline__ float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }

// The 4-byte counterpart of load_or_zero for rows that are not 16-byte aligned: the first `count` floats from p
// (count <= 0: none, >= 4: all four), zeros after them. Same guarded-assignment style, for the same reason.
__device__ __forceinline__ float4 load_first_or_zero(const float* p, int count) {
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (count > 0) v.x = p[0];
    if (count > 1) v.y = p[1];
    if (count > 2) v.z = p[2];
    if (count > 3) v.w = p[3];
    return v;
}

// Stores the first `count` elements of v to p (all four when count >= 4): the element-guarded edge of a C row.
__device__ __forceinline__ void store_first(float* p, float4 v, int count) {
    if (count > 0) p[0] = v.x;
    if (count > 1) p[1] = v.y;
    if (count > 2) p[2] = v.z;
    if (count > 3) p[3] = v.w;
}
