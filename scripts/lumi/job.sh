#!/usr/bin/env bash
# Sourced by the job scripts (after env.sh): the results folder, the plan, the GPU step run so that the job's end is
# handled, and the job's last lines. What a job does on each incident (docs/lumi.md has the table):
#  - bad arguments: the plan at the start (`suite run --dry-run`, which parses them exactly as the step will) fails
#    once, before any task starts; the last lines say they are bad arguments and nothing was measured;
#  - a folder another job writes into, or one written with another layout (one process vs shards): refused by the
#    plan at the start, nothing measured; the suite's message says who holds it or how it was written;
#  - requeue (LUMI requeues a job whose node failed, with the same job id; also `scontrol requeue`): Slurm runs the
#    script again, into the same folder, and `suite run --resume` measures only the points not yet there;
#  - time limit: Slurm signals this shell 2-3 minutes before it (`--signal=B:USR1@120`); the step is stopped, what
#    it wrote is kept (node.sbatch merges it), and the last lines say how many points are missing and how to
#    continue: `SUITE_OUT=<folder> sbatch [the job's geometry] <script> <the same arguments>`;
#  - scancel, or the limit reached without the warning: the same last lines, at once;
#  - a failed step (a task died), or any command of the script: the same last lines, and the job fails.
# Whether the job succeeded is decided by what the folder holds against its plan (`suite status`), not by signals:
# a job whose every planned point has a row succeeds whatever came after its last row (a time-limit warning during
# the merge, say); one whose points failed verification fails, with no advice to measure them again in place.

# job_start KIND SCRIPT ARGS...: the results folder (SUITE_OUT, or results/lumi-KIND-<job id>) in job_out, and how
# to submit this job again (SCRIPT with ARGS, the job's geometry) for the last lines and for the suite to record.
job_start() {
    : "${SLURM_JOB_ID:?not in a Slurm job: submit the script with sbatch (or scripts/lumi/submit.sh)}"
    job_kind=$1 job_script=$2
    shift 2
    job_args=("$@")
    job_out=${SUITE_OUT:-results/lumi-$job_kind-$SLURM_JOB_ID}
    job_pid="" job_status=0 job_stopped="" job_interrupted="" job_ended="" job_verdict=""
    trap job_on_usr1 USR1
    trap job_on_term TERM
    trap job_on_exit EXIT
    echo "suite-$job_kind $SLURM_JOB_ID (restart ${SLURM_RESTART_COUNT:-0}) on" \
        "${SLURM_JOB_NODELIST:-?}: results in $job_out"
    # Recorded with the run's plan in run.json, so every reader of the folder (suite status, merge, summary.md,
    # compare, a refused job) can say how to continue it.
    SUITE_CONTINUE_COMMAND=$(job_continue_command)
    export SUITE_CONTINUE_COMMAND
    # srun with what the scripts rely on said explicitly, whatever the site's defaults (an array, not a function:
    # job_step signals the step's process, which must be srun itself):
    #  - --kill-on-bad-exit=0: one failing task must not end the others (a site's KillOnBadExit=1 would): every
    #    task's rows are kept and merged, and the continuation measures only what is missing;
    #  - --cpus-per-task: srun of Slurm 22.05-23.02 does not inherit it from sbatch (their release notes and srun(1)),
    #    so --cpu-bind=cores could pin a task to one core.
    job_srun=(srun --kill-on-bad-exit=0)
    [ -z "${SLURM_CPUS_PER_TASK:-}" ] || job_srun+=(--cpus-per-task="$SLURM_CPUS_PER_TASK")
}

# job_plan [SUITE RUN OPTIONS...]: the job's plan, as submit.sh printed it on the login node (`suite run
# --dry-run`: no GPU is used, nothing is written). It parses the arguments exactly as the step will and checks the
# folder once, before any task starts: bad arguments or a refused folder end the job here, with nothing measured.
# shellcheck disable=SC2120 # the options are optional: only node.sbatch passes one
job_plan() {
    local status=0
    "$SUITE_BIN" --platform amd --kernels-dir "$SUITE_KERNELS" run "${job_args[@]}" --out "$job_out" --resume \
        --dry-run "$@" || status=$?
    case $status in
    0) return 0 ;;
    2) job_verdict="bad arguments" ;;
    3) job_verdict="refused" ;;
    *) job_verdict="" job_stopped="the plan failed (status $status, see above)" job_status=$status ;;
    esac
    job_end
}

# job_step COMMAND...: runs the job's step (an srun) and waits for it. It runs in the background because bash runs
# a trap only between commands, and `wait` is the one command a signal interrupts. Sets job_status.
job_step() {
    # The warning came before the step started (during dev.sbatch's checks): do not start it.
    [ -z "$job_stopped" ] || return 0
    "$@" &
    job_pid=$!
    while :; do
        job_interrupted="" job_status=0
        wait "$job_pid" || job_status=$?
        # Interrupted by a trap (status > 128) while the step may still run: wait for its real end.
        [ -n "$job_interrupted" ] || break
    done
    job_pid=""
    # Status 3 is the suite's refusal (another job owns the folder, or another writer or layout): its tasks were
    # refused before measuring anything, which is no task dying.
    if [ "$job_status" -eq 3 ] && [ -z "$job_stopped" ]; then job_verdict="refused"; fi
}

# Whether the step was refused (job_step): nothing of this job is in the folder to merge.
job_refused() {
    [ "$job_verdict" = refused ]
}

# USR1: the time limit is near. srun passes the TERM on to the tasks, which end at once: at most the point being
# measured is lost (rows are appended whole; a resumed run drops a cut one, merge skips it), and the job ends by
# itself, before Slurm's hard stop. After the step (during the merge) there is nothing to stop: the merge finishes
# (bash runs the trap once it has), and the folder's status decides.
job_on_usr1() {
    job_stopped="stopped before its time limit"
    job_interrupted=1
    if [ -n "$job_pid" ]; then
        echo "suite-$job_kind $SLURM_JOB_ID: the time limit is near: stopping the step; its rows are kept" >&2
        kill -TERM "$job_pid" 2>/dev/null || true
    fi
}

# TERM: Slurm ends the job now (scancel, requeue, node failure, the time limit without the warning); KILL follows
# after Slurm's KillWait (30 s by default), so only the last lines are printed, after srun's own (it got the TERM
# too and ends within a second or two; at most 3 s are waited for it).
job_on_term() {
    job_stopped="ended by Slurm (SIGTERM: scancel, requeue, or the time limit)"
    job_status=143 job_ended=1
    local tenths=0
    while [ -n "$job_pid" ] && kill -0 "$job_pid" 2>/dev/null && [ "$tenths" -lt 30 ]; do
        sleep 0.1
        tenths=$((tenths + 1))
    done
    job_last_lines || true
    exit 143
}

# EXIT before job_end: a command of the script failed (set -e), e.g. `suite info` in dev.sbatch.
job_on_exit() {
    local status=$?
    [ -z "$job_ended" ] || return 0
    job_ended=1
    [ "$status" -ne 0 ] || status=1
    job_stopped="ended early: a command failed (status $status, see above)" job_status=$status
    job_last_lines || true
}

# The command that continues this job: the same script and arguments, into the same folder, with a node job's
# geometry, whatever it was asked with (--ntasks alone, uneven tasks per node, --gpus-per-task): its shards must split
# the points as this job's did, so the tasks (shards) are given as a count, --ntasks; the tasks per node only where
# Slurm was asked for them and they make that count; the GPUs as they were asked for.
job_continue_command() {
    local geometry=""
    if [ "$job_kind" = node ]; then
        local nodes=${SLURM_JOB_NUM_NODES:-1} tasks=${SLURM_NTASKS:-8}
        local per_node=${SLURM_NTASKS_PER_NODE:-}
        per_node=${per_node%%(*}
        geometry=" --nodes=$nodes --ntasks=$tasks"
        if [[ $per_node =~ ^[0-9]+$ ]] && [ $((per_node * nodes)) -eq "$tasks" ]; then
            geometry+=" --ntasks-per-node=$per_node"
        fi
        [ -z "${SLURM_GPUS_PER_NODE:-}" ] || geometry+=" --gpus-per-node=$SLURM_GPUS_PER_NODE"
        [ -z "${SLURM_GPUS_PER_TASK:-}" ] || geometry+=" --gpus-per-task=$SLURM_GPUS_PER_TASK"
    fi
    printf 'SUITE_OUT=%q sbatch%s %q' "$job_out" "$geometry" "$job_script"
    [ ${#job_args[@]} -eq 0 ] || printf ' %q' "${job_args[@]}"
    echo
}

# The job's last lines: bad arguments or a refused folder as such; otherwise what the folder holds against its
# plan, and, unless every planned point has a row, how to continue. Returns the job's exit status.
job_last_lines() {
    local head="suite-$job_kind $SLURM_JOB_ID"
    case $job_verdict in
    "bad arguments")
        echo "$head: bad arguments: ${job_args[*]:-(none)}: the suite's message above says what is wrong." \
            "Nothing was measured. Fix them and submit again (scripts/lumi/submit.sh checks them on the login" \
            "node before anything is queued)."
        return 1
        ;;
    refused)
        echo "$head: refused: $job_out does not take this job (the suite's message above says why and what to" \
            "run instead). Nothing was measured."
        return 1
        ;;
    esac
    local report status=0
    report=$("$SUITE_BIN" status "$job_out" 2>&1) || status=$?
    case $status in
    0)
        local first=""
        [ ! -f "$job_out/summary.md" ] || first=": read $job_out/summary.md first"
        echo "$report" | tail -n 1
        echo "$head: done; results in $job_out$first"
        return 0
        ;;
    6)
        echo "$report"
        echo "$head: every planned point has a row, but some failed verification or errored (their messages are" \
            "in $job_out/summary.md and the CSVs); a resumed run does not measure them again."
        return 1
        ;;
    esac
    local why=${job_stopped:-"the step failed (status $job_status: a task failed, see above)"}
    [ -n "$job_stopped" ] || [ "$job_status" -ne 0 ] || why="the step ended early"
    [ -n "$job_stopped" ] || ! grep -q "merge incomplete" <<<"$report" || why="the merge did not finish"
    echo "$head: $why; the rows written are kept in $job_out."
    case $status in
    4) echo "$report" ;;
    5) echo "$head: $job_out records no plan: nothing was measured." ;;
    *) echo "$report" && echo "$head: what $job_out holds could not be read (above)." ;;
    esac
    echo "A requeued job continues by itself. To continue it yourself (only the missing points are measured; add"
    echo "the sbatch options you gave, e.g. --time, before the script):"
    echo "  $(job_continue_command)"
    return 1
}

# The job's end: the last lines, then its exit status (0 only when every planned point has a row and none failed).
job_end() {
    job_ended=1
    local status=0
    job_last_lines || status=$?
    exit "$status"
}
