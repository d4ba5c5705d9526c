#!/usr/bin/env bash
# On a LUMI login node, from the repository root: check a job's arguments and print its plan before anything is
# queued, then submit it.
#   scripts/lumi/submit.sh [sbatch options] <gcd|dev|node>[.sbatch] [suite run arguments]
#   scripts/lumi/submit.sh node --full
#   scripts/lumi/submit.sh --nodes=2 node matmul --sizes 4096,8192
#   SUITE_OUT=results/lumi-gcd-123 scripts/lumi/submit.sh gcd --full      # continue a folder
# It runs `suite run <arguments> --dry-run` with the kernels scripts/lumi/build.sh made (no GPU is needed: the plan
# of an MI250X GCD from its datasheet and the code objects), which parses the arguments exactly as the job will:
# bad arguments, or a folder that would refuse the job ($SUITE_OUT written by a running job, or with another
# number of tasks), stop here with nothing queued. It prints the points per experiment, the time estimate and a
# suggested --time; without a --time of yours it asks for the suggested one when the script's own is shorter, and
# with a shorter one of yours it warns. Then it calls sbatch with your options. Write sbatch options as
# --name=value (or a flag alone), before the script.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/lumi/env.sh
source scripts/lumi/env.sh

usage() {
    echo "usage: $0 [sbatch options] <gcd|dev|node>[.sbatch] [suite run arguments]" >&2
    exit 2
}
options=()
while [ $# -gt 0 ] && [[ $1 == -* ]]; do
    options+=("$1")
    shift
done
[ $# -gt 0 ] || usage
script=$1
shift
case $script in
gcd | dev | node) script=scripts/lumi/$script.sbatch ;;
*.sbatch) [ -f "$script" ] || script=scripts/lumi/$(basename "$script") ;;
*)
    echo "submit: $script is not a job script (gcd, dev or node); sbatch options go before it as --name=value" >&2
    usage
    ;;
esac
[ -f "$script" ] || {
    echo "submit: no job script $script" >&2
    usage
}

# The value of sbatch option NAME (long form) among the options given, else the script's #SBATCH line.
option() {
    local name=$1 short=${2:-} opt
    for opt in "${options[@]}"; do
        case $opt in
        --"$name"=*) echo "${opt#*=}" && return ;;
        -"$short"?*) [ -z "$short" ] || { echo "${opt#-"$short"}" && return; } ;;
        esac
    done
    sed -n "s/^#SBATCH --$name=\(.*\)$/\1/p" "$script" | head -n 1
}
given() {
    local name=$1 short=${2:-} opt
    for opt in "${options[@]}"; do
        case $opt in --"$name"=* | -"$short"?*) return 0 ;; esac
    done
    return 1
}

# Every option is checked before anything is queued, each with a message naming it: first the ones the plan is
# made from (their form: a job of --nodes=0 or --ntasks-per-node=abc must not get as far as a plan), then all of them
# by Slurm itself (sbatch --test-only: the option as Slurm reads it, the partition, the account, the limits).
bad_option() {
    echo "submit: $1: nothing queued" >&2
    exit 2
}
count_option() { # NAME SHORT: a whole number of at least 1, if given
    local value
    value=$(option "$1" "$2")
    [ -z "$value" ] || [[ $value =~ ^[1-9][0-9]*$ ]] ||
        bad_option "--$1=$value: expected a whole number of at least 1 (a node job needs an exact count)"
}
for name in nodes:N ntasks:n ntasks-per-node: cpus-per-task:c; do count_option "${name%%:*}" "${name#*:}"; done
for name in gpus-per-node gpus-per-task; do
    value=$(option "$name")
    [ -z "$value" ] || [[ $value =~ ^([A-Za-z0-9_]+:)?[1-9][0-9]*$ ]] ||
        bad_option "--$name=$value: expected a number of GPUs of at least 1 (optionally type:count)"
done
value=$(option time t)
[ -z "$value" ] || [[ $value =~ ^([0-9]+-)?[0-9]+(:[0-9]+){0,2}$ ]] ||
    bad_option "--time=$value: expected minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"
if ! checked=$(sbatch --test-only "${options[@]}" "$script" 2>&1); then
    echo "$checked" >&2
    bad_option "sbatch refuses the options ${options[*]:-(none)} for $script (its message is above)"
fi

# A node job splits the points over its tasks: plan as many shards (--ntasks when given, else nodes x tasks per node).
plan=()
if [ "$(basename "$script")" = node.sbatch ]; then
    nodes=$(option nodes N)
    per_node=$(option ntasks-per-node)
    tasks=$(option ntasks n)
    if ! given ntasks n; then tasks=$((${nodes:-1} * ${per_node:-8})); fi
    plan=(--shard "0/$tasks")
fi
# As the job runs it: resumed, into $SUITE_OUT when set (so a folder of another device or preset is refused now).
plan+=(--resume)
[ -z "${SUITE_OUT:-}" ] || plan+=(--out "$SUITE_OUT")
echo "submit: checking $script ${*:-} (suite run --dry-run, no GPU)" >&2
status=0
report=$("$SUITE_BIN" --platform amd --kernels-dir "$SUITE_KERNELS" run "$@" --dry-run "${plan[@]}" 2>&1) ||
    status=$?
echo "$report"
case $status in
0) ;;
2)
    echo "submit: bad arguments (the suite's message is above): nothing queued" >&2
    exit 2
    ;;
3)
    echo "submit: refused: the results folder refuses this job (above): nothing queued; choose another SUITE_OUT" >&2
    exit 3
    ;;
*)
    echo "submit: the plan failed (status $status, above): nothing queued" >&2
    exit "$status"
    ;;
esac

# Minutes of a Slurm time (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS), rounded up.
minutes() {
    local t=$1 days=0 h=0 m=0 s=0
    if [[ $t == *-* ]]; then
        days=${t%%-*} t=${t#*-}
        IFS=: read -r h m s <<<"$t"
    else
        local parts
        IFS=: read -r -a parts <<<"$t"
        case ${#parts[@]} in
        1) m=${parts[0]} ;;
        2) m=${parts[0]} s=${parts[1]} ;;
        *) h=${parts[0]} m=${parts[1]} s=${parts[2]} ;;
        esac
    fi
    echo $(((10#${days:-0} * 24 + 10#${h:-0}) * 60 + 10#${m:-0} + (10#${s:-0} > 0 ? 1 : 0)))
}
suggested=$(sed -n 's/^suggested --time=\([0-9:]*\).*/\1/p' <<<"$report" | head -n 1)
limit=$(option time t)
if [ -n "$suggested" ] && [ -n "$limit" ] && [ "$(minutes "$limit")" -lt "$(minutes "$suggested")" ]; then
    if given time t; then
        echo "submit: warning: --time=$limit is shorter than the suggested --time=$suggested: the job will" \
            "likely stop before its end (its last lines then say how to continue it)" >&2
    else
        echo "submit: $script asks for --time=$limit, less than the suggested $suggested: asking for" \
            "--time=$suggested" >&2
        options+=(--time="$suggested")
    fi
fi
echo "submit: sbatch ${options[*]} $script ${*:-}" >&2
exec sbatch "${options[@]}" "$script" "$@"
