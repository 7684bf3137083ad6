#!/usr/bin/env bash
# Runs the same paddock-bench workloads against paddock and Apache ZooKeeper 3.9 on this machine and
# prints paddock/ZooKeeper ratios next to the issue's targets.
#
#   bench/compare.sh                 modest defaults: the whole comparison takes a few minutes
#   bench/compare.sh --full          the issue's sizes: fill of 500k znodes of 100 bytes
#   bench/compare.sh --zk-vs-zk      both sides are ZooKeeper (dry run of this script)
#   bench/compare.sh --ensemble 3    each side a 3-member ensemble on loopback (scripts/ensemble.sh, the
#                                    same zoo.cfg for both), clients spread evenly over the members;
#                                    the workloads only (no fill/restart: that is a one-server measure)
#
# Options: --rounds R (default 3), --duration S (per workload and round, default 5), --clients C (8), --inflight I (4),
#   --contenders K (8), --znodes N (20000; 500000 with --full), --value-size B (100), --keys N (1000),
#   --no-build (use the binaries already in $CARGO_TARGET_DIR/release), --out DIR.
# Environment: CARGO_TARGET_DIR (default ~/.cache/paddock-target), ZK_HEAP (default 1g, ZooKeeper's own
#   distribution default), PADDOCK_EXTRA_ARGS (default "--max-client-cnxns 0", like the ZK config).
#
# Each side gets a fresh server and data directory and a 3 s unrecorded warm-up (the JVM's JIT would
# otherwise lose the first workload). Both servers stay up, but only one is under load at a time: the
# rounds of create, set, get, mixed, lock alternate between the sides (a shared 2-core machine drifts;
# alternating spreads the drift over both). Then, per side, fill, the server's VmRSS, SIGKILL, start
# again, and the time until the last filled znode is readable. Results: bench/results/<timestamp>/.
# Besides rates and latencies, each run records the server's own CPU time (from /proc), reported as
# CPU microseconds per op: on a small machine the load generator takes a core of its own, which
# caps both sides' throughput alike and hides how much cheaper one server is per op.
# Exit code: 0 when every run was correct (no failed op, no lock exclusion violation), whatever the
# ratios; 1 otherwise; 2 for bad usage or a server that did not start.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/paddock-target}"
export ZK_HEAP="${ZK_HEAP:-1g}"
PADDOCK_EXTRA_ARGS="${PADDOCK_EXTRA_ARGS:---max-client-cnxns 0}"

ROUNDS=3 DURATION=5 CLIENTS=8 INFLIGHT=4 CONTENDERS=8 ZNODES=20000 VALUE_SIZE=100 KEYS=1000
FULL=0 ZK_VS_ZK=0 BUILD=1 OUT="" ENSEMBLE=0
usage() { sed -n '2,27p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --full) FULL=1 ZNODES=500000 ;;
        --zk-vs-zk) ZK_VS_ZK=1 ;;
        --no-build) BUILD=0 ;;
        --ensemble) ENSEMBLE="$2"; shift ;;
        --duration) DURATION="$2"; shift ;;
        --rounds) ROUNDS="$2"; shift ;;
        --clients) CLIENTS="$2"; shift ;;
        --inflight) INFLIGHT="$2"; shift ;;
        --contenders) CONTENDERS="$2"; shift ;;
        --znodes) ZNODES="$2"; shift ;;
        --value-size) VALUE_SIZE="$2"; shift ;;
        --keys) KEYS="$2"; shift ;;
        --out) OUT="$2"; shift ;;
        -h|--help) usage ;;
        *) echo "compare.sh: unknown option $1" >&2; usage ;;
    esac
    shift
done

log() { echo "compare.sh: $*" >&2; }
die() { echo "compare.sh: error: $*" >&2; exit 2; }
[[ "$ENSEMBLE" == 0 || "$ENSEMBLE" == 3 || "$ENSEMBLE" == 5 ]] || die "--ensemble takes 3 or 5, got '$ENSEMBLE'"

BENCH="$CARGO_TARGET_DIR/release/paddock-bench"
PADDOCK="$CARGO_TARGET_DIR/release/paddock"
if [[ $BUILD -eq 1 ]]; then
    log "building release binaries (cargo build --release -p paddock -p paddock-bench)"
    if ! cargo build --release --locked -p paddock -p paddock-bench >&2; then
        log "paddock did not build; building the load generator alone"
        cargo build --release --locked -p paddock-bench >&2 || die "paddock-bench does not build"
    fi
fi
[[ -x "$BENCH" ]] || die "no load generator at $BENCH (run without --no-build)"
if [[ $ZK_VS_ZK -eq 0 && ! -x "$PADDOCK" ]]; then
    log "NOTE: no paddock binary at $PADDOCK: measuring ZooKeeper alone; the paddock column stays empty."
    log "      Build it with: cargo build --release -p paddock   (or dry-run this script with --zk-vs-zk)"
    SIDES=(zookeeper)
elif [[ $ZK_VS_ZK -eq 1 ]]; then
    SIDES=(zookeeper zookeeper-b)
else
    SIDES=(paddock zookeeper)
fi

OUT="${OUT:-$ROOT/bench/results/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/paddock-compare.XXXXXX")"
log "results in $OUT, server data in $WORK"
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
# The checkout the run started from (binaries may be older with --no-build).
GIT_REV="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo +dirty)"

# Servers this script started, as "kind:pid:datadir", so the trap stops exactly those.
STARTED=()
stop_all() {
    local entry kind pid dir
    for entry in "${STARTED[@]+"${STARTED[@]}"}"; do
        IFS=: read -r kind pid dir <<<"$entry"
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null || true
        fi
    done
    STARTED=()
}
stop_ensembles() {
    local side
    for side in "${SIDES[@]}"; do
        [[ -f "$WORK/$side/ensemble.env" ]] && bash scripts/ensemble.sh stop --dir "$WORK/$side" >/dev/null 2>&1
    done
    return 0
}
cleanup() { stop_all; [[ $ENSEMBLE -ne 0 ]] && stop_ensembles; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# start_server <side> <port> <datadir>: starts it in the background and sets PID. Does not wait
# for it to serve; callers probe. (Not run in $(...): the trap must learn of every server.)
start_server() {
    local side="$1" port="$2" dir="$3" pid
    mkdir -p "$dir"
    case "$side" in
        paddock)
            # shellcheck disable=SC2086
            "$PADDOCK" serve --port "$port" --data-dir "$dir/data" $PADDOCK_EXTRA_ARGS \
                >>"$dir/paddock.log" 2>&1 </dev/null &
            pid=$!
            disown "$pid" # the SIGKILL for the restart test is on purpose; bash need not report it
            ;;
        zookeeper*)
            # zookeeper.sh writes the pid file at once and prints the pid once ruok answers;
            # run it in the background so the probe below times the real readiness.
            # A SIGKILLed server leaves its pid file behind; reading that stale pid would lose
            # track of the new server (and leak it past the trap).
            rm -f "$dir/zk.pid"
            bash scripts/zookeeper.sh start "$port" "$dir" >"$dir/start.out" 2>>"$dir/start.err" &
            for _ in $(seq 1 200); do [[ -s "$dir/zk.pid" ]] && break; sleep 0.05; done
            [[ -s "$dir/zk.pid" ]] || { cat "$dir/start.err" >&2; die "ZooKeeper did not start"; }
            pid="$(cat "$dir/zk.pid")"
            tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$dir" ||
                die "pid $pid from $dir/zk.pid is not the ZooKeeper started there"
            ;;
    esac
    STARTED+=("$side:$pid:$dir")
    PID="$pid"
}

# probe <port> <path> <timeout_s> <json>: waits until <path> is readable; fails if it never is.
probe() {
    "$BENCH" --hosts "127.0.0.1:$1" --workload probe --path "$2" --duration-secs "$3" --label probe \
        --json "$4" 2>>"$OUT/bench.log"
}

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
# CPU the process has used, user plus system, in clock ticks (fields 14 and 15 of /proc/PID/stat,
# counted after the command name, which may hold spaces).
# With --ensemble the argument is a space-separated list of pids (every member): their sum.
cpu_ticks() {
    local p t=0
    for p in $1; do t=$((t + $(sed 's/^.*) //' "/proc/$p/stat" | awk '{print $12 + $13}'))); done
    echo "$t"
}
CLK_TCK="$(getconf CLK_TCK)"

FAILED=0
COMMON=(--clients "$CLIENTS" --value-size "$VALUE_SIZE" --keys "$KEYS")
declare -A PORT PIDOF DIROF HOSTS
SPREAD=()
[[ $ENSEMBLE -ne 0 ]] && SPREAD=(--spread)

bench_on() { # side, then paddock-bench arguments
    local side="$1"
    shift
    "$BENCH" --hosts "${HOSTS[$side]}" --label "$side" "${SPREAD[@]+"${SPREAD[@]}"}" "${COMMON[@]}" "$@" 2>>"$OUT/bench.log"
}

start_side() {
    local side="$1"
    if [[ $ENSEMBLE -ne 0 ]]; then
        start_ensemble "$side"
        return
    fi
    PORT[$side]="$(free_port)"
    DIROF[$side]="$WORK/$side"
    log "[$side] starting on 127.0.0.1:${PORT[$side]}"
    start_server "$side" "${PORT[$side]}" "${DIROF[$side]}"
    PIDOF[$side]="$PID"
    HOSTS[$side]="127.0.0.1:${PORT[$side]}"
    probe "${PORT[$side]}" / 90 "$OUT/$side-ready.json" || die "$side did not serve within 90 s (see ${DIROF[$side]})"
    bench_on "$side" --workload mixed --inflight "$INFLIGHT" --duration-secs 3 >/dev/null || true
}

# start_ensemble <side>: an ENSEMBLE-member ensemble of that kind from scripts/ensemble.sh; its connect
# string and every member's pid (for the CPU rows), then the same warm-up.
start_ensemble() {
    local side="$1" flag="" k pids=""
    [[ "$side" == zookeeper* ]] && flag=--zookeeper
    DIROF[$side]="$WORK/$side"
    log "[$side] starting a $ENSEMBLE-member ensemble"
    # shellcheck disable=SC2086
    HOSTS[$side]="$(PADDOCK_BIN="$PADDOCK" bash scripts/ensemble.sh start "$ENSEMBLE" --dir "${DIROF[$side]}" $flag \
        2>>"$OUT/ensemble.log")" || die "$side ensemble did not start (see $OUT/ensemble.log)"
    for ((k = 1; k <= ENSEMBLE; k++)); do pids+="${pids:+ }$(cat "${DIROF[$side]}/m$k/server.pid")"; done
    PIDOF[$side]="$pids"
    log "[$side] serving on ${HOSTS[$side]} (pids $pids)"
    bench_on "$side" --workload mixed --inflight "$INFLIGHT" --duration-secs 3 >/dev/null || true
}

# fill_and_restart <side>: fill, resident size, SIGKILL, restart, time until the last znode reads.
fill_and_restart() {
    local side="$1" pid t0 t1 rss last restart_ms
    pid="${PIDOF[$side]}"
    log "[$side] fill $ZNODES znodes"
    # Fill is about the end state: more requests in flight so it finishes sooner on both sides.
    if ! bench_on "$side" --workload fill --znodes "$ZNODES" --inflight $((INFLIGHT * 4)) --keep \
        --root /bench-fill --json "$OUT/$side-fill.json"; then
        log "[$side] fill FAILED (see $OUT/bench.log)"
        FAILED=1
        return
    fi
    sleep 2 # let the server settle (GC, flushes) before reading its resident size
    rss="$(rss_kb "$pid")"
    log "[$side] VmRSS after fill: $rss kB"
    last="$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["fill"]["last_path"])' \
        "$OUT/$side-fill.json")"
    log "[$side] SIGKILL and restart"
    kill -9 "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    t0="$(date +%s%N)"
    start_server "$side" "${PORT[$side]}" "${DIROF[$side]}"
    PIDOF[$side]="$PID"
    if ! probe "${PORT[$side]}" "$last" 300 "$OUT/$side-restart.json"; then
        log "[$side] $last not readable within 300 s after restart"
        FAILED=1
    fi
    t1="$(date +%s%N)"
    restart_ms=$(((t1 - t0) / 1000000))
    log "[$side] serving $last again after $restart_ms ms"
    printf '{"side":"%s","rss_after_fill_kb":%s,"restart_ms":%s,"znodes":%s}\n' \
        "$side" "$rss" "$restart_ms" "$ZNODES" >"$OUT/$side-server.json"
}

for side in "${SIDES[@]}"; do
    start_side "$side"
done
# Rounds interleave the sides and flip their order each round, so load from anything else on the
# machine falls on both alike; the table reports medians and the spread of per-round ratios.
for round in $(seq 1 "$ROUNDS"); do
    order=("${SIDES[@]}")
    if ((round % 2 == 0)); then
        order=()
        for ((i = ${#SIDES[@]} - 1; i >= 0; i--)); do order+=("${SIDES[$i]}"); done
    fi
    for w in create set get mixed lock; do
        for side in "${order[@]}"; do
            log "[$side] round $round: $w for ${DURATION}s"
            cpu0="$(cpu_ticks "${PIDOF[$side]}")"
            if ! bench_on "$side" --workload "$w" --inflight "$INFLIGHT" --duration-secs "$DURATION" \
                --contenders "$CONTENDERS" --json "$OUT/$side-$w-r$round.json"; then
                log "[$side] $w FAILED (see $OUT/bench.log)"
                FAILED=1
            fi
            # The server's own CPU over the run (its set-up and clean-up included): the load
            # generator shares the machine, so throughput alone understates a cheaper server.
            printf '{"server_cpu_secs":%s}\n' \
                "$(echo "$(cpu_ticks "${PIDOF[$side]}") $cpu0 $CLK_TCK" | awk '{printf "%.3f", ($1 - $2) / $3}')" \
                >"$OUT/cpu-$side-$w-r$round.json"
        done
    done
done
if [[ $ENSEMBLE -eq 0 ]]; then
    for side in "${SIDES[@]}"; do
        fill_and_restart "$side"
    done
fi
stop_all
[[ $ENSEMBLE -ne 0 ]] && stop_ensembles

# The machine is shared: keep what was running besides the benchmark next to the numbers.
LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg)"
printf '{"git_rev":"%s","loadavg_start":"%s","loadavg_end":"%s","full":%s,"zk_vs_zk":%s,"rounds":%s,"duration_secs":%s,"clients":%s,"inflight":%s,"contenders":%s,"znodes":%s,"value_size":%s,"keys":%s,"zk_heap":"%s","sides":"%s","ensemble":%s}\n' \
    "$GIT_REV" "$LOAD_START" "$LOAD_END" "$FULL" "$ZK_VS_ZK" "$ROUNDS" "$DURATION" "$CLIENTS" "$INFLIGHT" "$CONTENDERS" "$ZNODES" "$VALUE_SIZE" "$KEYS" \
    "$ZK_HEAP" "${SIDES[*]}" "$ENSEMBLE" >"$OUT/params.json"

# Side A is the candidate (paddock, or the second ZooKeeper in a dry run); side B is ZooKeeper.
A="${SIDES[0]}" B="zookeeper"
[[ ${#SIDES[@]} -eq 1 ]] && A="paddock"
[[ $ZK_VS_ZK -eq 1 ]] && A="zookeeper-b"
python3 - "$OUT" "$A" "$B" "$FULL" <<'EOF' | tee "$OUT/table.txt"
import glob, json, os, statistics, sys

out, a, b, full = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"

def load(path):
    with open(path) as f:
        line = f.readline()
    return json.loads(line) if line.strip() else None

def rounds(side, file):
    """Reports of every round for side/file, by round number (one entry for fill and server)."""
    found = {}
    for p in glob.glob(os.path.join(out, f"{side}-{file}-r*.json")):
        found[int(p.rsplit("-r", 1)[1][:-5])] = load(p)
    single = os.path.join(out, f"{side}-{file}.json")
    if not found and os.path.exists(single):
        found[1] = load(single)
    return found

def median(values):
    values = [v for v in values if isinstance(v, (int, float))]
    return statistics.median(values) if values else None

# (workload, metric, how to read a report, target on a/b: (">=", x) or ("<=", x), or None, file)
rows = []
for w, t in [("create", 2.0), ("set", 2.0), ("get", 1.5), ("mixed", None)]:
    rows.append((w, "ops/s", lambda r: r["ops_per_sec"], (">=", t) if t else None, w))
    rows.append((w, "p99 us", lambda r: r["latency_us"]["p99"], ("<=", 1.0), w))
rows.append(("lock", "hand-offs/s", lambda r: r["lock"]["handoffs_per_sec"], (">=", 2.0), "lock"))
rows.append(("lock", "p99 acquire us", lambda r: r["latency_us"]["p99"], ("<=", 1.0), "lock"))
rows.append(("lock", "violations", lambda r: r["lock"]["exclusion_violations"], None, "lock"))
rows.append(("fill", "ops/s", lambda r: r["ops_per_sec"], None, "fill"))
rows.append(("fill", "p99 us", lambda r: r["latency_us"]["p99"], ("<=", 1.0), "fill"))
rows.append(("fill", "RSS after MiB", lambda r: round(r["rss_after_fill_kb"] / 1024, 1), ("<=", 1 / 3), "server"))
rows.append(("restart", "to serving ms", lambda r: r["restart_ms"], None, "server"))

def cell(v):
    if v is None:
        return "-"
    return f"{v:.0f}" if isinstance(v, float) and v >= 100 else str(v)

header = ("workload", "metric", a, b, "ratio", "per-round ratios", "target")
lines = [header]
for w, metric, get, target, file in rows:
    va_all = {k: get(r) for k, r in rounds(a, file).items() if r}
    vb_all = {k: get(r) for k, r in rounds(b, file).items() if r}
    # Violations are a count to add up; everything else is a rate or latency to take the middle of.
    pick = (lambda vs: sum(vs) if vs else None) if metric == "violations" else median
    va, vb = pick(list(va_all.values())), pick(list(vb_all.values()))
    ratio = va / vb if va is not None and vb else None
    per = [va_all[k] / vb_all[k] for k in sorted(va_all) if vb_all.get(k)]
    spread = f"{min(per):.2f}..{max(per):.2f}" if len(per) > 1 else ""
    tcell = ""
    if target and ratio is not None:
        op, x = target
        ok = ratio >= x if op == ">=" else ratio <= x
        tcell = f"{op} {x:.2f} {'ok' if ok else 'MISS'}"
    if w == "restart" and va is not None:
        tcell = f"{a} <= 5000 ms {'ok' if va <= 5000 else 'MISS'}" + ("" if full else " (at --full)")
    if w == "fill" and metric.startswith("RSS") and not full and tcell:
        tcell += " (at --full)"
    lines.append((w, metric, cell(va), cell(vb), "-" if ratio is None else f"{ratio:.2f}", spread, tcell))

def cpu_per_op(side, w):
    """The server's CPU microseconds per counted op (per hand-off for lock), by round."""
    found = {}
    for k, r in rounds(side, w).items():
        c = os.path.join(out, f"cpu-{side}-{w}-r{k}.json")
        if r and r.get("count") and os.path.exists(c):
            found[k] = round(load(c)["server_cpu_secs"] * 1e6 / r["count"], 1)
    return found

for w in ("create", "set", "get", "mixed", "lock"):
    va_all, vb_all = cpu_per_op(a, w), cpu_per_op(b, w)
    va, vb = median(list(va_all.values())), median(list(vb_all.values()))
    ratio = va / vb if va is not None and vb else None
    per = [va_all[k] / vb_all[k] for k in sorted(va_all) if vb_all.get(k)]
    spread = f"{min(per):.2f}..{max(per):.2f}" if len(per) > 1 else ""
    lines.append((w, "server CPU us/op", cell(va), cell(vb), "-" if ratio is None else f"{ratio:.2f}", spread, ""))
widths = [max(len(str(l[i])) for l in lines) for i in range(len(header))]
for i, l in enumerate(lines):
    print(" | ".join(str(c).ljust(widths[j]) for j, c in enumerate(l)).rstrip())
    if i == 0:
        print("-+-".join("-" * wd for wd in widths))
print(f"{a} and {b}: medians over rounds; ratio = {a}/{b}")
print("server CPU us/op: the server process's user+system CPU over a run (set-up and clean-up included)")
print("  divided by the ops it counted; the load generator shares the machine's cores, so this is the")
print("  cost per op that throughput alone hides")
EOF
if [[ $FAILED -ne 0 ]]; then
    log "some runs FAILED their correctness checks; see $OUT/bench.log"
    exit 1
fi
log "done: $OUT"
