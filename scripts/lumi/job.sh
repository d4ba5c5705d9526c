#!/usr/bin/env bash
# Sourced by the job scripts (after env.sh): the results folder, the GPU step run so that the job's end is handled,
# and the job's last lines. What a job does on each incident:
#  - requeue (LUMI requeues a job whose node failed, with the same job id; also `scontrol requeue`): Slurm runs the
#    script again, into the same folder, and `suite run --resume` measures only the points not yet there;
#  - time limit: Slurm signals this shell 2-3 minutes before it (`--signal=B:USR1@120`); the step is stopped, what
#    it wrote is kept (node.sbatch merges it), and the last lines say how to continue:
#    `SUITE_OUT=<folder> sbatch <script> <the same arguments>`;
#  - scancel, or the limit reached without the warning: the same last lines, at once;
#  - a failed step (a task died, a point failed verification), or any command of the script: the same last lines,
#    and the job fails.

# job_start KIND SCRIPT ARGS...: the results folder (SUITE_OUT, or results/lumi-KIND-<job id>) in job_out, and how
# to submit this job again (SCRIPT with ARGS) for the last lines.
job_start() {
    : "${SLURM_JOB_ID:?not in a Slurm job: submit the script with sbatch}"
    job_kind=$1 job_script=$2
    shift 2
    job_args=("$@")
    job_out=${SUITE_OUT:-results/lumi-$job_kind-$SLURM_JOB_ID}
    job_pid="" job_status=0 job_stopped="" job_interrupted="" job_ended=""
    trap job_on_usr1 USR1
    trap job_on_term TERM
    trap job_on_exit EXIT
    echo "suite-$job_kind $SLURM_JOB_ID (restart ${SLURM_RESTART_COUNT:-0}) on" \
        "${SLURM_JOB_NODELIST:-?}: results in $job_out"
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
}

# USR1: the time limit is near. srun passes the TERM on to the tasks, which end at once: at most the point being
# measured is lost (rows are appended whole and flushed; a resumed run drops a cut one, merge skips it), and the job
# ends by itself, before Slurm's hard stop.
job_on_usr1() {
    job_stopped="stopped before its time limit"
    job_interrupted=1
    echo "suite-$job_kind $SLURM_JOB_ID: the time limit is near: stopping the step; its rows are kept" >&2
    [ -z "$job_pid" ] || kill -TERM "$job_pid" 2>/dev/null || true
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
    job_last_lines
    exit 143
}

# EXIT before job_end: a command of the script failed (set -e), e.g. `suite info` in dev.sbatch.
job_on_exit() {
    local status=$?
    [ -z "$job_ended" ] || return 0
    job_ended=1
    [ "$status" -ne 0 ] || status=1
    job_stopped="ended early: a command failed (status $status, see above)" job_status=$status
    job_last_lines
}

# The command that continues this job: the same script and arguments, into the same folder.
job_continue_command() {
    local nodes=""
    [ "${SLURM_JOB_NUM_NODES:-1}" -eq 1 ] || nodes=" --nodes=$SLURM_JOB_NUM_NODES"
    printf 'SUITE_OUT=%q sbatch%s %q' "$job_out" "$nodes" "$job_script"
    [ ${#job_args[@]} -eq 0 ] || printf ' %q' "${job_args[@]}"
    echo
}

# The job's last lines: where the results are and, unless the step finished cleanly, how to continue.
job_last_lines() {
    if [ "$job_status" -eq 0 ] && [ -z "$job_stopped" ]; then
        local first=""
        [ ! -f "$job_out/summary.md" ] || first=": read $job_out/summary.md first"
        echo "suite-$job_kind $SLURM_JOB_ID: done; results in $job_out$first"
        return
    fi
    local why=${job_stopped:-"the step failed (status $job_status: a task died, or a point failed or errored)"}
    echo "suite-$job_kind $SLURM_JOB_ID: $why; the rows written are kept in $job_out."
    echo "A requeued job continues by itself. To continue it yourself (only the missing points are measured; add"
    echo "the sbatch options you gave, e.g. --time, before the script):"
    echo "  $(job_continue_command)"
}

# The job's end: the last lines, then its exit status (non-zero unless the step finished cleanly).
job_end() {
    job_ended=1
    job_last_lines
    if [ "$job_status" -eq 0 ] && [ -z "$job_stopped" ]; then
        exit 0
    fi
    exit 1
}
