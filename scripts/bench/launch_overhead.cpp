// Baseline for `suite bench launch`: the same empty kernel from the same cubin, launched through the CUDA driver
// API directly, timed the same way (host clock around COUNT launches on a non-blocking stream, then one stream
// synchronize; the median of TRIALS trials after 100 warm-up launches). The ratio suite / this program is the
// overhead the Rust layers add to a launch.
//
// Build: g++ -O2 -std=c++17 launch_overhead.cpp -I$CUDA_PATH/include -lcuda -o launch_overhead
// Run:   ./launch_overhead launch.sm_90.cubin [count=10000] [trials=7] [device=0]
// (the cubin of kernels/launch.hip: `suite kernels build --arch sm_90 --sources launch --out DIR`)
// `suite bench launch --baseline ./launch_overhead --cubin launch.sm_90.cubin` runs it with trials=1 between its own
// trials and prints the ratio.
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

static void check(CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) {
        const char* name = nullptr;
        cuGetErrorName(r, &name);
        std::fprintf(stderr, "%s failed: %s\n", what, name ? name : "?");
        std::exit(1);
    }
}

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s CUBIN [count] [trials] [device]\n", argv[0]);
        return 2;
    }
    const int count = argc > 2 ? std::atoi(argv[2]) : 10000;
    const int trials = argc > 3 ? std::atoi(argv[3]) : 7;
    const int ordinal = argc > 4 ? std::atoi(argv[4]) : 0;
    if (count < 1 || trials < 1) {
        std::fprintf(stderr, "count and trials must be at least 1\n");
        return 2;
    }
    std::ifstream file(argv[1], std::ios::binary);
    if (!file) {
        std::fprintf(stderr, "cannot read %s\n", argv[1]);
        return 1;
    }
    std::vector<char> image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());

    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUstream stream;
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&dev, ordinal), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    check(cuModuleLoadData(&mod, image.data()), "cuModuleLoadData");
    check(cuModuleGetFunction(&fn, mod, "launch_empty"), "cuModuleGetFunction");
    check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

    for (int i = 0; i < 100; ++i) check(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr), "launch");
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");

    std::vector<double> us;
    for (int t = 0; t < trials; ++t) {
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < count; ++i)
            check(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr), "launch");
        check(cuStreamSynchronize(stream), "cuStreamSynchronize");
        std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
        us.push_back(elapsed.count() / count);
    }
    std::sort(us.begin(), us.end());
    const double median = trials % 2 ? us[trials / 2] : (us[trials / 2 - 1] + us[trials / 2]) / 2;
    std::printf("launches=%d trials=%d us_per_launch_median=%.4f min=%.4f max=%.4f (C++ driver API)\n", count, trials,
                median, us.front(), us.back());
    return 0;
}
