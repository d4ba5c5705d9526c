// The launch path alone: an empty kernel, shared by everything that measures what one launch costs rather than
// what a kernel does, so none of them borrows an experiment's source.
//
// launch_empty does nothing: timing many launches of it back to back measures the launch gap recorded in
// run.json (suite/src/experiments/timing.rs), and `suite bench launch` times it against a C++ program on the
// driver API (scripts/bench/launch_overhead.cpp), which loads it by name from the same cubin.
// Launch: one item; it reads and writes nothing.
#include "gpu.h"

GPU_KERNEL void launch_empty() {}
