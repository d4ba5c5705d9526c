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
// 64-bit counter of a constant-rate clock, comparable across CUs (for occupancy timelines). Its rate in kHz is
// hipDeviceAttributeWallClockRate (100 MHz on MI200, i.e. 10 ns per tick).
__device__ inline unsigned long long gpu_wall_clock() { return wall_clock64(); }

// Encodes s_getreg_b32's operand: hardware register `reg`, `size` bits from bit `offset` (LLVM's hwreg syntax).
#define GPU_HWREG(reg, offset, size) ((((size)-1) << 11) | ((offset) << 6) | (reg))

// Id of the compute unit the calling wave runs on: unique within the device, but sparse (the host maps the values
// it sees onto 0..CUs-1). A wave never moves to another CU, so one read per wave is enough.
__device__ inline unsigned gpu_cu_id() {
#if defined(__GFX9__)
    // HW_REG_HW_ID (hwreg 4) on gfx9/CDNA: CU_ID in bits 11:8, SH_ID in 12, SE_ID from bit 13 up. HIP's __smid()
    // reads only SE bits 14:13 and no SH_ID, so two CUs can share its value; ROCR's CU-masking test reads the 8
    // bits 15:8 on gfx908/gfx90a/gfx940 (CDNA has up to 8 SEs), and so do we: CU | SH << 4 | SE << 5.
    unsigned id = __builtin_amdgcn_s_getreg(GPU_HWREG(4, 8, 8));
#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
    // MI300: the same (SE, SH, CU) repeats on every XCC (chiplet); HW_REG_XCC_ID (hwreg 20) bits 3:0 tell them apart.
    id |= __builtin_amdgcn_s_getreg(GPU_HWREG(20, 0, 4)) << 8;
#endif
    return id;
#elif defined(__GFX10__) || defined(__GFX11__) || defined(__GFX12__)
    // RDNA has no HW_ID; HW_REG_HW_ID1 (hwreg 23) holds WGP_ID 13:10, SA_ID 16, SE_ID 20:18. This names a work-group
    // processor (two CUs), the unit a work-group is placed on in the default WGP mode.
    const unsigned r = __builtin_amdgcn_s_getreg(GPU_HWREG(23, 0, 32));
    return ((r >> 18) & 7u) << 5 | ((r >> 16) & 1u) << 4 | ((r >> 10) & 15u);
#else
    return __smid();  // other architectures (and hipcc's host pass, which parses but never runs this)
#endif
}

// Asks the compiler to keep at least `waves` waves of the kernel resident per SIMD, i.e. to stay within
// 512 / waves VGPRs+AGPRs per lane (gfx90a: 4 waves -> 128). It spills to scratch rather than exceed that, which
// the metadata then shows (private segment > 0). NVIDIA has no per-SIMD form of this: it expands to nothing.
#define GPU_AMD_MIN_WAVES_PER_SIMD(waves) __attribute__((amdgpu_waves_per_eu(waves)))

// Waits until every item of the calling wave has reached this point. A wave runs in lockstep on AMD, so this only
// stops the compiler from moving code across it.
__device__ inline void gpu_wave_sync() { __builtin_amdgcn_wave_barrier(); }

// Loads 16 bytes that another group of this launch wrote (and published with __threadfence() and an atomic), past
// this CU's L1. On gfx90a __threadfence() is an agent-scope fence that also invalidates the CU's L1 (the acquire
// half), so an ordinary load after it reads from L2.
__device__ inline float4 gpu_load_from_l2(const float4* p) { return *p; }
__device__ inline double2 gpu_load_from_l2(const double2* p) { return *p; }

// The CDNA matrix instructions (MFMA) of matmul's matrix rungs: v_mfma_f32_32x32x2f32, v_mfma_f32_16x16x4f32 and
// v_mfma_f64_16x16x4f64, called through clang's builtins. gfx90a (MI200) and gfx940/941/942 (MI300) have all three;
// gfx908 (MI100) lacks the FP64 one, RDNA and NVIDIA have none. GPU_HAS_MFMA says the architecture being compiled
// has them (the kernels that use them are compiled only then); the vector types are the builtins' C operands and
// results (BuiltinsAMDGPU.def: V16f, V4f, V4d).
#if defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define GPU_HAS_MFMA 1
#endif
typedef float gpu_floatx4 __attribute__((ext_vector_type(4)));
typedef float gpu_floatx16 __attribute__((ext_vector_type(16)));
typedef double gpu_doublex4 __attribute__((ext_vector_type(4)));

#elif defined(__CUDACC__)
#define GPU_PLATFORM_NVIDIA 1
// Every NVIDIA architecture has 32 threads per warp (CUDA Programming Guide, "Hardware Implementation").
#define GPU_WAVE_SIZE 32
// See the AMD definition: a register budget per SIMD that only AMD's compiler takes.
#define GPU_AMD_MIN_WAVES_PER_SIMD(waves)
// HIP's mask-less shuffles: all lanes of the warp take part, as in HIP.
template <typename T> __device__ inline T __shfl_down(T v, unsigned int delta, int width = GPU_WAVE_SIZE) {
    return __shfl_down_sync(0xffffffffu, v, delta, width);
}
template <typename T> __device__ inline T __shfl_up(T v, unsigned int delta, int width = GPU_WAVE_SIZE) {
    return __shfl_up_sync(0xffffffffu, v, delta, width);
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
// Id of the SM the calling warp runs on (%smid): unique within the device, but the PTX manual does not promise the
// values are contiguous, so the host maps the values it sees onto 0..SMs-1. volatile: the value is read, not
// computed, and must not be merged with another read.
__device__ inline unsigned gpu_cu_id() {
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}
// Waits until every item of the calling warp has reached this point. Since Volta the lanes of a warp are scheduled
// independently and may run apart after divergent code, so this is a real __syncwarp over the lanes that exist: a
// group whose size is not a multiple of 32 has a last warp with fewer lanes, and a full mask would name lanes that
// never arrive. Every existing lane of the warp must call it.
__device__ inline void gpu_wave_sync() {
    const unsigned size = blockDim.x * blockDim.y * blockDim.z;
    const unsigned linear = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned first = linear - linear % GPU_WAVE_SIZE;  // linear id of lane 0 of this warp
    const unsigned lanes = size - first < GPU_WAVE_SIZE ? size - first : GPU_WAVE_SIZE;
    __syncwarp(lanes == GPU_WAVE_SIZE ? 0xffffffffu : (1u << lanes) - 1u);
}
// Loads 16 bytes that another group of this launch wrote (and published with __threadfence() and an atomic), past
// this SM's L1, which is not kept coherent with other SMs' stores: ld.global.cg caches in L2 only.
__device__ inline float4 gpu_load_from_l2(const float4* p) { return __ldcg(p); }
__device__ inline double2 gpu_load_from_l2(const double2* p) { return __ldcg(p); }
#elif defined(GPU_CPU_EMULATION)
// g++ on the host, for the CPU tests of the wave-size logic (suite/tests/wave64_cpu.rs): the emulation header, on
// the include path those tests give, defines everything the two halves above define, with GPU_WAVE_SIZE from
// -DGPU_CPU_WAVE_SIZE=64 or 32. It is not a platform the suite runs on.
#define GPU_PLATFORM_CPU 1
#include "gpu_cpu.h"
#else
#error "kernels must be compiled by hipcc/clang -x hip (AMD) or nvcc (NVIDIA)"
#endif

// The launch's dynamic LDS (its dynamic_lds_bytes) as an array `name` of `type`. A macro so that the CPU emulation,
// whose __shared__ is a static variable, can give it the launch's buffer instead.
#if !defined(GPU_DYNAMIC_LDS)
#define GPU_DYNAMIC_LDS(type, name) extern __shared__ type name[]
#endif

// Every kernel is extern "C" so the host looks it up by its plain name, on both platforms.
#define GPU_KERNEL extern "C" __global__
