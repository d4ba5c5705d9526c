#!/usr/bin/env bash
# A throw-away Slurm cluster on this machine, for the job-script tests (suite/tests/slurm.rs): Debian's Slurm
# (slurm-wlm, munge) with nodes and partitions shaped like LUMI-G's, everything under one folder.
#   scripts/slurm-test-cluster.sh up DIR [NODES]   # start it; prints the SLURM_CONF line to use
#   scripts/slurm-test-cluster.sh down DIR         # stop every process it started, whatever state it is in
# `up` writes DIR/slurm.conf and DIR/gres.conf, starts munged (its own key and socket), slurmctld and one slurmd per
# node (nid001, nid002, ...: several node names on one host, each slurmd on its own port), and waits until every
# node is idle. Each node looks like a LUMI-G node to the scheduler: 8 GPUs (GCDs; counted, no devices behind them),
# 128 CPUs, 480 GiB (config_overrides: the machine's own CPUs and memory are not checked). Partitions: small-g and
# dev-g (allocatable by resources), standard-g (whole nodes). Nothing outside DIR is written, no systemd unit is
# touched, and the ports are free ones. Needs root (slurmd starts jobs as their user).
# `down` cancels the jobs, stops the daemons by their pid files and then ends, by pid, every process of the cluster
# that is still there (one that carries this cluster's marker and is a Slurm daemon or part of a job: job steps,
# tasks): it leaves no daemon or job behind, in bounded time, and never ends its caller, nor a process that only
# inherited the marker from a shell that used the cluster. Every step has a time limit, and `up` runs `down` itself when it fails.
set -euo pipefail

usage() {
    echo "usage: $0 up DIR [NODES] | down DIR" >&2
    exit 2
}
[ $# -ge 2 ] || usage
action=$1
dir=$(realpath -m "$2")
nodes=${3:-2}
# Every process this cluster starts inherits it (daemons, job steps, tasks): `down` finds them by it.
marker="SUITE_SLURM_TEST_CLUSTER=$dir"
export SLURM_CONF="$dir/slurm.conf"

say() { echo "slurm-test-cluster: $*" >&2; }

# This process and its ancestors, one pid per line: never signalled, whatever they carry (a shell that submitted
# jobs to the cluster inherits its marker, and must outlive `down`).
ancestors() {
    local pid=$BASHPID
    while [ -n "$pid" ] && [ "$pid" -gt 1 ]; do
        echo "$pid"
        pid=$(awk '{ sub(/.*\) /, ""); print $2 }' "/proc/$pid/stat" 2>/dev/null || true)
    done
}

# The pids of the cluster's own processes that are still there: those whose environment holds the marker and that
# are Slurm's (a daemon, or a job's script, step or task, which carry SLURM_JOB_ID); never this process, its
# ancestors, or another process that merely inherited the marker from a shell that used the cluster.
marked_pids() {
    local environ pid env mine
    mine=$(ancestors)
    for environ in /proc/[0-9]*/environ; do
        pid=${environ#/proc/}
        pid=${pid%/environ}
        if [ "$pid" = "$$" ] || grep -qxF "$pid" <<<"$mine"; then continue; fi
        env=$({ tr '\0' '\n' <"$environ"; } 2>/dev/null) || continue
        grep -qxF "$marker" <<<"$env" || continue
        if grep -q '^SLURM_JOB_ID=' <<<"$env" ||
            grep -qxE 'slurmctld|slurmd|slurmstepd|munged' "/proc/$pid/comm" 2>/dev/null; then
            echo "$pid"
        fi
    done
}

# Sends TERM to the pid in each pid file given, then KILL to what is left after 10 s.
stop_pidfiles() {
    local pids=() file pid
    for file in "$@"; do
        [ -f "$file" ] || continue
        pid=$(cat "$file" 2>/dev/null || true)
        if ! [[ "$pid" =~ ^[0-9]+$ ]] || ! kill -0 "$pid" 2>/dev/null; then continue; fi
        pids+=("$pid")
        kill -TERM "$pid" 2>/dev/null || true
    done
    [ ${#pids[@]} -gt 0 ] || return 0
    for _ in $(seq 100); do
        local alive=0
        for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ "$alive" -eq 1 ] || return 0
        sleep 0.1
    done
    for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
}

down() {
    [ -d "$dir" ] || return 0
    # Jobs first, while slurmctld still runs: their steps end their tasks.
    if [ -f "$dir/run/slurmctld.pid" ] && command -v scancel >/dev/null; then
        timeout 10 scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
        for _ in $(seq 50); do
            [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.2
        done
    fi
    stop_pidfiles "$dir"/run/slurmd-*.pid
    stop_pidfiles "$dir/run/slurmctld.pid"
    stop_pidfiles "$dir/run/munged.pid"
    # Whatever still carries the marker (a job step that outlived its slurmd, a task): TERM, then KILL.
    local left
    left=$(marked_pids)
    if [ -n "$left" ]; then
        # shellcheck disable=SC2086 # one pid per word
        kill -TERM $left 2>/dev/null || true
        sleep 1
        left=$(marked_pids)
        # shellcheck disable=SC2086
        [ -z "$left" ] || kill -KILL $left 2>/dev/null || true
    fi
}

# A TCP port on localhost that nothing listens on, from a random start (the kernel's table of listening sockets).
free_ports() {
    local count=$1 base port listening
    local hex
    listening=$(awk 'NR > 1 && $4 == "0A" { n = split($2, a, ":"); print a[n] }' /proc/net/tcp /proc/net/tcp6 \
        2>/dev/null | while read -r hex; do echo $((16#$hex)); done)
    for _ in $(seq 50); do
        base=$((20000 + RANDOM % 30000))
        local clash=0
        for ((port = base; port < base + count; port++)); do
            grep -qx "$port" <<<"$listening" && clash=1
        done
        if [ "$clash" -eq 0 ]; then
            seq "$base" $((base + count - 1))
            return 0
        fi
    done
    say "no $count free ports found"
    return 1
}

up() {
    if [ "$(id -u)" -ne 0 ]; then
        say "needs root (slurmd runs jobs as their user and munged as root here); run the tests as root"
        exit 1
    fi
    local tool
    for tool in munged slurmctld slurmd sbatch scontrol scancel squeue; do
        if ! command -v "$tool" >/dev/null; then
            say "$tool is missing: apt-get install slurm-wlm munge (scripts/install-test-deps.sh does it)"
            exit 1
        fi
    done
    [[ "$nodes" =~ ^[1-9][0-9]*$ ]] || usage
    if [ -e "$dir/slurm.conf" ]; then
        say "$dir already holds a cluster: run '$0 down $dir' and remove it first"
        exit 1
    fi
    trap 'say "starting failed; logs in $dir/log"; down' ERR
    mkdir -p "$dir"/{munge,state,run,log,spool}
    chmod 700 "$dir/munge"
    head -c 1024 /dev/urandom >"$dir/munge/munge.key"
    chmod 400 "$dir/munge/munge.key"

    local host ports ctld_port i node node_names=()
    host=$(hostname -s)
    mapfile -t ports < <(free_ports $((nodes + 1)))
    ctld_port=${ports[0]}
    for ((i = 1; i <= nodes; i++)); do node_names+=("$(printf 'nid%03d' "$i")"); done

    {
        echo "# Written by scripts/slurm-test-cluster.sh: a test cluster shaped like LUMI-G, on $host."
        echo "ClusterName=suite-test"
        echo "SlurmctldHost=$host(127.0.0.1)"
        echo "SlurmctldPort=$ctld_port"
        echo "SlurmUser=root"
        echo "AuthType=auth/munge"
        echo "CredType=cred/munge"
        # cred_expire is also how long Slurm holds a requeued job before it may start again (120 s by default):
        # shorter here, so the requeue test waits for Slurm's own restart. Forcing an earlier start races the
        # revocation of the first run's credential on the node, and the relaunch then fails.
        echo "AuthInfo=socket=$dir/munge/munge.sock,cred_expire=10"
        echo "StateSaveLocation=$dir/state"
        echo "SlurmdSpoolDir=$dir/spool/%n"
        echo "SlurmctldPidFile=$dir/run/slurmctld.pid"
        echo "SlurmdPidFile=$dir/run/slurmd-%n.pid"
        echo "SlurmctldLogFile=$dir/log/slurmctld.log"
        echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
        echo "SlurmctldDebug=info"
        echo "SlurmdDebug=info"
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "JobCompType=jobcomp/none"
        echo "MpiDefault=none"
        echo "SwitchType=switch/none"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_Core_Memory"
        echo "SchedulerType=sched/backfill"
        echo "SlurmdParameters=config_overrides"
        echo "GresTypes=gpu"
        # As on LUMI, jobs are requeued (same job id) after a node failure or `scontrol requeue`.
        echo "JobRequeue=1"
        echo "ReturnToService=2"
        # Short waits, so the tests take seconds: the grace between a job's TERM and KILL, and how long a finished
        # job stays visible to `scontrol show job`.
        echo "KillWait=5"
        echo "MinJobAge=600"
        echo "MessageTimeout=10"
        echo "InactiveLimit=0"
        for ((i = 0; i < nodes; i++)); do
            echo "NodeName=${node_names[i]} NodeHostname=$host NodeAddr=127.0.0.1 Port=${ports[i + 1]}" \
                "CPUs=128 Boards=1 SocketsPerBoard=1 CoresPerSocket=64 ThreadsPerCore=2 RealMemory=491520" \
                "Gres=gpu:8 State=UNKNOWN"
        done
        local all
        all=$(
            IFS=,
            echo "${node_names[*]}"
        )
        echo "PartitionName=small-g Nodes=$all Default=YES MaxTime=3-00:00:00 State=UP"
        echo "PartitionName=dev-g Nodes=$all MaxTime=03:00:00 State=UP"
        echo "PartitionName=standard-g Nodes=$all MaxTime=2-00:00:00 OverSubscribe=EXCLUSIVE State=UP"
    } >"$dir/slurm.conf"
    # Slurm counts a GPU only with a device file; these stand for the node's 8 GCDs (character devices like
    # /dev/null where mknod is allowed; plain files otherwise, which slurmd accepts with a complaint in its log).
    mkdir -p "$dir/dev"
    for ((i = 0; i < 8; i++)); do
        mknod "$dir/dev/gcd$i" c 1 3 2>/dev/null || touch "$dir/dev/gcd$i"
    done
    for node in "${node_names[@]}"; do
        echo "NodeName=$node Name=gpu File=$dir/dev/gcd[0-7]"
        mkdir -p "$dir/spool/$node"
    done >"$dir/gres.conf"

    export "${marker?}"
    timeout 20 munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
        --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed"
    timeout 20 slurmctld -f "$SLURM_CONF"
    for node in "${node_names[@]}"; do
        timeout 20 slurmd -f "$SLURM_CONF" -N "$node"
    done
    # Every node idle, within 60 s.
    local states=""
    for _ in $(seq 120); do
        states=$(timeout 5 sinfo -h -N -o '%N %t' 2>/dev/null | sort -u || true)
        if [ -n "$states" ] && ! grep -qv ' idle$' <<<"$states" &&
            [ "$(wc -l <<<"$states")" -ge "$nodes" ]; then
            trap - ERR
            say "up: ${node_names[*]} idle"
            echo "export SLURM_CONF=$SLURM_CONF"
            return 0
        fi
        sleep 0.5
    done
    say "nodes not idle after 60 s: ${states:-no answer from slurmctld}; logs in $dir/log"
    down
    exit 1
}

case "$action" in
up) up ;;
down) down ;;
*) usage ;;
esac
