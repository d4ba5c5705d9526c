// Baseline for `suite bench roundtrip`: the bare CPU-GPU round trip of the persistent-threads experiment (empty
// producer kernel -> blocking 4-byte device-to-host readback -> empty consumer kernel -> stream synchronize), driven
// through the CUDA driver API directly with the same cubin and the same calls the suite makes (cuLaunchKernel on a
// non-blocking stream, cuMemcpyDtoHAsync into pageable memory + cuStreamSynchronize, cuStreamSynchronize). Timed
// with the host clock around COUNT round trips; the median of TRIALS trials after 100 warm-up round trips. The ratio
// suite / this program is the overhead the Rust layers add to the non-PT sequences (goal <= 1.05).
//
// Build: g++ -O2 -std=c++17 pt_roundtrip.cpp -I$CUDA_PATH/include -lcuda -o pt_roundtrip
// Run:   ./pt_roundtrip launch.sm_90.cubin [count=2000] [trials=7] [device=0]
// `suite bench roundtrip --baseline ./pt_roundtrip --cubin launch.sm_90.cubin` runs it with trials=1 between its own
// trials and prints the ratio.
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
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
    const int count = argc > 2 ? std::atoi(argv[2]) : 2000;
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
    CUdeviceptr word;
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&dev, ordinal), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    check(cuModuleLoadData(&mod, image.data()), "cuModuleLoadData");
    check(cuModuleGetFunction(&fn, mod, "launch_empty"), "cuModuleGetFunction");
    check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(cuMemAlloc(&word, 4), "cuMemAlloc");
    check(cuMemsetD8(word, 0, 4), "cuMemsetD8");

    uint32_t host = 0;
    auto round_trip = [&] {
        check(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr), "launch");
        check(cuMemcpyDtoHAsync(&host, word, 4, stream), "cuMemcpyDtoHAsync");
        check(cuStreamSynchronize(stream), "cuStreamSynchronize");
        check(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr), "launch");
        check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    };
    for (int i = 0; i < 100; ++i) round_trip();

    std::vector<double> us;
    for (int t = 0; t < trials; ++t) {
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < count; ++i) round_trip();
        std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
        us.push_back(elapsed.count() / count);
    }
    std::sort(us.begin(), us.end());
    const double median = trials % 2 ? us[trials / 2] : (us[trials / 2 - 1] + us[trials / 2]) / 2;
    std::printf("round_trips=%d trials=%d us_per_round_trip_median=%.4f min=%.4f max=%.4f (C++ driver API)\n", count,
                trials, median, us.front(), us.back());
    check(cuMemFree(word), "cuMemFree");
    return 0;
}
