#!/usr/bin/env bash
# Sourced by every LUMI script: the software stack the suite is built and run with, and where Rust lives.
# LUMI's home directories are small (20 GB), so rustup and cargo live in the project's directory; set
# SUITE_RUST_HOME to put them elsewhere (e.g. /scratch/project_<id>/$USER/rust).

module load LUMI/25.03 partition/G rocm/6.3.4

: "${SUITE_RUST_HOME:=/project/${SBATCH_ACCOUNT:-${SLURM_JOB_ACCOUNT:-project_unset}}/${USER:-$(id -un)}/rust}"
export RUSTUP_HOME="$SUITE_RUST_HOME/rustup" CARGO_HOME="$SUITE_RUST_HOME/cargo"

# suite_writable_by_others DIR: whether DIR (which exists) is someone else's, or a folder others may write into
# (group or world write), where another member of the project could put a `cargo`, `srun` or `sbatch` of their own.
suite_writable_by_others() {
    local owner mode
    read -r owner mode < <(stat -L -c '%u %a' "$1") || return 0
    [ "$owner" != "$(id -u)" ] || [ $((8#$mode & 8#022)) -ne 0 ]
}

# suite_rust_path: puts cargo's bin folder ahead of the system's PATH, but only when it and every folder it is made
# from down from SUITE_RUST_HOME's parent are this user's and closed to others: the project directory is shared by
# the project's group, and a folder there that another member created first (or can write) would let them choose
# what `cargo` (or any command) runs. Refuses otherwise, naming the folder; nothing is added before it exists.
suite_rust_path() {
    local dir
    [ -d "$CARGO_HOME/bin" ] || return 0
    for dir in "$(dirname "$SUITE_RUST_HOME")" "$SUITE_RUST_HOME" "$CARGO_HOME" "$CARGO_HOME/bin"; do
        if suite_writable_by_others "$dir"; then
            echo "env.sh: refusing to put $CARGO_HOME/bin on PATH: $dir ($(stat -L -c 'owner %U, mode %a' "$dir"))" \
                "is another user's or writable by others, who could put their own cargo, srun or sbatch there." \
                "Make it yours and private (chmod go-w $dir), or set SUITE_RUST_HOME to a folder of your own." >&2
            return 1
        fi
    done
    case ":$PATH:" in
    *":$CARGO_HOME/bin:"*) ;;
    *) export PATH="$CARGO_HOME/bin:$PATH" ;;
    esac
}
suite_rust_path || return 1

# The binary and the kernels built ahead of time for the MI250X's GCDs on the login node (scripts/lumi/build.sh):
# no GPU job compiles anything. Set either before submitting to use another build.
: "${SUITE_BIN:=target/release/suite}" "${SUITE_KERNELS:=kernels-build}"
export SUITE_BIN SUITE_KERNELS
