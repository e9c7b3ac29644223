# shellcheck shell=bash
# shellcheck disable=SC2034  # RUN_BG_PID is read by the scripts that source this file
# Shared helpers of the slurm/ scripts (sourced, never run). Every command that starts or changes
# something goes through `run`/`run_bg`, so DRY_RUN=1 (or --dry-run) prints exactly the commands a real
# run would execute -- shell-quoted, one per line, prefixed with "+ " -- and starts nothing.

log() { printf '[%s %s] %s\n' "$(date -u +%H:%M:%S)" "${TGMS_LOG_TAG:-tgms}" "$*" >&2; }
die() {
    log "ERROR: $*"
    exit 1
}

# Parse the arguments every script shares: --dry-run sets DRY_RUN=1; the rest is left in TGMS_ARGS.
TGMS_ARGS=()
tgms_parse_args() {
    local a
    TGMS_ARGS=()
    for a in "$@"; do
        case $a in
        --dry-run) DRY_RUN=1 ;;
        -h | --help)
            sed -n '2,/^$/s/^# \{0,1\}//p' "$TGMS_SCRIPT"
            exit 0
            ;;
        *) TGMS_ARGS+=("$a") ;;
        esac
    done
    DRY_RUN=${DRY_RUN:-0}
}

is_dry() { [[ ${DRY_RUN:-0} != 0 ]]; }

# Print a command shell-quoted (so the printed line can be pasted back into a shell).
show_cmd() {
    local out="+" a
    for a in "$@"; do out+=" $(printf '%q' "$a")"; done
    printf '%s\n' "$out"
}

# Run a command in the foreground, or print it under DRY_RUN.
run() {
    show_cmd "$@"
    is_dry && return 0
    "$@"
}

# Start a command in the background with its output in a log file; its pid lands in RUN_BG_PID.
# Under DRY_RUN it is only printed and RUN_BG_PID is empty.
run_bg() {
    local logfile=$1
    shift
    printf '%s >%q 2>&1 &\n' "$(show_cmd "$@")" "$logfile"
    RUN_BG_PID=
    is_dry && return 0
    "$@" >"$logfile" 2>&1 &
    RUN_BG_PID=$!
}

# Write $2 to file $1 atomically (a reader never sees a half-written endpoint or address list).
write_atomic() {
    local path=$1 content=$2
    if is_dry; then
        printf '+ write %q <<EOF\n%sEOF\n' "$path" "$content"
        return 0
    fi
    mkdir -p "$(dirname "$path")"
    printf '%s' "$content" >"$path.tmp.$$"
    mv -f "$path.tmp.$$" "$path"
}

# The HTTP status of a GET (000 when nothing answers); curl when present, else Python's stdlib.
http_status() {
    local url=$1
    if command -v curl >/dev/null; then
        curl -s -o /dev/null -m 5 -w '%{http_code}' "$url" || true
    else
        python3 - "$url" <<'PY' || echo 000
import sys, urllib.error, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=5).status)
except urllib.error.HTTPError as e:
    print(e.code)
except Exception:
    print("000")
PY
    fi
}

http_body() {
    local url=$1
    if command -v curl >/dev/null; then
        curl -s -m 5 "$url" || true
    else
        python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' \
            "$url" 2>/dev/null || true
    fi
}

# Wait until a file exists and is non-empty (another job writes it), at most $2 seconds.
wait_for_file() {
    local path=$1 timeout=$2 waited=0
    is_dry && {
        printf '+ wait_for_file %q %s\n' "$path" "$timeout"
        return 0
    }
    while [[ ! -s $path ]]; do
        ((waited >= timeout)) && return 1
        sleep 2
        waited=$((waited + 2))
    done
}

# Stop background pids: SIGTERM, up to $GRACE_S seconds (default 30) for them to exit, then SIGKILL.
# With STOP_GROUPS=1 each pid is a process-group leader (started with setsid) and the whole group is
# signalled, so children (vLLM's tensor-parallel workers) go with it.
stop_pids() {
    local pid alive grace=${GRACE_S:-30} waited=0 targets=()
    [[ $# -eq 0 ]] && return 0
    for pid in "$@"; do
        if [[ ${STOP_GROUPS:-0} == 1 ]]; then targets+=("-$pid"); else targets+=("$pid"); fi
    done
    kill -TERM -- "${targets[@]}" 2>/dev/null || true
    while :; do
        alive=()
        for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
        [[ ${#alive[@]} -eq 0 ]] && break
        if ((waited >= grace)); then
            log "still running after ${grace}s, killing: ${alive[*]}"
            kill -KILL -- "${targets[@]}" 2>/dev/null || true
            break
        fi
        sleep 1
        waited=$((waited + 1))
    done
    wait "$@" 2>/dev/null || true
}

# The allocation's hostnames, one per line: NODES (space-separated) wins, for dry runs outside SLURM.
job_nodes() {
    if [[ -n ${NODES:-} ]]; then
        tr ' ' '\n' <<<"$NODES" | sed '/^$/d'
    elif [[ -n ${SLURM_JOB_NODELIST:-} ]]; then
        scontrol show hostnames "$SLURM_JOB_NODELIST"
    else
        hostname -s
    fi
}

# Activate the project's virtualenv when there is one (TGMS_VENV; default <root>/.venv).
activate_venv() {
    local venv=${TGMS_VENV:-$1/.venv}
    if [[ -f $venv/bin/activate ]]; then
        # shellcheck disable=SC1091
        . "$venv/bin/activate"
    else
        log "no virtualenv at $venv; using $(command -v python3 || echo 'no python3')"
    fi
}

# A free TCP port on this host (the OS picks it), for a Ray head that must not collide with another job.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
}

# This host's first address (what other nodes reach it by), unless the caller set one.
host_ip() {
    local ip
    ip=$(hostname -I 2>/dev/null | awk '{print $1}')
    [[ -n $ip ]] || ip=$(getent hosts "$(hostname)" | awk '{print $1; exit}')
    printf '%s\n' "${ip:-127.0.0.1}"
}
