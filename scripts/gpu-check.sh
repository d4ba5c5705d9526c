#!/usr/bin/env bash
# The whole GPU check of the suite, in one go, on a GPU node: device info, kernel resources, the smoke run, every
# GPU test (ignored ones included; the timer's calibration among them; the counter pass under the vendor profiler), the launch-overhead benchmark against a
# C++ driver-API baseline (NVIDIA), and on NVIDIA the AMD code path over the HIP-over-CUDA test runtime
# (scripts/hip-over-cuda.sh: it builds the runtime here with g++, no install step).
# Usage: scripts/gpu-check.sh BIN_DIR OUT_DIR   (BIN_DIR from scripts/bundle-gpu-check.sh, or target/release)
# Every step runs even if an earlier one fails; the exit code is the number of failed steps.
set -uo pipefail
bin=${1:?usage: scripts/gpu-check.sh BIN_DIR OUT_DIR}
out=${2:?usage: scripts/gpu-check.sh BIN_DIR OUT_DIR}
mkdir -p "$out"
failed=0
step() {
    echo "=== $*"
    "$@" || { echo "=== FAILED ($?): $*"; failed=$((failed + 1)); }
}
step "$bin/suite" info
step "$bin/suite" kernels inspect
step "$bin/suite" run smoke --out "$out/smoke"
# The GPU tests (ignored by default), then the library's own GPU tests (its CPU tests run in CI, and need hipcc
# and clang, which a GPU node may lack); run from the repository root, where the tests find their fixtures. One thread: the tests share one GPU and the calibration test times kernels on it;
# --nocapture shows its figures (the spin kernel at 5, 20, 100 µs, the gap between back-to-back launches).
step "$bin/test-gpu" --include-ignored --test-threads=1 --nocapture
# The counter pass over the quick preset (docs/counters.md): needs the vendor profiler too (ncu that may read the
# counters, or rocprofv3), and fails saying so where it is missing; prints every point's counters.
SUITE_BIN="$bin/suite" step "$bin/test-gpu_counters" --include-ignored --test-threads=1 --nocapture every_quick_point
# The AMD device test needs an AMD GPU: skipped by name where HIP sees none (an NVIDIA node).
amd_only=()
"$bin/suite" --platform amd info >/dev/null 2>&1 || amd_only=(--skip device::amd::)
step "$bin/test-suite-lib" --ignored --test-threads=1 "${amd_only[@]}"
if "$bin/suite" --platform nvidia info >/dev/null 2>&1; then
    arch=$("$bin/suite" --platform nvidia info | sed -n 's/^  device 0: .*(\(sm_[0-9a-z]*\)[,)].*/\1/p')
    step "$bin/suite" kernels build --arch "$arch" --sources launch --out "$out/prebuilt"
    cuda=${CUDA_PATH:-/usr/local/cuda}
    step g++ -O2 -std=c++17 scripts/bench/launch_overhead.cpp -I"$cuda/include" -L"$cuda/lib64" -L"$cuda/lib64/stubs" \
        -lcuda -o "$out/launch_overhead"
    # The suite alternates its own trials with the C++ program's (as a child process, same cubin), so drift in
    # clocks or load hits both alike, and prints both medians and the ratio. `--platform nvidia` skips probing the
    # HIP runtime first (auto does, and a HIP runtime may be installed on an NVIDIA node).
    step "$bin/suite" --platform nvidia bench launch --count 10000 --trials 15 \
        --baseline "$out/launch_overhead" --cubin "$out/prebuilt/launch.$arch.cubin"
    # The AMD path (hip-sys, device/amd, rocBLAS calls) on this GPU; add --compare to the script for the quick
    # preset on both paths and their comparison.
    step "$(dirname "$0")/hip-over-cuda.sh" "$bin" "$out/hip-over-cuda"
fi
echo "=== $failed step(s) failed"
exit "$failed"
