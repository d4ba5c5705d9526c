// Portability header: one kernel source for hipcc (AMD) and nvcc (NVIDIA).
//
// The kernels are written in HIP C++. Under nvcc the few HIP-only spellings they use are mapped here onto CUDA,
// so no kernel file carries an #ifdef. Nothing here, and no kernel, assumes 32 or 64 items per wave: use
// GPU_WAVE_SIZE (a compile-time constant from the compiler for the architecture being built) or warpSize.
#pragma once

#if defined(__HIPCC__) || defined(__HIP__)
#include <hip/hip_runtime.h>
#define GPU_PLATFORM_AMD 1
// clang defines the wave size of the architecture being compiled (64 on gfx9/CDNA, 32 or 64 on RDNA).
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define GPU_WAVE_SIZE __AMDGCN_WAVEFRONT_SIZE
#else
#define GPU_WAVE_SIZE 64
#endif
// 64-bit counter of a constant-rate clock, comparable across CUs (for occupancy timelines).
__device__ inline unsigned long long gpu_wall_clock() { return wall_clock64(); }

#elif defined(__CUDACC__)
#define GPU_PLATFORM_NVIDIA 1
// Every NVIDIA architecture has 32 threads per warp (CUDA Programming Guide, "Hardware Implementation").
#define GPU_WAVE_SIZE 32
// HIP's mask-less shuffles: all lanes of the warp take part, as in HIP.
template <typename T> __device__ inline T __shfl_down(T v, unsigned int delta, int width = GPU_WAVE_SIZE) {
    return __shfl_down_sync(0xffffffffu, v, delta, width);
}
template <typename T> __device__ inline T __shfl_xor(T v, int mask, int width = GPU_WAVE_SIZE) {
    return __shfl_xor_sync(0xffffffffu, v, mask, width);
}
template <typename T> __device__ inline T __shfl(T v, int lane, int width = GPU_WAVE_SIZE) {
    return __shfl_sync(0xffffffffu, v, lane, width);
}
// HIP spells the global timer wall_clock64; on NVIDIA it is %globaltimer (nanoseconds).
__device__ inline unsigned long long gpu_wall_clock() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#else
#error "kernels must be compiled by hipcc/clang -x hip (AMD) or nvcc (NVIDIA)"
#endif

// Every kernel is extern "C" so the host looks it up by its plain name, on both platforms.
#define GPU_KERNEL extern "C" __global__
