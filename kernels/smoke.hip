// Smoke test: the smallest end-to-end check of the pipeline (compile, load, launch, verify, time).
//
// smoke_triad is the STREAM triad a[i] = b[i] + scalar * c[i]: memory-bound, 12 bytes moved per element
// (two 4-byte reads, one 4-byte write), so its GB/s sits near the device's copy bandwidth when it works.
// Launch: 1-D grid, any group size; items past n do nothing, so n need not divide the grid.
//
// smoke_empty does nothing: timing many launches of it measures launch overhead alone (the spine's
// benchmark of the suite's launch path against a C++ program on the driver API).
#include "gpu.h"

GPU_KERNEL void smoke_triad(float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ c,
                            float scalar, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = b[i] + scalar * c[i];
}

GPU_KERNEL void smoke_empty() {}
