#!/usr/bin/env bash
# On a LUMI login node, from the repository root: build the suite and its kernels for gfx90a (MI250X GCDs), so the
# GPU jobs compile nothing. Run it again after every `git pull`.
#   export SBATCH_ACCOUNT=project_<id>   # your project; also used by sbatch for the jobs
#   scripts/lumi/build.sh
# The first time it installs Rust with rustup into /project/$SBATCH_ACCOUNT/$USER/rust (home is too small).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${SBATCH_ACCOUNT:?set SBATCH_ACCOUNT=project_<id> (your LUMI project) first}"
# shellcheck source=scripts/lumi/env.sh
source scripts/lumi/env.sh
if ! command -v cargo >/dev/null; then
    echo "build: installing Rust into $SUITE_RUST_HOME (rustup, stable, minimal profile)" >&2
    # Private: in the shared project directory, nobody else may put commands where PATH will look (env.sh checks).
    mkdir -p "$(dirname "$SUITE_RUST_HOME")"
    [ -d "$SUITE_RUST_HOME" ] || mkdir -m 700 "$SUITE_RUST_HOME"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --no-modify-path
    suite_rust_path
fi
cargo build --release
"$SUITE_BIN" kernels build --arch gfx90a --out "$SUITE_KERNELS"
"$SUITE_BIN" kernels inspect --arch gfx90a --kernels-dir "$SUITE_KERNELS" >/dev/null
echo "build: ready: $SUITE_BIN and $SUITE_KERNELS/ (gfx90a); submit e.g. sbatch scripts/lumi/gcd.sbatch" >&2
