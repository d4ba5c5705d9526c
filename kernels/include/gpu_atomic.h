// Device-scope atomics with an explicit memory order, for kernels whose groups talk to each other through global
// memory while they run (persistent threads' software grid barrier). Kept out of gpu.h: only those kernels need it.
//
// Why not __threadfence() and volatile: __threadfence() is a sequentially consistent fence (fence.sc.gpu on NVIDIA),
// and a volatile load is not an atomic in either vendor's memory model. A release on the arrival and one acquire
// fence after the wait say exactly what a barrier needs, as the vendors' own grid barriers do (CUDA's
// cooperative_groups grid sync arrives with atom.add.release.gpu). "Device scope" is the GPU (NVIDIA .gpu, AMD
// agent): every group of one launch, not the host.
#pragma once
#include "gpu.h"

#if defined(GPU_PLATFORM_AMD)
// Adds v to *p and returns the old value; every write of the calling item before it (and, after a __syncthreads(),
// of its whole group) is visible to whoever observes the new value and then acquires.
__device__ inline unsigned gpu_atomic_add_release(unsigned* p, unsigned v) {
    return __hip_atomic_fetch_add(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
}
// Reads *p as an atomic at device scope (past this CU's L1), with no ordering of its own: for polling.
__device__ inline unsigned gpu_atomic_load_relaxed(const unsigned* p) {
    return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
// Writes *p as an atomic at device scope, with no ordering of its own.
__device__ inline void gpu_atomic_store_relaxed(unsigned* p, unsigned v) {
    __hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
// Acquire at device scope: after a relaxed load that saw a released value, the writes released before it are
// visible to the calling item's later loads (on gfx90a it also invalidates the CU's L1).
__device__ inline void gpu_fence_acquire() { __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "agent"); }
#elif defined(GPU_PLATFORM_CPU)
// The CPU emulation of the wave64 tests (suite/tests/gpu_cpu/) runs one group at a time, so no other group can be
// waiting: plain operations keep the kernels' logic (the barrier itself cannot run there, see wave64_cpu.rs).
__device__ inline unsigned gpu_atomic_add_release(unsigned* p, unsigned v) {
    unsigned old = *p;
    *p = old + v;
    return old;
}
__device__ inline unsigned gpu_atomic_load_relaxed(const unsigned* p) { return *p; }
__device__ inline void gpu_atomic_store_relaxed(unsigned* p, unsigned v) { *p = v; }
__device__ inline void gpu_fence_acquire() {}
#else
__device__ inline unsigned gpu_atomic_add_release(unsigned* p, unsigned v) {
    unsigned old;
    asm volatile("atom.add.release.gpu.global.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}
__device__ inline unsigned gpu_atomic_load_relaxed(const unsigned* p) {
    unsigned v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ inline void gpu_atomic_store_relaxed(unsigned* p, unsigned v) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// PTX has no acquire-only fence: fence.acq_rel.gpu is the lightest one that acquires.
__device__ inline void gpu_fence_acquire() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
#endif
