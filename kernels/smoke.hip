// Smoke test: the smallest end-to-end check of the pipeline (compile, load, launch, verify, time).
//
// smoke_triad is the STREAM triad a[i] = b[i] + scalar * c[i]: memory-bound, 12 bytes moved per element
// (two 4-byte reads, one 4-byte write), so its GB/s sits near the device's copy bandwidth when it works.
// Launch: 1-D grid, any group size; items past n do nothing, so n need not divide the grid.
//
// smoke_spin (below) spins for a set time on the device clock.
#include "gpu.h"

GPU_KERNEL void smoke_triad(float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ c,
                            float scalar, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = b[i] + scalar * c[i];
}

// smoke_spin waits until the device clock (gpu_wall_clock(): %globaltimer in ns on NVIDIA, the 100 MHz wall clock
// on CDNA) has advanced by `ticks`, then returns: a kernel of a known duration, which calibrates the runner's
// timing. Launch with one item; more items each wait the same time in parallel.
GPU_KERNEL void smoke_spin(unsigned long long ticks) {
    const unsigned long long start = gpu_wall_clock();
    while (gpu_wall_clock() - start < ticks) {
    }
}
