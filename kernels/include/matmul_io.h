// The inputs and outputs of the matmul kernels (kernels/matmul.hip), shared by its rungs: the parameter list of every
// kernel, and the global-memory accesses of the 16-byte rungs (6 to 10) in FP32 and FP64: a quad (four consecutive
// elements of a row) loaded with and without a guard, its element-by-element twin for rows that are not 16-byte
// aligned, and the guarded stores at the right edge of a C row. matmul.hip's header comment states the conventions
// they serve (row-major, aligned rows, any M, N, K).
//
// A quad is the unit the wave-tiled kernels move: in FP32 it is a float4, one 16-byte access; in FP64 it is two
// 16-byte halves (no GPU here loads 32 bytes into registers at once: gfx90a's widest global load is dwordx4, NVIDIA's
// LDG.128), and "aligned rows" then means rows 16-byte aligned, N and K even, so a half (not the whole quad) lies
// wholly inside or outside a row. Every function below has an FP32 overload that is exactly the code the FP32 kernels
// had before FP64 existed, and an FP64 one that guards each half. (The kernels read and write whole quads in LDS and
// their partial tiles as `*reinterpret_cast<Quad<T>*>(p)` in place, not through a function returning one: clang for
// gfx90a allocates registers differently for a HIP float4 returned by value, e.g. 150 VGPRs instead of 192 for
// matmul_warptile, and the FP32 kernels must compile to the code they had.)
#pragma once
#include "gpu.h"

// The parameters of every matmul kernel of element type T, and the two more of the kernels with a workspace (9 and
// 10). MATMUL_PARAMS is the FP32 list.
#define MATMUL_PARAMS_OF(T) \
    const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, int M, int N, int K
#define MATMUL_PARAMS MATMUL_PARAMS_OF(float)
#define NO_MORE_PARAMS(T)
#define WORKSPACE_PARAMS(T) , T* __restrict__ work, unsigned* counters

// An FP64 quad in registers: two 16-byte halves, (x, y) and (z, w).
struct alignas(16) DoubleQuad {
    double x, y, z, w;
};

// The quad type of an element type: Quad<float> is float4, Quad<double> is DoubleQuad.
template <class T>
struct QuadOf;
template <>
struct QuadOf<float> {
    typedef float4 type;
};
template <>
struct QuadOf<double> {
    typedef DoubleQuad type;
};
template <class T>
using Quad = typename QuadOf<T>::type;

__device__ __forceinline__ float4 make_quad(float x, float y, float z, float w) { return make_float4(x, y, z, w); }
__device__ __forceinline__ DoubleQuad make_quad(double x, double y, double z, double w) {
    return DoubleQuad{x, y, z, w};
}

// An unguarded quad of global or shared memory (p 16-byte aligned).
__device__ __forceinline__ float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ DoubleQuad load4(const double* p) {
    const double2 lo = *reinterpret_cast<const double2*>(p);
    const double2 hi = *reinterpret_cast<const double2*>(p + 2);
    return DoubleQuad{lo.x, lo.y, hi.x, hi.y};
}

// An FP64 quad that another group of this launch wrote (split-K and stream-K partial tiles), read past this CU's L1
// in two halves (gpu_load_from_l2, gpu.h says why); the FP32 quad is gpu.h's float4 overload.
__device__ __forceinline__ DoubleQuad gpu_load_from_l2(const DoubleQuad* p) {
    const double2 lo = gpu_load_from_l2(reinterpret_cast<const double2*>(p));
    const double2 hi = gpu_load_from_l2(reinterpret_cast<const double2*>(p) + 1);
    return DoubleQuad{lo.x, lo.y, hi.x, hi.y};
}

// A float4 of global memory, or zeros when it lies outside the matrix (ok == false). Written as a guarded
// assignment rather than `ok ? *p : zero`: clang turns that select into a select of two addresses (global vs a
// private zero) and then has to issue a slow generic (flat) load through scratch on AMD.
__device__ __forceinline__ float4 load_or_zero(const float* p, bool ok) {
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (ok) v = *reinterpret_cast<const float4*>(p);
    return v;
}
__device__ __forceinline__ DoubleQuad load_or_zero(const double* p, bool ok) {
    DoubleQuad v = DoubleQuad{0.0, 0.0, 0.0, 0.0};
    if (ok) v = load4(p);
    return v;
}

// A quad whose halves (elements 0-1 and 2-3) are each loaded or zero, in the same guarded-assignment style: the FP64
// quads of aligned rows, which may end halfway through a row (the FP32 overload exists for the generic code and runs
// nowhere: an FP32 quad of aligned rows is wholly inside or outside).
__device__ __forceinline__ DoubleQuad load_halves_or_zero(const double* p, bool lo_ok, bool hi_ok) {
    DoubleQuad v = DoubleQuad{0.0, 0.0, 0.0, 0.0};
    if (lo_ok) {
        const double2 lo = *reinterpret_cast<const double2*>(p);
        v.x = lo.x, v.y = lo.y;
    }
    if (hi_ok) {
        const double2 hi = *reinterpret_cast<const double2*>(p + 2);
        v.z = hi.x, v.w = hi.y;
    }
    return v;
}
__device__ __forceinline__ float4 load_halves_or_zero(const float* p, bool lo_ok, bool hi_ok) {
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (lo_ok) v.x = p[0], v.y = p[1];
    if (hi_ok) v.z = p[2], v.w = p[3];
    return v;
}

// Stores the first half of a quad (elements 0-1): the FP64 quad at the end of a row of aligned rows that ends
// halfway through it (the FP32 overload runs nowhere, as above).
__device__ __forceinline__ void store_first_half(double* p, DoubleQuad v) {
    *reinterpret_cast<double2*>(p) = make_double2(v.x, v.y);
}
__device__ __forceinline__ void store_first_half(float* p, float4 v) { p[0] = v.x, p[1] = v.y; }

// The element-by-element counterpart of load_or_zero for rows that are not 16-byte aligned: the first `count`
// elements from p (count <= 0: none, >= 4: all four), zeros after them. Same guarded-assignment style, for the same
// reason.
__device__ __forceinline__ float4 load_first_or_zero(const float* p, int count) {
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (count > 0) v.x = p[0];
    if (count > 1) v.y = p[1];
    if (count > 2) v.z = p[2];
    if (count > 3) v.w = p[3];
    return v;
}
__device__ __forceinline__ DoubleQuad load_first_or_zero(const double* p, int count) {
    DoubleQuad v = DoubleQuad{0.0, 0.0, 0.0, 0.0};
    if (count > 0) v.x = p[0];
    if (count > 1) v.y = p[1];
    if (count > 2) v.z = p[2];
    if (count > 3) v.w = p[3];
    return v;
}

// Stores the first `count` elements of v to p (all four when count >= 4): the element-guarded edge of a C row.
template <class T>
__device__ __forceinline__ void store_first(T* p, Quad<T> v, int count) {
    if (count > 0) p[0] = v.x;
    if (count > 1) p[1] = v.y;
    if (count > 2) p[2] = v.z;
    if (count > 3) p[3] = v.w;
}
