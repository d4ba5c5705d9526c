#!/usr/bin/env bash
# The matmul sweep of issue 32 (docs/matmul.md, "Every shape"): every candidate kernel built here, shipped, and timed
# at every shape against the vendor BLAS in one run on the GPU node.
#
#   scripts/bench/matmul-sweep.sh build DIR        here (no GPU): the release `suite` (stripped), the sm_90 code
#                                                  objects of matmul and matmul_dmma built with the nvcc of the pip
#                                                  wheels CI uses, and the GPU test binary, into DIR
#   scripts/bench/matmul-sweep.sh run DIR OUT [suite run flags...]
#                                                  on the GPU node: `suite run matmul` over SHAPES in FP32 and FP64
#                                                  (the double_buffer, splitk and streamk rungs, the DMMA rung, the
#                                                  vendor BLAS and the autotune step) into OUT, from DIR's objects
#
# DIR travels to the GPU node (the device tool's `carry`); nothing is compiled there. The shapes are none of them a
# power of two and every side is between 64 and 16384: odd squares, an odd rectangular product, skinny (N small),
# flat (M small), K-heavy and short-K products (the suite will be tried at shapes not named here: they stand for
# kinds, not for themselves).
set -euo pipefail
SHAPES="2047,1023x1001x999,256x256x16384,5000,3000x200x5000,4097,1536,16384x96x2048,96x16384x2048,8000x8000x256"
SHAPES="$SHAPES,1000x3000x9000,777x5555x1234,3333,640x640x20000"
FP32_KERNELS=double_buffer,splitk,streamk
FP64_KERNELS=double_buffer,splitk,streamk,dmma

usage() { sed -n 4,10p "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
mode=$1 dir=$2
shift 2
case "$mode" in
build)
    cd "$(dirname "$0")/../.."
    if ! command -v nvcc >/dev/null; then
        nvbin=$(python3 -c 'import nvidia.cu13, os; print(os.path.join(list(nvidia.cu13.__path__)[0], "bin"))')
        export PATH="$nvbin:$PATH"
    fi
    cargo build --release -p suite
    mkdir -p "$dir"
    cp target/release/suite "$dir/suite"
    cargo test --release -p suite --test gpu --no-run --message-format=json 2>/dev/null |
        python3 -c '
import json, shutil, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") and msg["target"]["name"] == "gpu":
        shutil.copy(msg["executable"], sys.argv[1] + "/test-gpu")
' "$dir"
    strip "$dir/suite" "$dir/test-gpu"
    rm -rf "$dir/kernels"
    # launch: the empty kernel whose launches mark the points for the counter pass (--counters).
    "$dir/suite" kernels build --platform nvidia --arch sm_90 --sources matmul,matmul_dmma,launch --out "$dir/kernels"
    nvcc --version | tail -1 >"$dir/kernels/COMPILER"
    ls -la "$dir" "$dir/kernels"
    ;;
run)
    out=${1:?usage: matmul-sweep.sh run DIR OUT [suite run flags...]}
    shift
    "$dir/suite" --platform nvidia run matmul --kernels-dir "$dir/kernels" --sizes "$SHAPES" \
        --kernels "$FP32_KERNELS" --f64-kernels "$FP64_KERNELS" --out "$out" "$@"
    ;;
*) usage ;;
esac
