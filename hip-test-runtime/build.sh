#!/usr/bin/env bash
# Builds the HIP-over-CUDA test runtime into OUT_DIR/lib: libhip-over-cuda-test-runtime.so (the HIP API over the
# CUDA driver API) and librocblas-over-cublas-test-runtime.so (rocBLAS over cuBLAS), each also under the names the
# suite's loader looks for (libamdhip64.so, .so.6; librocblas.so, .so.4). Point the suite at them with
#   ROCM_PATH=OUT_DIR suite --platform amd ...
# Needs a C++17 compiler ($CXX, default g++) and CUDA's cuda.h: $CUDA_PATH/include, /usr/local/cuda/include, or the
# nvidia-cuda-runtime wheel's (pip). No CUDA library is linked: libcuda and libcublas are opened at run time.
# Usage: hip-test-runtime/build.sh OUT_DIR
set -euo pipefail
out=${1:?usage: hip-test-runtime/build.sh OUT_DIR}
src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cxx=${CXX:-g++}

include=""
tried=()
for dir in ${CUDA_PATH:+"$CUDA_PATH/include"} /usr/local/cuda/include \
    "$(python3 -c 'import nvidia.cu13, os; print(os.path.join(list(nvidia.cu13.__path__)[0], "include"))' 2>/dev/null || true)"; do
    [ -n "$dir" ] || continue
    if [ -f "$dir/cuda.h" ]; then
        include=$dir
        break
    fi
    tried+=("$dir")
done
if [ -z "$include" ]; then
    echo "error: cuda.h not found (tried: ${tried[*]:-nothing}); set CUDA_PATH, or python3 -m pip install nvidia-cuda-runtime" >&2
    exit 1
fi

mkdir -p "$out/lib"
flags=(-std=c++17 -O2 -fPIC -shared -fvisibility=hidden -Wall -Wextra -Werror)
"$cxx" "${flags[@]}" -isystem "$include" -Wl,--version-script="$src/hip.map" -Wl,-soname,libhip-over-cuda-test-runtime.so \
    -o "$out/lib/libhip-over-cuda-test-runtime.so" "$src/hip_over_cuda.cpp" -ldl
"$cxx" "${flags[@]}" -Wl,--version-script="$src/rocblas.map" -Wl,-soname,librocblas-over-cublas-test-runtime.so \
    -o "$out/lib/librocblas-over-cublas-test-runtime.so" "$src/rocblas_over_cublas.cpp" -ldl
for name in libamdhip64.so libamdhip64.so.6; do
    ln -sf libhip-over-cuda-test-runtime.so "$out/lib/$name"
done
for name in librocblas.so librocblas.so.4; do
    ln -sf librocblas-over-cublas-test-runtime.so "$out/lib/$name"
done
echo "HIP over CUDA test runtime in $out/lib (cuda.h from $include): ROCM_PATH=$out"
