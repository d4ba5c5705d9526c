#!/usr/bin/env bash
# Every experiment on every GPU of one NVIDIA node, without Slurm: one process per GPU (CUDA_VISIBLE_DEVICES=i),
# each running every n-th point (--shard i/n) into one shared folder, then `suite merge` once all have finished.
# The same pattern as scripts/lumi/node.sbatch, for a node with several NVIDIA GPUs.
# Usage: scripts/multi-gpu.sh OUT_DIR [suite run options, e.g. --full]
#   SUITE_BIN (default target/release/suite), SUITE_GPUS (default: every GPU nvidia-smi lists)
set -euo pipefail
out=${1:?usage: scripts/multi-gpu.sh OUT_DIR [suite run options]}
shift
suite=${SUITE_BIN:-target/release/suite}
gpus=${SUITE_GPUS:-$(nvidia-smi --list-gpus | wc -l)}
[[ $gpus -ge 1 ]] || { echo "multi-gpu: no NVIDIA GPU listed by nvidia-smi" >&2; exit 1; }
mkdir -p "$out"
pids=()
for ((i = 0; i < gpus; i++)); do
    CUDA_VISIBLE_DEVICES=$i "$suite" --platform nvidia run --out "$out" "$@" --shard "$i/$gpus" \
        >"$out/shard-$i.log" 2>&1 &
    pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { echo "multi-gpu: shard $i/$gpus failed, see $out/shard-$i.log" >&2; failed=1; }
done
# A failed shard may still have written rows; merge refuses a set with a shard missing and says which.
"$suite" merge "$out"
exit "$failed"
