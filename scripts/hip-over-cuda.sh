#!/usr/bin/env bash
# The AMD code path on an NVIDIA GPU, through the HIP-over-CUDA test runtime (hip-test-runtime/): builds the runtime
# here (g++ and CUDA's cuda.h, no install step), then over it `suite --platform amd info`, the AMD module's GPU test
# (every device operation, graphs and rocBLAS included) and the smoke run. With --compare it also runs every
# experiment's quick preset through the AMD path over the test runtime and through the CUDA path on the same GPU,
# and `suite compare`s them (CUDA first: run 1 is the baseline of every ratio). Everything it writes names the test
# runtime; none of it is an AMD measurement.
# Usage: scripts/hip-over-cuda.sh BIN_DIR OUT_DIR [--compare]   (BIN_DIR from scripts/bundle-gpu-check.sh)
# Every step runs even if an earlier one fails; the exit code is the number of failed steps.
set -uo pipefail
bin=${1:?usage: scripts/hip-over-cuda.sh BIN_DIR OUT_DIR [--compare]}
out=${2:?usage: scripts/hip-over-cuda.sh BIN_DIR OUT_DIR [--compare]}
compare=${3:-}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$out"
failed=0
step() {
    echo "=== $*"
    "$@" || { echo "=== FAILED ($?): $*"; failed=$((failed + 1)); }
}
runtime="$out/hip-test-runtime"
step "$root/hip-test-runtime/build.sh" "$runtime"
# ROCM_PATH is where hip-sys looks first, for libamdhip64.so and librocblas.so alike.
over_cuda=(env ROCM_PATH="$runtime")
step "${over_cuda[@]}" "$bin/suite" --platform amd info
step "${over_cuda[@]}" "$bin/test-suite-lib" --ignored --exact device::amd::tests::gpu_every_operation \
    --test-threads=1 --nocapture
step "${over_cuda[@]}" "$bin/suite" --platform amd run smoke --out "$out/smoke-hip-over-cuda"
if [ "$compare" = "--compare" ]; then
    step "${over_cuda[@]}" "$bin/suite" --platform amd run --out "$out/hip-over-cuda-quick"
    step "$bin/suite" --platform nvidia run --out "$out/cuda-quick"
    step "$bin/suite" compare "$out/cuda-quick" "$out/hip-over-cuda-quick" --out "$out/compare-cuda-vs-hip-over-cuda-quick"
fi
echo "=== hip-over-cuda: $failed step(s) failed"
exit "$failed"
