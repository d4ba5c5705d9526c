#!/usr/bin/env bash
# The main job: build the suite, then run every experiment on this node's GPU into one results folder (CSV,
# run.json, PNG): results/<commit>[-dirty]-<host>/, or $SUITE_OUT when set (use it instead of --out).
# Re-running it after a killed job measures only what is missing (--resume). The folder is named after the commit,
# so a new commit (kernel sources, suite) starts a new folder instead of resuming next to rows of older code;
# anything else that makes rows incomparable (other options, compiler, device, edits to a -dirty tree) is refused
# by `suite run`'s fingerprint check, which names what differs: then set SUITE_OUT or delete the folder.
# Extra arguments go to every `suite run`, e.g. --platform nvidia or --reps 50.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
suite=target/release/suite
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [[ $commit != unknown ]] && ! git diff --quiet HEAD --; then commit+=-dirty; fi
out=${SUITE_OUT:-results/$commit-$(hostname -s)}
"$suite" "$@" info
# Every experiment the suite knows (its registry), in the registry's order.
for experiment in $("$suite" experiments); do
    "$suite" run "$experiment" --resume --out "$out" "$@"
done
