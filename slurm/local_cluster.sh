#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for the real SLURM test and for trying the sbatch scripts:
# munge, slurmctld and slurmd on localhost with a generated slurm.conf under $TGMS_SLURM_DIR. Needs root
# and Debian's slurm-wlm + munge (`apt-get install -y slurm-wlm munge`); there is no systemd, so the
# daemons are started by hand. Only daemons this script started are stopped (pid files it wrote).
#
#   slurm/local_cluster.sh start      # then: export SLURM_CONF=/tmp/tgms-slurm/slurm.conf
#   slurm/local_cluster.sh status
#   slurm/local_cluster.sh stop
#
# Environment: TGMS_SLURM_DIR [/tmp/tgms-slurm]; SLURM_CPUS [nproc]; SLURM_MEM_MB [80% of MemTotal].
set -euo pipefail
DIR=${TGMS_SLURM_DIR:-/tmp/tgms-slurm}
CONF=$DIR/slurm.conf
HOST=$(hostname -s)
export SLURM_CONF=$CONF

log() { printf '[local_cluster] %s\n' "$*" >&2; }

write_conf() {
    local cpus=${SLURM_CPUS:-$(nproc)} mem=${SLURM_MEM_MB:-}
    [[ -n $mem ]] || mem=$(awk '/MemTotal/{printf "%d", $2 / 1024 * 0.8}' /proc/meminfo)
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log"
    # Essentials measured on this machine (NOTES-ENV.md): linuxproc/none plugins (no cgroup, no systemd),
    # cons_tres with DefMemPerCPU so one job does not take the whole node.
    cat >"$CONF" <<EOF
ClusterName=tgms-local
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
ReturnToService=2
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
}

# A pid file whose process runs (a zombie left by a killed daemon does not count).
pid_alive() {
    local stat
    [[ -f $1 ]] || return 1
    stat=$(ps -o stat= -p "$(cat "$1")" 2>/dev/null) || return 1
    [[ -n $stat && $stat != Z* ]]
}

start_munge() {
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        log "munge already running"
        return
    fi
    [[ -f /etc/munge/munge.key ]] || { mungekey --create 2>/dev/null || dd if=/dev/urandom bs=1 count=1024 \
        of=/etc/munge/munge.key 2>/dev/null; chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key; }
    mkdir -p /run/munge && chown munge:munge /run/munge
    # --force: a socket left by a munged that was killed (CI ends every process) does not stop it
    runuser -u munge -- /usr/sbin/munged --force
    # munged writes its pid file itself; note that this script started it, so stop may end it
    cp /run/munge/munged.pid "$DIR/munged.pid" 2>/dev/null || pgrep -u munge -x munged >"$DIR/munged.pid"
    log "munged started"
}

wait_idle() {
    local state
    for _ in $(seq 60); do
        state=$(sinfo -h -n "$HOST" -o %T 2>/dev/null || true)
        if [[ $state == idle* || $state == mixed* || $state == allocated* ]]; then
            log "node $HOST is $state"
            return 0
        fi
        # a node left down by an earlier run is brought back
        if [[ $state == down* || $state == drain* ]]; then
            scontrol update NodeName="$HOST" State=RESUME 2>/dev/null || true
        fi
        sleep 1
    done
    log "node $HOST did not become idle (state '${state:-none}'); see $DIR/log"
    return 1
}

start() {
    command -v slurmctld >/dev/null || { log "slurmctld not installed: apt-get install -y slurm-wlm munge"; exit 1; }
    if pid_alive "$DIR/slurmctld.pid" && pid_alive "$DIR/slurmd.pid"; then
        log "already running ($CONF)"
        wait_idle
        return
    fi
    mkdir -p "$DIR"
    write_conf
    start_munge
    # -c: a clean start, no jobs or node state from an earlier run
    pid_alive "$DIR/slurmctld.pid" || slurmctld -c
    pid_alive "$DIR/slurmd.pid" || slurmd
    wait_idle
    log "up; use it with: export SLURM_CONF=$CONF"
}

stop_pidfile() {
    local f=$1 name=$2 pid
    pid_alive "$f" || { rm -f "$f"; return 0; }
    pid=$(cat "$f")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    rm -f "$f"
    log "$name stopped"
}

stop() {
    # jobs first, so no job outlives the cluster that ran it
    if pid_alive "$DIR/slurmctld.pid"; then scancel --user=root 2>/dev/null || true; fi
    stop_pidfile "$DIR/slurmd.pid" slurmd
    stop_pidfile "$DIR/slurmctld.pid" slurmctld
    stop_pidfile "$DIR/munged.pid" munged
}

status() {
    for d in slurmctld slurmd munged; do
        if pid_alive "$DIR/$d.pid"; then echo "$d running (pid $(cat "$DIR/$d.pid"))"; else echo "$d not running"; fi
    done
    pid_alive "$DIR/slurmctld.pid" && sinfo
    return 0
}

case ${1:-} in
start) start ;;
stop) stop ;;
status) status ;;
*)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
