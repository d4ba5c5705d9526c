#!/usr/bin/env bash
# One task of a multi-GCD job (scripts/lumi/node.sbatch runs one per GCD through srun): it sees only its own GCD
# and runs its shard of every point. Arguments: the suite's, up to and including `run` and its options; the shard
# is appended here, where Slurm has set this task's rank.
set -euo pipefail
export ROCR_VISIBLE_DEVICES=$SLURM_LOCALID
exec "${SUITE_BIN:-target/release/suite}" "$@" --shard "$SLURM_PROCID/$SLURM_NTASKS"
