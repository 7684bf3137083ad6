# Shared by bench/compare.sh, bench/profile.sh and bench/ab.sh (sourced, not run, after `cd` to the
# repository): their environment defaults and free_port; for profile.sh and ab.sh also usage (the
# calling script's header comment), log, die, pin_cpus, bench_args and positive_numbers
# (compare.sh defines its own log, pins with more checks and an unpinned fallback for --smoke, and
# has its own workload_args, which returns the arguments as one string for its command lines).

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/paddock-target}"
PADDOCK_EXTRA_ARGS="${PADDOCK_EXTRA_ARGS:---max-client-cnxns 0}"
SCRIPT_NAME="$(basename "${BASH_SOURCE[-1]}")"

usage() { awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "${BASH_SOURCE[-1]}" >&2; exit 2; }
log() { echo "$SCRIPT_NAME: $*" >&2; }
die() { echo "$SCRIPT_NAME: error: $*" >&2; exit 2; }

# pin_cpus PINNED SERVER_CPU CLIENT_CPUS: sets SERVER_PIN and CLIENT_PIN (taskset prefixes; empty
# when PINNED is 0) and CLIENT_CPUS, which defaults to every CPU this process may use but the
# server's, as bench/compare.sh does.
pin_cpus() {
    local pinned="$1" server_cpu="$2" allowed
    CLIENT_CPUS="$3"
    SERVER_PIN=() CLIENT_PIN=()
    [[ "$pinned" -eq 1 ]] || return 0
    allowed="$(python3 -c 'import os; print(",".join(map(str, sorted(os.sched_getaffinity(0)))))')"
    if [[ -z "$CLIENT_CPUS" ]]; then
        CLIENT_CPUS="$(python3 -c '
import sys
def expand(l):
    s = set()
    for part in l.split(","):
        a, _, b = part.partition("-")
        s.update(range(int(a), int(b or a) + 1))
    return s
print(",".join(map(str, sorted(expand(sys.argv[1]) - expand(sys.argv[2])))))' "$allowed" "$server_cpu")" ||
            die "--server-cpu '$server_cpu' is not a CPU list"
    fi
    [[ -n "$CLIENT_CPUS" ]] ||
        die "pinned mode needs a CPU besides --server-cpu $server_cpu for the load generator; use --unpinned"
    SERVER_PIN=(taskset -c "$server_cpu") CLIENT_PIN=(taskset -c "$CLIENT_CPUS")
}

# free_port: a loopback port nothing listens on now.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# bench_args WORKLOAD CLIENTS INFLIGHT CONTENDERS: sets WARGS to paddock-bench's arguments for one
# of the workloads profile.sh and ab.sh run (lone: one session, one set in flight); returns 1 for any
# other workload.
bench_args() {
    case "$1" in
        create | set | get | mixed) WARGS=(--workload "$1" --clients "$2" --inflight "$3") ;;
        lock) WARGS=(--workload lock --clients "$4" --contenders "$4") ;;
        lone) WARGS=(--workload set --clients 1 --inflight 1) ;;
        *) return 1 ;;
    esac
}

# positive_numbers VAR...: dies unless each named variable holds a number > 0 (named in the message
# as its option, --var).
positive_numbers() {
    local v
    for v in "$@"; do
        [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "--$(tr 'A-Z' 'a-z' <<<"$v") takes a number > 0, got '${!v}'"
    done
}
