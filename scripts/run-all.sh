#!/usr/bin/env bash
# The main job: build the suite, then run every experiment on this node's GPU into one results folder,
# results/<date>-<host>-<arch>/ (CSV, run.json, PNG). Re-running it after a killed job measures only what is
# missing (--resume). Extra arguments go to every `suite run`, e.g. --platform nvidia or --reps 50.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
suite=target/release/suite
"$suite" "$@" info
# Every experiment the suite knows (its registry), in the registry's order.
for experiment in $("$suite" experiments); do
    "$suite" run "$experiment" --resume "$@"
done
