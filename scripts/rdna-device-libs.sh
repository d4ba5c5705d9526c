#!/usr/bin/env bash
# Makes a ROCm device-library folder that Debian's HIP 5.2 (hipcc, clang 15) can build gfx1100-family (RDNA3) kernels
# with, for `suite kernels compare --arch ...,gfx1100` on a machine without ROCm:
#   scripts/rdna-device-libs.sh /tmp/rdna-bitcode
#   DEVICE_LIB_PATH=/tmp/rdna-bitcode suite kernels compare --arch gfx90a,sm_90,gfx1100 --out DIR
# (Debian's hipcc passes $DEVICE_LIB_PATH to clang as --hip-device-lib-path.)
#
# Why: Debian's rocm-device-libs 5.2 ships no oclc_isa_version_11xx.bc, so clang stops with "cannot find ROCm device
# library for gfx1100". That file holds one constant, __oclc_ISA_version = major*1000 + minor*100 + stepping, which
# the device library reads to pick code paths. It is built here from the gfx1030 one's IR with the number changed,
# exactly as ROCm-Device-Libs generates one file per ISA (oclc/src/isa_version_*.cl). ROCm 5.5 and later ship these
# files: on LUMI (ROCm 6.3) nothing of this is needed.
# Needs llvm-dis-15 and llvm-as-15 (Debian package llvm-15, installed with hipcc).
set -euo pipefail
out=${1:?usage: scripts/rdna-device-libs.sh OUT_DIR}
src=${ROCM_BITCODE:-/usr/lib/$(uname -m)-linux-gnu/amdgcn/bitcode}
[ -f "$src/oclc_isa_version_1030.bc" ] || { echo "no $src/oclc_isa_version_1030.bc: apt-get install rocm-device-libs" >&2; exit 1; }
mkdir -p "$out"
cp "$src"/*.bc "$out"/
for isa in 1100 1101 1102 1103; do
    [ -f "$out/oclc_isa_version_$isa.bc" ] && continue
    llvm-dis-15 "$src/oclc_isa_version_1030.bc" -o - | sed "s/constant i32 10300,/constant i32 ${isa}0,/" |
        llvm-as-15 -o "$out/oclc_isa_version_$isa.bc"
    llvm-dis-15 "$out/oclc_isa_version_$isa.bc" -o - | grep -q "constant i32 ${isa}0," ||
        { echo "oclc_isa_version_$isa.bc: the version constant was not rewritten" >&2; exit 1; }
done
echo "$out"
