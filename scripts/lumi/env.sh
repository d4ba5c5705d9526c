#!/usr/bin/env bash
# Sourced by every LUMI script: the software stack the suite is built and run with, and where Rust lives.
# LUMI's home directories are small (20 GB), so rustup and cargo live in the project's directory; set
# SUITE_RUST_HOME to put them elsewhere (e.g. /scratch/project_<id>/$USER/rust).

module load LUMI/25.03 partition/G rocm/6.3.4

: "${SUITE_RUST_HOME:=/project/${SBATCH_ACCOUNT:-${SLURM_JOB_ACCOUNT:-project_unset}}/${USER:-$(id -un)}/rust}"
export RUSTUP_HOME="$SUITE_RUST_HOME/rustup" CARGO_HOME="$SUITE_RUST_HOME/cargo"
export PATH="$CARGO_HOME/bin:$PATH"

# The binary and the kernels built ahead of time for the MI250X's GCDs on the login node (scripts/lumi/build.sh):
# no GPU job compiles anything. Set either before submitting to use another build.
: "${SUITE_BIN:=target/release/suite}" "${SUITE_KERNELS:=kernels-build}"
export SUITE_BIN SUITE_KERNELS
