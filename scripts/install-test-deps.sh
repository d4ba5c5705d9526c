#!/usr/bin/env bash
# Installs what the CPU tests need, when it is missing (scripts/test.sh and .ci/run call this first):
#  - Debian's HIP 5.2 (hipcc, libamdhip64, the device libraries; clang 15 and LLVM 15's llvm-readelf and
#    clang-offload-bundler) for the gfx90a compile tests, the code-object metadata tests and the "HIP runtime,
#    no GPU" tests;
#  - g++ (C++20), which builds the kernels for the CPU emulation of wave64 (suite/tests/wave64_cpu.rs) and the
#    HIP-over-CUDA test runtime;
#  - shellcheck, which lints the shell and Slurm scripts;
#  - Debian's Slurm and munge (slurm-wlm), which run the LUMI job scripts on a one-machine cluster
#    (suite/tests/slurm.rs, through scripts/slurm-test-cluster.sh);
#  - CUDA 13's nvcc from PyPI wheels for the sm_90 compile tests (nothing here runs a CUDA kernel), whose cuda.h
#    also builds the HIP-over-CUDA test runtime (hip-test-runtime/build.sh);
#  - hip-python 6.3.3 from PyPI, whose extension is compiled from ROCm 6.3's HIP headers: hip-sys's ABI test reads
#    the struct layouts, enum values and prototypes out of it (hip-sys/tests/rocm63_abi.rs);
#  - ziglang 0.13.0 from PyPI, whose zig binary carries upstream clang 18.1.6 with the AMDGPU back end and lld: a
#    second, newer compiler for the gfx90a kernels (with Debian's HIP headers and device libraries), so the tests
#    show how register use spreads between compilers and check that the matmul kernels chosen from each compiler's
#    code objects neither spill nor use scratch (suite/src/code_objects/zig.rs, suite/src/experiments/matmul/fit.rs).
# A test whose tool is missing fails, so when this cannot install (not root, no network) it prints exactly what
# to install and exits non-zero. Nothing is installed when everything is present.
set -euo pipefail

APT_PACKAGES=(g++ hipcc libamdhip64-dev rocm-device-libs llvm-15 shellcheck slurm-wlm munge)
PIP_PACKAGES=(nvidia-cuda-nvcc nvidia-cuda-runtime nvidia-cuda-cccl nvidia-cuda-crt nvidia-cuda-cuobjdump
    hip-python==6.3.3.540.31 ziglang==0.13.0)

have() { command -v "$1" >/dev/null 2>&1; }
# nvcc from the wheels lives in site-packages, not on PATH (scripts/test.sh adds it).
pip_nvcc() {
    local dir
    dir=$(python3 -c 'import nvidia.cu13, os; print(os.path.join(list(nvidia.cu13.__path__)[0], "bin"))' 2>/dev/null) &&
        [ -x "$dir/nvcc" ]
}
hip_python() {
    python3 -c 'import sys; from importlib.metadata import version; sys.exit(version("hip-python") != "6.3.3.540.31")' \
        2>/dev/null
}
ziglang() {
    python3 -c 'import sys; from importlib.metadata import version; sys.exit(version("ziglang") != "0.13.0")' 2>/dev/null
}
hip_runtime() {
    { [ -n "${ROCM_PATH:-}" ] && ls "$ROCM_PATH"/lib/libamdhip64.so* >/dev/null 2>&1; } ||
        ls /opt/rocm/lib/libamdhip64.so* >/dev/null 2>&1 ||
        { PATH="$PATH:/usr/sbin:/sbin" ldconfig -p 2>/dev/null | grep -q 'libamdhip64\.so'; }
}

# What is missing: "apt" or "pip" needs, with the reason for each.
missing_apt=() missing_pip=()
check() {
    missing_apt=() missing_pip=()
    have g++ || missing_apt+=("g++ (builds the CPU emulation of the kernels and the HIP-over-CUDA test runtime)")
    have hipcc || missing_apt+=("hipcc (AMD kernel compiler)")
    hip_runtime || missing_apt+=("libamdhip64 (HIP runtime)")
    have llvm-readelf-15 || have llvm-readelf || missing_apt+=("llvm-readelf-15")
    have clang-offload-bundler || [ -x /usr/lib/llvm-15/bin/clang-offload-bundler ] ||
        missing_apt+=("clang-offload-bundler (llvm-15)")
    have shellcheck || missing_apt+=("shellcheck (lints the job scripts)")
    local daemon
    for daemon in munged slurmctld slurmd; do
        have "$daemon" || [ -x "/usr/sbin/$daemon" ] || missing_apt+=("$daemon (the job-script tests' Slurm cluster)")
    done
    have sbatch || missing_apt+=("sbatch (slurm-client: the job-script tests submit with it)")
    have nvcc || pip_nvcc || missing_pip+=("nvcc (NVIDIA kernel compiler)")
    hip_python || missing_pip+=("hip-python 6.3.3 (ROCm 6.3's HIP ABI, for hip-sys's layout test)")
    ziglang || missing_pip+=("ziglang 0.13.0 (clang 18.1.6: the second gfx90a compiler of the spread test)")
}

instructions() {
    echo "The tests need these, and each test that uses a missing one fails:" >&2
    for m in "${missing_apt[@]}" "${missing_pip[@]}"; do echo "  missing: $m" >&2; done
    echo "Install them (as root) with:" >&2
    [ ${#missing_apt[@]} -eq 0 ] || echo "  apt-get update && apt-get install -y ${APT_PACKAGES[*]}" >&2
    [ ${#missing_pip[@]} -eq 0 ] || echo "  python3 -m pip install ${PIP_PACKAGES[*]}" >&2
    echo "then run scripts/test.sh again." >&2
}

check
if [ ${#missing_apt[@]} -eq 0 ] && [ ${#missing_pip[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-test-deps: not root, so nothing was installed." >&2
    instructions
    exit 1
fi
if [ ${#missing_apt[@]} -gt 0 ]; then
    echo "install-test-deps: apt-get install ${APT_PACKAGES[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -qq && apt-get install -y -qq "${APT_PACKAGES[@]}" >/dev/null; }; then
        echo "install-test-deps: apt-get failed (offline?)." >&2
        instructions
        exit 1
    fi
fi
if [ ${#missing_pip[@]} -gt 0 ]; then
    echo "install-test-deps: pip install ${PIP_PACKAGES[*]}" >&2
    if ! python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "${PIP_PACKAGES[@]}"; then
        echo "install-test-deps: pip failed (offline?)." >&2
        instructions
        exit 1
    fi
fi
check
if [ ${#missing_apt[@]} -gt 0 ] || [ ${#missing_pip[@]} -gt 0 ]; then
    echo "install-test-deps: still missing after installing." >&2
    instructions
    exit 1
fi
