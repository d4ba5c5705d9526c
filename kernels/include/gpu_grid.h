// Grid-wide barrier of a cooperative launch, for kernels that need one (persistent threads' global
// synchronisation). Kept out of gpu.h so that the other kernels do not pull in the cooperative-groups headers.
//
// The barrier is only legal when the kernel was launched cooperatively (hipModuleLaunchCooperativeKernel,
// cuLaunchCooperativeKernel): the runtime then guarantees every group is resident and hands the kernel the
// barrier's workspace. Both headers implement it without relocatable device code (CUDA 11+, HIP 5+).
#pragma once
#include "gpu.h"

#if defined(GPU_PLATFORM_AMD)
#include <hip/hip_cooperative_groups.h>
#elif defined(GPU_PLATFORM_NVIDIA)
#include <cooperative_groups.h>
#endif

// Waits until every item of every group of the grid has reached this point; memory written before it is visible
// to every item after it.
#if defined(GPU_PLATFORM_CPU)
// The CPU emulation runs one group at a time, so it passes only a grid of one group (gpu_cpu.h says why).
inline void gpu_grid_sync(std::source_location at = std::source_location::current()) { gpu_cpu::grid_sync(at); }
#else
__device__ inline void gpu_grid_sync() { cooperative_groups::this_grid().sync(); }
#endif
