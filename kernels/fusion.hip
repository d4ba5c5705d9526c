// Fusion experiment: the hand-written baseline (the seed's "CUDA Dot/Sum"), the classic two-stage reduction.
//
// Idea: stage 1 (`fusion_hand_<op>`) has each item add its grid-stride share of the elements, each group reduce its
// items (wave shuffles, then LDS across waves) and write one partial per group; stage 2 (`fusion_hand_finish`), one
// group, reduces the partials into result[0]. Two launches per reduction, the result left on the device.
// Expected limit: memory bandwidth for large n (4 bytes per element per input vector); at small n the two launches
// and the tail of the first stage.
// Launch assumptions: groups of FUSION_HAND_GROUP (256) items; stage 1 with G <= the partials' length groups,
// stage 2 with one group and `groups` = G. Every index is below n + G * 256, which the host keeps within 32 bits.
// The generated kernels (suite::fusion) do the same work in one launch; this file is the hand-written reference.
#include "gpu.h"

#define FUSION_HAND_GROUP 256u

// Sum of one value per item over the group, valid in item 0. GPU_WAVE_SIZE is 32 (NVIDIA) or 64 (CDNA).
__device__ inline float hand_group_sum(float v) {
    __shared__ float waves[FUSION_HAND_GROUP / GPU_WAVE_SIZE];
    for (int d = GPU_WAVE_SIZE / 2; d > 0; d /= 2) v += __shfl_down(v, d);
    const unsigned lane = threadIdx.x % GPU_WAVE_SIZE, wave = threadIdx.x / GPU_WAVE_SIZE;
    if (lane == 0) waves[wave] = v;
    __syncthreads();  // every wave's sum is in LDS before wave 0 reads them
    v = threadIdx.x < FUSION_HAND_GROUP / GPU_WAVE_SIZE ? waves[threadIdx.x] : 0.0f;
    if (wave == 0)
        for (int d = GPU_WAVE_SIZE / 2; d > 0; d /= 2) v += __shfl_down(v, d);
    return v;
}

extern "C" GPU_KERNEL void fusion_hand_sum(const float* __restrict__ x, float* __restrict__ partials, unsigned n) {
    float acc = 0.0f;
    for (unsigned i = blockIdx.x * FUSION_HAND_GROUP + threadIdx.x; i < n; i += gridDim.x * FUSION_HAND_GROUP)
        acc += x[i];
    acc = hand_group_sum(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

extern "C" GPU_KERNEL void fusion_hand_dot(const float* __restrict__ x, const float* __restrict__ y,
                                           float* __restrict__ partials, unsigned n) {
    float acc = 0.0f;
    for (unsigned i = blockIdx.x * FUSION_HAND_GROUP + threadIdx.x; i < n; i += gridDim.x * FUSION_HAND_GROUP)
        acc += x[i] * y[i];
    acc = hand_group_sum(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

extern "C" GPU_KERNEL void fusion_hand_asum(const float* __restrict__ x, float* __restrict__ partials, unsigned n) {
    float acc = 0.0f;
    for (unsigned i = blockIdx.x * FUSION_HAND_GROUP + threadIdx.x; i < n; i += gridDim.x * FUSION_HAND_GROUP)
        acc += fabsf(x[i]);
    acc = hand_group_sum(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

// Stage 2: one group adds the `groups` partials of stage 1 into result[0].
extern "C" GPU_KERNEL void fusion_hand_finish(const float* __restrict__ partials, float* __restrict__ result,
                                              unsigned groups) {
    float acc = 0.0f;
    for (unsigned g = threadIdx.x; g < groups; g += FUSION_HAND_GROUP) acc += partials[g];
    acc = hand_group_sum(acc);
    if (threadIdx.x == 0) result[0] = acc;
}
