// Fusion experiment: the hand-written baseline (the seed's "CUDA Dot/Sum"), the classic two-stage reduction.
//
// Idea: stage 1 (`fusion_hand_<op>`) has each item add its grid-stride share of the elements, each group reduce its
// items (wave shuffles, then LDS across waves) and write one partial per group; stage 2 (`fusion_hand_finish`), one
// group, reduces the partials into result[0]. Two launches per reduction, the result left on the device.
// Expected limit: memory bandwidth for large n (4 bytes per element per input vector in FP32, 8 in FP64); at small n
// the two launches and the tail of the first stage.
// Launch assumptions: groups of FUSION_HAND_GROUP (256) items; stage 1 with G <= the partials' length groups,
// stage 2 with one group and `groups` = G. Every index is below n + G * 256, which the host keeps within 32 bits.
// Element types: each kernel is one template over the element type T, exported twice: `fusion_hand_<op>` for FP32
// (float) and `fusion_hand_<op>_f64` for FP64 (double), the same code in both precisions.
// The generated kernels (suite::fusion) do the same work in one launch; this file is the hand-written reference.
#include "gpu.h"

#define FUSION_HAND_GROUP 256u

// |x| in either precision: the C library names the float and double versions apart.
__device__ inline float hand_abs(float x) { return fabsf(x); }
__device__ inline double hand_abs(double x) { return fabs(x); }

// Sum of one value per item over the group, valid in item 0. GPU_WAVE_SIZE is 32 (NVIDIA) or 64 (CDNA).
template <typename T> __device__ inline T hand_group_sum(T v) {
    __shared__ T waves[FUSION_HAND_GROUP / GPU_WAVE_SIZE];
    for (int d = GPU_WAVE_SIZE / 2; d > 0; d /= 2) v += __shfl_down(v, d);
    const unsigned lane = threadIdx.x % GPU_WAVE_SIZE, wave = threadIdx.x / GPU_WAVE_SIZE;
    if (lane == 0) waves[wave] = v;
    __syncthreads();  // every wave's sum is in LDS before wave 0 reads them
    v = threadIdx.x < FUSION_HAND_GROUP / GPU_WAVE_SIZE ? waves[threadIdx.x] : T(0);
    if (wave == 0)
        for (int d = GPU_WAVE_SIZE / 2; d > 0; d /= 2) v += __shfl_down(v, d);
    return v;
}

template <typename T> __device__ inline void hand_sum(const T* __restrict__ x, T* __restrict__ partials, unsigned n) {
    T acc = T(0);
    for (unsigned i = blockIdx.x * FUSION_HAND_GROUP + threadIdx.x; i < n; i += gridDim.x * FUSION_HAND_GROUP)
        acc += x[i];
    acc = hand_group_sum(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

template <typename T>
__device__ inline void hand_dot(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ partials,
                                unsigned n) {
    T acc = T(0);
    for (unsigned i = blockIdx.x * FUSION_HAND_GROUP + threadIdx.x; i < n; i += gridDim.x * FUSION_HAND_GROUP)
        acc += x[i] * y[i];
    acc = hand_group_sum(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

template <typename T> __device__ inline void hand_asum(const T* __restrict__ x, T* __restrict__ partials, unsigned n) {
    T acc = T(0);
    for (unsigned i = blockIdx.x * FUSION_HAND_GROUP + threadIdx.x; i < n; i += gridDim.x * FUSION_HAND_GROUP)
        acc += hand_abs(x[i]);
    acc = hand_group_sum(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

// Stage 2: one group adds the `groups` partials of stage 1 into result[0].
template <typename T>
__device__ inline void hand_finish(const T* __restrict__ partials, T* __restrict__ result, unsigned groups) {
    T acc = T(0);
    for (unsigned g = threadIdx.x; g < groups; g += FUSION_HAND_GROUP) acc += partials[g];
    acc = hand_group_sum(acc);
    if (threadIdx.x == 0) result[0] = acc;
}

// FP32.
extern "C" GPU_KERNEL void fusion_hand_sum(const float* __restrict__ x, float* __restrict__ partials, unsigned n) {
    hand_sum(x, partials, n);
}

extern "C" GPU_KERNEL void fusion_hand_dot(const float* __restrict__ x, const float* __restrict__ y,
                                           float* __restrict__ partials, unsigned n) {
    hand_dot(x, y, partials, n);
}

extern "C" GPU_KERNEL void fusion_hand_asum(const float* __restrict__ x, float* __restrict__ partials, unsigned n) {
    hand_asum(x, partials, n);
}

extern "C" GPU_KERNEL void fusion_hand_finish(const float* __restrict__ partials, float* __restrict__ result,
                                              unsigned groups) {
    hand_finish(partials, result, groups);
}

// FP64: the same templates over double.
extern "C" GPU_KERNEL void fusion_hand_sum_f64(const double* __restrict__ x, double* __restrict__ partials,
                                               unsigned n) {
    hand_sum(x, partials, n);
}

extern "C" GPU_KERNEL void fusion_hand_dot_f64(const double* __restrict__ x, const double* __restrict__ y,
                                               double* __restrict__ partials, unsigned n) {
    hand_dot(x, y, partials, n);
}

extern "C" GPU_KERNEL void fusion_hand_asum_f64(const double* __restrict__ x, double* __restrict__ partials,
                                                unsigned n) {
    hand_asum(x, partials, n);
}

extern "C" GPU_KERNEL void fusion_hand_finish_f64(const double* __restrict__ partials, double* __restrict__ result,
                                                  unsigned groups) {
    hand_finish(partials, result, groups);
}
