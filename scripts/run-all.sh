#!/usr/bin/env bash
# The main job on a GPU node: build the suite, then run every experiment (`suite run`: each one's quick preset,
# about a minute on an H100; pass --full for the complete sweeps) into one results folder with CSV, run.json, PNG
# plots and summary.md (read it first): results/<commit>[-dirty]-<host>-<quick|full>/, or $SUITE_OUT when set.
# Re-running it after a killed job measures only what is missing (--resume). The folder is named after the commit,
# so a new commit (kernel sources, suite) starts a new folder instead of resuming next to rows of older code;
# anything else that makes rows incomparable (other options, compiler, device, edits to a -dirty tree) is refused by `suite run`'s fingerprint check, which names what differs: then set SUITE_OUT or
# delete the folder. Extra arguments go to `suite run`, e.g. --full, --platform nvidia (before run: use
# SUITE_GLOBAL) or --reps 50.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
suite=target/release/suite
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [[ $commit != unknown ]] && ! git diff --quiet HEAD --; then commit+=-dirty; fi
preset=quick
for arg in "$@"; do [[ $arg == --full ]] && preset=full; done
out=${SUITE_OUT:-results/$commit-$(hostname -s)-$preset}
read -r -a global <<<"${SUITE_GLOBAL:-}"
"$suite" "${global[@]}" info
"$suite" "${global[@]}" run --resume --out "$out" "$@"
