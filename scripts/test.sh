#!/usr/bin/env bash
# The test command (README): install what the tests need when it is missing, then formatting, lints, then every
# CPU test of the workspace. No GPU needed. A test whose tool (hipcc, nvcc, LLVM 15, libamdhip64) is missing fails;
# scripts/install-test-deps.sh installs them, or says what to install and stops here.
# GPU tests are marked #[ignore = "needs a GPU"]; run them on a GPU node with: cargo test --release -- --ignored
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-deps.sh

# nvcc from the pip wheels (nvidia-cuda-nvcc) lives in site-packages, not on PATH.
if ! command -v nvcc >/dev/null; then
    nvbin=$(python3 -c 'import nvidia.cu13, os; print(os.path.join(list(nvidia.cu13.__path__)[0], "bin"))' 2>/dev/null || true)
    if [ -n "$nvbin" ] && [ -x "$nvbin/nvcc" ]; then
        export PATH="$nvbin:$PATH"
    fi
fi

# The shell and Slurm scripts: they must parse, and pass shellcheck (LUMI's job scripts cannot be run here).
scripts=(.ci/run scripts/*.sh scripts/lumi/* hip-test-runtime/build.sh)
for script in "${scripts[@]}"; do bash -n "$script"; done
shellcheck -x "${scripts[@]}"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# The last binary cargo runs (doc-tests) has no tests, so its closing line would read "0 passed": end with the
# totals over every binary instead.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
awk '/^test result:/ { passed += $4; failed += $6 } END { printf "%d passed, %d failed\n", passed, failed }' "$log"
exit "$status"
