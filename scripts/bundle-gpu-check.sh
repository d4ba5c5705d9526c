#!/usr/bin/env bash
# Builds release binaries here and copies them, with stable names, into DIR for a GPU node that has no Rust
# toolchain: DIR/suite plus one executable per test target (DIR/test-<target>). Run them there with
# scripts/gpu-check.sh DIR OUT. Binaries built on x86-64 Linux run on other x86-64 Linux nodes of the same
# glibc generation.
set -euo pipefail
dir=${1:?usage: scripts/bundle-gpu-check.sh DIR}
cd "$(dirname "$0")/.."
cargo build --release -p suite
mkdir -p "$dir"
cp target/release/suite "$dir/suite"
cargo test --release -p suite --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, shutil, sys
out = sys.argv[1]
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") and msg["profile"]["test"]:
        name = msg["target"]["name"] + ("-lib" if msg["target"]["kind"] == ["lib"] else "")
        shutil.copy(msg["executable"], f"{out}/test-{name}")
        print(f"{out}/test-{name}")
' "$dir"
# Line tables make the binaries 5x larger; a GPU node needs none of them to run.
strip "$dir"/suite "$dir"/test-*
# The HIP-over-CUDA test runtime is built on the GPU node (against its own cuda.h) by scripts/hip-over-cuda.sh;
# a copy of its sources and of the scripts travels with the binaries, for a node whose checkout is older.
mkdir -p "$dir/src/scripts"
cp -r hip-test-runtime "$dir/src/"
cp scripts/gpu-check.sh scripts/hip-over-cuda.sh "$dir/src/scripts/"
ls -la "$dir"
