#!/usr/bin/env bash
# The lock shoot-out: one acquire, write-with-token, release loop, driven by one load generator
# (bench/locks/harness, Go) against every system, at 1, 8 and 64 contenders; then a kill -9 test per
# system. docs/locks.md ("The lock shoot-out") has the table and what it means.
#
#   bench/locks/run.sh                 every system, 10 s measured per cell (after 2 s of warm-up)
#   bench/locks/run.sh --quick         a short run: 2 s per cell (0.5 s warm-up), kill tests wait 5 s
#   bench/locks/run.sh --smoke         CI (scripts/test.sh, about a minute): 1 s cells, kill tests wait 3 s,
#                                      on paddock-1, etcd-1, redis-always and redis-default at 1 and 8
#                                      contenders; measures nothing, fails on any error or violation, and
#                                      unless paddock-1 kept its lock through the kill and redis-default
#                                      lost it without telling the holder (the kill test can tell both)
#   bench/locks/run.sh --systems paddock-1,etcd-1 --contenders 1,8 --duration 5
#   bench/locks/run.sh --rounds 3      every system three times over (fresh servers each round, the
#                                      systems in turn), the table showing each cell's median and range
#
# Systems (--systems, default all, in this order):
#   paddock-1        paddock standalone            ZooKeeper recipe via go-zookeeper (token: czxid)
#   paddock-3        paddock, 3 members            "
#   zookeeper-1      Apache ZooKeeper 3.9.5        "
#   zookeeper-3      Apache ZooKeeper 3.9.5, 3 members
#   etcd-1           etcd 3.4 (Debian etcd-server) concurrency.Mutex via the Go client (token: revision)
#   etcd-3           etcd 3.4, 3 members
#   redis-always     Redis 7.0 (Debian redis-server), appendonly yes, appendfsync always:
#                    SET NX PX + checked release (no token), waiting as redis-py's Lock does by
#                    default (sleep 0.1 s between tries) and, a second row, in a tight loop
#   redis-everysec   the same with appendfsync everysec
#   redis-default    the same with Debian's redis.conf persistence: no AOF, RDB snapshots (save 3600 1
#                    300 100 60 10000): no fsync per write, so its rows are not like for like; it is here
#                    for the kill test (a lock taken since the last snapshot is gone after a restart)
#
# Options: --duration S (10), --warmup S (2), --contenders LIST (1,8,64), --systems LIST, --rounds R (1),
#   --server-cpu LIST (0), --client-cpus LIST (default: every other CPU this process may use),
#   --no-kill (skip the kill tests), --wait-secs S (kill test: how long another client tries to take
#   the lock after the restart; 15, 5 with --quick, 3 with --smoke), --no-build (use $CARGO_TARGET_DIR/release/paddock),
#   --bin-dir DIR (take paddock from DIR; implies --no-build), --out DIR.
# Environment: CARGO_TARGET_DIR (default ~/.cache/paddock-target), ZK_HEAP (default 1g, as compare.sh),
#   PADDOCK_EXTRA_ARGS (default "--max-client-cnxns 0").
#
# Method. Every server runs fsync on (paddock and ZooKeeper by default, etcd always, Redis with
# appendfsync always or everysec), with its data in a fresh directory under /tmp, on free loopback
# ports. Pinned: each server and every thread it starts runs on --server-cpu (taskset -c at start;
# `taskset -a -p` over every thread is checked after each system's runs and the kill test, see
# pinning.txt; a thread elsewhere fails the run); the 3-member systems put all three members on that
# same CPU set (2 cores cannot give each member its own and keep one for the generator); the
# generator runs on --client-cpus. Each cell: --contenders sessions (each its own connection) loop
# acquire, write-with-token, release; the write is checked for exclusion (a conditional write to a
# shared store whose expected version is the hand-off count, plus an in-process holder slot) and the
# token for growth. Measured: hand-offs/s, acquire latency (joining to holding) p50/p99, the servers'
# CPU time (user+system from /proc, all members) per hand-off, the fewest and most hand-offs one
# contender got (fairness), the machine's steal and load average.
# Kill test, per system: a holder takes the lock; kill -9 the server (the leader of 3); restart it
# (for 3 members once the other two serve with a new leader); another client tries to take the lock
# for --wait-secs; then the holder asks the server whether it still holds it. Verdicts: kept; lost,
# holder told (its session/lease ended and the client said so); LOST, holder not told (another client
# got the lock while the holder's client still believes it holds it).
# Results: bench/results/locks-<stamp>/ (ignored by git): table.txt, results.csv, results.jsonl (one
# object per cell), killtests.jsonl, params.json (git revision, load average, disk, CPUs), pinning.txt,
# server-logs/<system>-r<round>/ (each server's own log).
# Exit code: 0 when every cell ran with no exclusion violation or error and pinning held; 1 otherwise;
# 2 for bad usage or a server that did not start.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
export ZK_HEAP="${ZK_HEAP:-1g}"

ALL_SYSTEMS="paddock-1,paddock-3,zookeeper-1,zookeeper-3,etcd-1,etcd-3,redis-always,redis-everysec,redis-default"
DURATION=10 WARMUP=2 CONTENDERS="1,8,64" SYSTEMS="$ALL_SYSTEMS" SERVER_CPU=0 CLIENT_CPUS="" KILL=1
WAIT_SECS="" BUILD=1 BIN_DIR="" OUT="" QUICK=0 SMOKE=0 ROUNDS=1
need() { [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value"; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) QUICK=1 DURATION=2 WARMUP=0.5 ;;
        --smoke) QUICK=1 SMOKE=1 DURATION=1 WARMUP=0.5 CONTENDERS="1,8" SYSTEMS="paddock-1,etcd-1,redis-always,redis-default" ;;
        --no-kill) KILL=0 ;;
        --no-build) BUILD=0 ;;
        --duration | --warmup | --contenders | --systems | --server-cpu | --client-cpus | --wait-secs | --bin-dir | --out | --rounds)
            need "$@"
            case "$1" in
                --duration) DURATION="$2" ;;
                --warmup) WARMUP="$2" ;;
                --contenders) CONTENDERS="$2" ;;
                --systems) SYSTEMS="$2" ;;
                --server-cpu) SERVER_CPU="$2" ;;
                --client-cpus) CLIENT_CPUS="$2" ;;
                --wait-secs) WAIT_SECS="$2" ;;
                --bin-dir) BIN_DIR="$2" BUILD=0 ;;
                --out) OUT="$2" ;;
                --rounds) ROUNDS="$2" ;;
            esac
            shift
            ;;
        -h | --help) usage ;;
        *) log "unknown option $1"; usage ;;
    esac
    shift
done
if [[ -z "$WAIT_SECS" ]]; then
    WAIT_SECS=15
    [[ $QUICK -eq 1 ]] && WAIT_SECS=5
    [[ $SMOKE -eq 1 ]] && WAIT_SECS=3
fi
[[ "$DURATION" =~ ^[0-9]+(\.[0-9]+)?$ && "$WARMUP" =~ ^[0-9]+(\.[0-9]+)?$ && "$WAIT_SECS" =~ ^[0-9]+$ ]] ||
    die "--duration, --warmup and --wait-secs take numbers"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "--rounds takes a number > 0, got '$ROUNDS'"
[[ "$CONTENDERS" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--contenders takes a list of numbers > 0, got '$CONTENDERS'"
IFS=, read -ra SYSTEM_LIST <<<"$SYSTEMS"
for s in "${SYSTEM_LIST[@]}"; do
    [[ ",$ALL_SYSTEMS," == *",$s,"* ]] || die "unknown system '$s' (known: $ALL_SYSTEMS)"
done

# Debian's etcd-server and redis-server (as scripts/install-deps.sh installs packages: once, quietly).
ensure_packages() {
    local missing=() p
    for p in etcd-server redis-server; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    log "installing Debian packages: ${missing[*]}"
    local sudo=()
    [[ "$(id -u)" == 0 ]] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    # The packages start their own service where systemd runs; ours use their own ports and dirs.
}
ensure_packages
command -v go >/dev/null || die "no 'go' on PATH (the harness is a Go program)"

pin_cpus 1 "$SERVER_CPU" "$CLIENT_CPUS"
STAMP="$(date -u +%Y%m%dT%H%M%SZ)"
OUT="${OUT:-$ROOT/bench/results/locks-$STAMP}"
mkdir -p "$OUT"
: >"$OUT/results.jsonl"
: >"$OUT/killtests.jsonl"
: >"$OUT/pinning.txt"
WORK="$(mktemp -d /tmp/paddock-locks.XXXXXX)"

PADDOCK=""
if [[ ",$SYSTEMS," == *,paddock-* ]]; then
    if [[ -n "$BIN_DIR" ]]; then
        PADDOCK="$BIN_DIR/paddock"
    else
        [[ $BUILD -eq 1 ]] && { log "building paddock (release)"; cargo build --release --locked -q -p paddock >&2; }
        PADDOCK="$CARGO_TARGET_DIR/release/paddock"
    fi
    [[ -x "$PADDOCK" ]] || die "no paddock binary at $PADDOCK"
fi
log "building the harness (bench/locks/harness)"
(cd bench/locks/harness && GOFLAGS=-mod=readonly go build -o "$WORK/lockbench" .) >&2 || die "the harness did not build"
LB="$WORK/lockbench"

# --- servers -----------------------------------------------------------------------------------
# Every process this script starts is in STARTED (pids) or ENSEMBLES (dirs); the trap stops them.
STARTED=() ENSEMBLES=()
cleanup() {
    local p d
    for d in "${ENSEMBLES[@]+"${ENSEMBLES[@]}"}"; do
        bash scripts/ensemble.sh stop --dir "$d" --wipe >/dev/null 2>&1 || true
    done
    for p in "${STARTED[@]+"${STARTED[@]}"}"; do kill -9 "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ports() { # N: N distinct free loopback ports (held open together so none repeats)
    python3 -c '
import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))' "$1"
}

# Per system: KIND (zk, etcd, redis), ENDPOINTS, PIDS (comma list), and the kill/restart steps.
# start_<kind>_<members> sets ENDPOINTS and PIDS; kill_leader kills the leader (or the one server)
# with SIGKILL and restarts it; stop_system stops everything of the current system.
SERVER_PIN=(taskset -c "$SERVER_CPU")

probe() { # kind endpoints seconds
    "${CLIENT_PIN[@]}" "$LB" --mode probe --system "$1" --endpoints "$2" --wait-secs "$3" >/dev/null
}

start_paddock_one() { # dir port
    mkdir -p "$1"
    # shellcheck disable=SC2086
    "${SERVER_PIN[@]}" "$PADDOCK" serve --port "$2" --data-dir "$1/data" $PADDOCK_EXTRA_ARGS \
        >>"$1/paddock.log" 2>&1 </dev/null &
    ONE_PID=$!
    disown "$ONE_PID"
    STARTED+=("$ONE_PID")
}
start_zookeeper_one() { # dir port
    mkdir -p "$1"
    ONE_PID="$("${SERVER_PIN[@]}" bash scripts/zookeeper.sh start "$2" "$1" 2>>"$1/start.err")" ||
        { cat "$1/start.err" >&2; die "ZooKeeper did not start"; }
    STARTED+=("$ONE_PID")
}
start_redis_one() { # dir port always|everysec|default
    local persist=(--appendonly yes --appendfsync "$3" --save "")
    # Debian's /etc/redis/redis.conf: no AOF, RDB snapshot points as below.
    [[ $3 == default ]] && persist=(--appendonly no --save "3600 1 300 100 60 10000")
    mkdir -p "$1"
    "${SERVER_PIN[@]}" redis-server --port "$2" --bind 127.0.0.1 --dir "$1" "${persist[@]}" \
        --daemonize no --logfile "$1/redis.log" </dev/null >/dev/null 2>&1 &
    ONE_PID=$!
    disown "$ONE_PID"
    STARTED+=("$ONE_PID")
}
etcd_member() { # k: starts member k of the current etcd system (ETCD_DIR, ETCD_CPORT[k], ETCD_PPORT[k])
    local k="$1" cluster="" i
    for ((i = 1; i <= ETCD_N; i++)); do cluster+="${cluster:+,}e$i=http://127.0.0.1:${ETCD_PPORT[$i]}"; done
    "${SERVER_PIN[@]}" etcd --name "e$k" --data-dir "$ETCD_DIR/e$k" \
        --listen-client-urls "http://127.0.0.1:${ETCD_CPORT[$k]}" \
        --advertise-client-urls "http://127.0.0.1:${ETCD_CPORT[$k]}" \
        --listen-peer-urls "http://127.0.0.1:${ETCD_PPORT[$k]}" \
        --initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PPORT[$k]}" \
        --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "locks-$STAMP" \
        --logger zap --log-outputs "$ETCD_DIR/e$k.log" </dev/null >/dev/null 2>&1 &
    ETCD_PID[$k]=$!
    disown "${ETCD_PID[$k]}"
    STARTED+=("${ETCD_PID[$k]}")
}

declare -a ETCD_CPORT ETCD_PPORT ETCD_PID
start_system() { # name: sets KIND ENDPOINTS PIDS
    local name="$1" dir="$WORK/$1" p k
    mkdir -p "$dir"
    case "$name" in
        paddock-1 | zookeeper-1)
            KIND=zk
            p="$(ports 1)"
            if [[ $name == paddock-1 ]]; then start_paddock_one "$dir" "$p"; else start_zookeeper_one "$dir" "$p"; fi
            ENDPOINTS="127.0.0.1:$p" PIDS="$ONE_PID"
            SYS_PORT="$p" SYS_DIR="$dir"
            ;;
        paddock-3 | zookeeper-3)
            KIND=zk
            local zk=()
            [[ $name == zookeeper-3 ]] && zk=(--zookeeper)
            # ensemble.sh wants a directory of its own (empty, or one of its ensembles).
            ENSEMBLES+=("$dir/ens")
            ENDPOINTS="$(PADDOCK_BIN="$PADDOCK" RUST_LOG=warn "${SERVER_PIN[@]}" bash scripts/ensemble.sh start 3 \
                --dir "$dir/ens" "${zk[@]+"${zk[@]}"}" 2>>"$dir/ensemble.err")" ||
                { tail -n 20 "$dir/ensemble.err" >&2; die "$name did not start"; }
            PIDS="$(for k in 1 2 3; do cat "$dir/ens/m$k/server.pid"; done | paste -sd,)"
            SYS_DIR="$dir/ens" SYS_ZK=("${zk[@]+"${zk[@]}"}")
            ;;
        etcd-1 | etcd-3)
            KIND=etcd ETCD_N="${name#etcd-}" ETCD_DIR="$dir"
            read -ra p <<<"$(ports $((2 * ETCD_N)))"
            for ((k = 1; k <= ETCD_N; k++)); do
                ETCD_CPORT[$k]="${p[$((2 * k - 2))]}" ETCD_PPORT[$k]="${p[$((2 * k - 1))]}"
            done
            for ((k = 1; k <= ETCD_N; k++)); do etcd_member "$k"; done
            ENDPOINTS="$(for ((k = 1; k <= ETCD_N; k++)); do echo "127.0.0.1:${ETCD_CPORT[$k]}"; done | paste -sd,)"
            PIDS="$(for ((k = 1; k <= ETCD_N; k++)); do echo "${ETCD_PID[$k]}"; done | paste -sd,)"
            ;;
        redis-always | redis-everysec | redis-default)
            KIND=redis
            p="$(ports 1)"
            start_redis_one "$dir" "$p" "${name#redis-}"
            ENDPOINTS="127.0.0.1:$p" PIDS="$ONE_PID" SYS_PORT="$p" SYS_DIR="$dir"
            ;;
    esac
    probe "$KIND" "$ENDPOINTS" 60 || die "$name did not serve on $ENDPOINTS"
}

# The etcd member that leads, by its client port's /v3/maintenance/status (the JSON gateway).
etcd_leader() {
    python3 - "${ETCD_CPORT[@]:1:$ETCD_N}" <<'PY'
import json, sys, urllib.request
for i, port in enumerate(sys.argv[1:], 1):
    try:
        r = json.load(urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{port}/v3/maintenance/status", data=b"{}"), timeout=2))
    except Exception:
        continue
    if r.get("leader") and r["leader"] == r.get("header", {}).get("member_id"):
        print(i)
        break
PY
}

# failover name addr: waits until the members but the one at addr (killed) serve, with a new leader
# (the probe writes), before it is restarted: the holder's session or lease lives through a real failover.
failover() {
    local survivors
    survivors="$(tr , '\n' <<<"$ENDPOINTS" | grep -vxF "$2" | paste -sd,)"
    [[ -n "$survivors" && "$survivors" != "$ENDPOINTS" ]] || die "$1: $2 is not among $ENDPOINTS"
    probe "$KIND" "$survivors" 60 || die "$1: the members but $2 did not serve within 60 s"
}

# kill_and_restart name: SIGKILL to the server (the leader of 3), then the same server again on its
# data; returns once the system serves. Sets PIDS anew and KILLED (what was killed).
kill_and_restart() {
    local name="$1" k pid addr
    case "$name" in
        paddock-1 | zookeeper-1 | redis-always | redis-everysec | redis-default)
            kill -9 "$PIDS"
            KILLED="the server (pid $PIDS)"
            while kill -0 "$PIDS" 2>/dev/null; do sleep 0.05; done
            case "$name" in
                paddock-1) start_paddock_one "$SYS_DIR" "$SYS_PORT" ;;
                zookeeper-1) start_zookeeper_one "$SYS_DIR" "$SYS_PORT" ;;
                *) start_redis_one "$SYS_DIR" "$SYS_PORT" "${name#redis-}" ;;
            esac
            PIDS="$ONE_PID"
            ;;
        paddock-3 | zookeeper-3)
            read -r k addr < <(bash scripts/ensemble.sh status --dir "$SYS_DIR" 2>/dev/null |
                awk '/leader/ {sub(/^server\./, "", $1); print $1, $2; exit}') || true
            [[ -n "${k:-}" ]] || die "$name: no leader to kill"
            pid="$(cat "$SYS_DIR/m$k/server.pid")"
            kill -9 "$pid"
            KILLED="the leader, member $k (pid $pid)"
            while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
            failover "$name" "$addr"
            PADDOCK_BIN="$PADDOCK" RUST_LOG=warn "${SERVER_PIN[@]}" bash scripts/ensemble.sh start 3 --dir "$SYS_DIR" \
                "${SYS_ZK[@]+"${SYS_ZK[@]}"}" >/dev/null 2>>"$SYS_DIR/../ensemble.err" || die "$name: member $k did not restart"
            PIDS="$(for k in 1 2 3; do cat "$SYS_DIR/m$k/server.pid"; done | paste -sd,)"
            ;;
        etcd-1 | etcd-3)
            k="$(etcd_leader)"
            [[ -n "$k" ]] || die "$name: no leader to kill"
            kill -9 "${ETCD_PID[$k]}"
            KILLED="the leader, member e$k (pid ${ETCD_PID[$k]})"
            [[ $ETCD_N -eq 1 ]] && KILLED="the server (pid ${ETCD_PID[$k]})"
            while kill -0 "${ETCD_PID[$k]}" 2>/dev/null; do sleep 0.05; done
            [[ $ETCD_N -gt 1 ]] && failover "$name" "127.0.0.1:${ETCD_CPORT[$k]}"
            etcd_member "$k"
            PIDS="$(for ((k = 1; k <= ETCD_N; k++)); do echo "${ETCD_PID[$k]}"; done | paste -sd,)"
            ;;
    esac
    probe "$KIND" "$ENDPOINTS" 60 || die "$name did not serve again after the kill"
}

stop_system() { # name
    local p d f
    # The servers' own logs (what a kill test's restart said, a Redis "AOF fsync is taking too long"),
    # kept per system and round; the data directories go.
    mkdir -p "$OUT/server-logs/$1-r$round"
    while IFS= read -r f; do
        cp "$f" "$OUT/server-logs/$1-r$round/$(tr / _ <<<"${f#"$WORK/$1/"}")" 2>/dev/null || true
    done < <(find "$WORK/$1" -name '*.log' -type f -size -20M 2>/dev/null)
    for d in "${ENSEMBLES[@]+"${ENSEMBLES[@]}"}"; do
        bash scripts/ensemble.sh stop --dir "$d" --wipe >/dev/null 2>&1 || true
    done
    ENSEMBLES=()
    for p in "${STARTED[@]+"${STARTED[@]}"}"; do
        kill "$p" 2>/dev/null || true
    done
    for p in "${STARTED[@]+"${STARTED[@]}"}"; do
        for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null || true
    done
    STARTED=()
    rm -rf "${WORK:?}/$1"
}

FAILED=0
# verify_pinned name when: every thread of every server process on SERVER_CPU only.
verify_pinned() {
    local name="$1" when="$2" p out verdict
    for p in ${PIDS//,/ }; do
        if ! out="$(taskset -a -p -c "$p" 2>&1)"; then
            echo "$name pid $p $when: taskset failed: $out" >>"$OUT/pinning.txt"
            FAILED=1
            continue
        fi
        verdict="$(python3 -c '
import sys
def expand(l):
    s = set()
    for part in l.split(","):
        a, _, b = part.partition("-")
        s.update(range(int(a), int(b or a) + 1))
    return s
want = expand(sys.argv[1])
lines = [l for l in sys.stdin.read().splitlines() if "affinity list:" in l]
bad = [l for l in lines if expand(l.rsplit(":", 1)[1].strip()) != want]
print(("BAD " + "; ".join(bad[:3])) if bad or not lines else f"ok {len(lines)}")' "$SERVER_CPU" <<<"$out")"
        if [[ "$verdict" == ok* ]]; then
            echo "$name pid $p $when: ${verdict#ok } threads, all on CPU(s) $SERVER_CPU" >>"$OUT/pinning.txt"
        else
            echo "$name pid $p $when: NOT PINNED: ${verdict#BAD }" >>"$OUT/pinning.txt"
            log "$name pid $p $when: threads off CPU(s) $SERVER_CPU"
            FAILED=1
        fi
    done
}

run_cell() { # name contenders round [redis-wait]
    local name="$1" n="$2" round="$3" wait="${4:-}" label="$1" extra=()
    if [[ -n "$wait" ]]; then extra=(--redis-wait "$wait"); label="$name/$wait"; fi
    log "$label: $n contender(s), ${DURATION}s, round $round of $ROUNDS"
    if ! "${CLIENT_PIN[@]}" "$LB" --mode bench --round "$round" --system "$KIND" --endpoints "$ENDPOINTS" --pids "$PIDS" \
        --contenders "$n" --duration-secs "$DURATION" --warmup-secs "$WARMUP" --label "$label" \
        "${extra[@]+"${extra[@]}"}" --json "$OUT/results.jsonl" >/dev/null 2>>"$OUT/harness.err"; then
        log "$label at $n contenders FAILED: $(tail -n 1 "$OUT/results.jsonl")"
        FAILED=1
    fi
}

kill_test() { # name
    local name="$1" line
    log "$name: kill test"
    coproc KT { "${CLIENT_PIN[@]}" "$LB" --mode killtest --system "$KIND" --endpoints "$ENDPOINTS" \
        --label "$name" --wait-secs "$WAIT_SECS" 2>>"$OUT/harness.err"; }
    local kt_out="${KT[0]}" kt_in="${KT[1]}" kt_pid="$KT_PID"
    if ! read -r -t 60 line <&"$kt_out" || [[ "$line" != HELD* ]]; then
        log "$name: the kill test's holder did not take the lock: $line"
        kill "$kt_pid" 2>/dev/null || true
        FAILED=1
        return
    fi
    kill_and_restart "$name"
    echo restarted >&"$kt_in"
    read -r -t $((WAIT_SECS + 60)) line <&"$kt_out" || line=""
    local rc=0
    wait "$kt_pid" || rc=$?
    [[ "$line" == "{"* ]] || { log "$name: the kill test gave no report"; FAILED=1; return; }
    # The harness exits 1 on an error, or when the holder and the other client both held the lock.
    [[ $rc -eq 0 ]] || { log "$name: the kill test failed: $line"; FAILED=1; }
    python3 -c '
import json, sys
r = json.loads(sys.argv[1]); r["killed"] = sys.argv[2]
print(json.dumps(r))' "$line" "$KILLED" >>"$OUT/killtests.jsonl"
    log "$name: $(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["verdict"])' "$line")"
}

# disk_probe: the disk's cost of one synced 512-byte write, from the servers' CPU, with no server
# running: appending to a file that grows (as Redis's AOF does) and overwriting a preallocated file (as
# the write-ahead logs of paddock, ZooKeeper and etcd mostly do); median and p99 of 200 each, in µs.
disk_probe() {
    # The smoke measures nothing: no probe (a second or more on a busy disk).
    [[ $SMOKE -eq 1 ]] && { echo null; return; }
    "${SERVER_PIN[@]}" python3 - "$WORK/disk-probe" <<'PY'
import json, os, sys, time
def run(path, prealloc, n=200):
    fd = os.open(path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY)
    if prealloc:
        os.posix_fallocate(fd, 0, n * 512)
        os.fsync(fd)
    ts = []
    for i in range(n):
        t = time.perf_counter()
        if prealloc:
            os.pwrite(fd, b"x" * 512, i * 512)
        else:
            os.write(fd, b"x" * 512)
        os.fdatasync(fd)
        ts.append(time.perf_counter() - t)
    os.close(fd)
    os.unlink(path)
    ts.sort()
    return round(ts[n // 2] * 1e6), round(ts[int(n * 0.99)] * 1e6)
a, p = run(sys.argv[1], False), run(sys.argv[1], True)
print(json.dumps({"append_fdatasync_p50_us": a[0], "append_fdatasync_p99_us": a[1],
                  "prealloc_fdatasync_p50_us": p[0], "prealloc_fdatasync_p99_us": p[1]}))
PY
}

IFS=, read -ra CONT_LIST <<<"$CONTENDERS"
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
log "pinned: servers on CPU(s) $SERVER_CPU, generator on CPU(s) $CLIENT_CPUS; load average $LOAD_START"
DISK_START="$(disk_probe)"
for ((round = 1; round <= ROUNDS; round++)); do
    for name in "${SYSTEM_LIST[@]}"; do
        log "$name: starting"
        start_system "$name"
        for n in "${CONT_LIST[@]}"; do
            if [[ $KIND == redis ]]; then
                run_cell "$name" "$n" "$round" sleep
                run_cell "$name" "$n" "$round" tight
            else
                run_cell "$name" "$n" "$round"
            fi
        done
        verify_pinned "$name" "after the runs of round $round"
        # One kill test per system, in the first round.
        if [[ $KILL -eq 1 && $round -eq 1 ]]; then
            kill_test "$name"
            verify_pinned "$name" "after the kill test's restart"
        fi
        stop_system "$name"
    done
done
LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg)"
DISK_END="$(disk_probe)"

cat >"$OUT/params.json" <<EOF
{"git_rev": "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)", "date_utc": "$(date -u +%FT%TZ)",
 "loadavg_start": "$LOAD_START", "loadavg_end": "$LOAD_END", "nproc": $(nproc),
 "server_cpus": "$SERVER_CPU", "client_cpus": "$CLIENT_CPUS", "duration_secs": $DURATION,
 "warmup_secs": $WARMUP, "rounds": $ROUNDS, "contenders": "$CONTENDERS",
 "disk_start": $DISK_START, "disk_end": $DISK_END, "systems": "$SYSTEMS", "kill_wait_secs": $WAIT_SECS,
 "versions": {"paddock": "$([[ -n "$PADDOCK" ]] && "$PADDOCK" --version 2>/dev/null | head -n1)",
  "etcd": "$(etcd --version 2>/dev/null | head -n1)", "redis": "$(redis-server --version | cut -d' ' -f3)",
  "zookeeper": "$(bash scripts/zookeeper.sh version 2>/dev/null || echo unknown)"}}
EOF
python3 bench/locks/table.py "$OUT" | tee "$OUT/table.txt"
# Every cell and kill test must have reported (a missing one is a failure, not a blank).
cells_want=0
for name in "${SYSTEM_LIST[@]}"; do
    per=1
    [[ $name == redis-* ]] && per=2
    cells_want=$((cells_want + per * ${#CONT_LIST[@]} * ROUNDS))
done
cells_got="$(grep -c '"mode":"bench"' "$OUT/results.jsonl" || true)"
[[ "$cells_got" -eq "$cells_want" ]] || { log "$cells_got of $cells_want cells reported"; FAILED=1; }
if [[ $KILL -eq 1 ]]; then
    kills_got="$(grep -c '"verdict"' "$OUT/killtests.jsonl" || true)"
    [[ "$kills_got" -eq ${#SYSTEM_LIST[@]} ]] || { log "$kills_got of ${#SYSTEM_LIST[@]} kill tests reported"; FAILED=1; }
fi
verdict_of() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("label") == sys.argv[2]: print(r.get("verdict", ""))' "$OUT/killtests.jsonl" "$1"; }
if [[ $SMOKE -eq 1 ]]; then
    v="$(verdict_of paddock-1)"
    [[ "$v" == kept ]] || { log "smoke: paddock-1's kill test: '$v', expected 'kept'"; FAILED=1; }
    v="$(verdict_of redis-default)"
    [[ "$v" == "LOST, holder not told" ]] ||
        { log "smoke: redis-default's kill test: '$v', expected 'LOST, holder not told'"; FAILED=1; }
fi
[[ -s "$OUT/harness.err" ]] && log "harness stderr: $OUT/harness.err"
if [[ $FAILED -ne 0 ]]; then
    log "FAILED: a cell saw an error or an exclusion violation, or pinning did not hold (see $OUT)"
    exit 1
fi
log "results in $OUT"
