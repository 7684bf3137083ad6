#!/usr/bin/env bash
# Runs the same paddock-bench workloads against paddock and Apache ZooKeeper 3.9 on this machine and
# prints paddock/ZooKeeper ratios next to the issue's targets.
#
#   bench/compare.sh                 modest defaults: the whole comparison takes a few minutes
#   bench/compare.sh --full          the issue's sizes: fill of 500k znodes of 100 bytes
#   bench/compare.sh --zk-vs-zk      both sides are ZooKeeper (dry run of this script)
#
# Options: --duration S (per workload, default 10), --clients C (8), --inflight I (4),
#   --contenders K (8), --znodes N (20000; 500000 with --full), --value-size B (100), --keys N (1000),
#   --no-build (use the binaries already in $CARGO_TARGET_DIR/release), --out DIR.
# Environment: CARGO_TARGET_DIR (default ~/.cache/paddock-target), ZK_HEAP (default 1g, ZooKeeper's own
#   distribution default), PADDOCK_EXTRA_ARGS (default "--max-client-cnxns 0", like the ZK config).
#
# Each side gets a fresh server and data directory, runs alone (never both at once, they would share
# the 2 cores), gets a 3 s unrecorded warm-up (the JVM's JIT would otherwise lose the first workload),
# then create, set, get, mixed, lock, fill. After fill: the server's VmRSS, then SIGKILL, start again,
# and the time until the last filled znode is readable. Results: bench/results/<timestamp>/.
# Exit code: 0 when every run was correct (no failed op, no lock exclusion violation), whatever the
# ratios; 1 otherwise; 2 for bad usage or a server that did not start.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/paddock-target}"
export ZK_HEAP="${ZK_HEAP:-1g}"
PADDOCK_EXTRA_ARGS="${PADDOCK_EXTRA_ARGS:---max-client-cnxns 0}"

DURATION=10 CLIENTS=8 INFLIGHT=4 CONTENDERS=8 ZNODES=20000 VALUE_SIZE=100 KEYS=1000
FULL=0 ZK_VS_ZK=0 BUILD=1 OUT=""
usage() { sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --full) FULL=1 ZNODES=500000 ;;
        --zk-vs-zk) ZK_VS_ZK=1 ;;
        --no-build) BUILD=0 ;;
        --duration) DURATION="$2"; shift ;;
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
cleanup() { stop_all; rm -rf "$WORK"; }
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
            ;;
        zookeeper*)
            # zookeeper.sh writes the pid file at once and prints the pid once ruok answers;
            # run it in the background so the probe below times the real readiness.
            bash scripts/zookeeper.sh start "$port" "$dir" >"$dir/start.out" 2>>"$dir/start.err" &
            for _ in $(seq 1 100); do [[ -s "$dir/zk.pid" ]] && break; sleep 0.05; done
            [[ -s "$dir/zk.pid" ]] || { cat "$dir/start.err" >&2; die "ZooKeeper did not start"; }
            pid="$(cat "$dir/zk.pid")"
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

FAILED=0
COMMON=(--clients "$CLIENTS" --value-size "$VALUE_SIZE" --keys "$KEYS")

run_side() {
    local side="$1" port dir pid w t0 t1 rss last
    PID=""
    port="$(free_port)"
    dir="$WORK/$side"
    log "[$side] starting on 127.0.0.1:$port"
    start_server "$side" "$port" "$dir"
    pid="$PID"
    probe "$port" / 90 "$OUT/$side-ready.json" || die "$side did not serve within 90 s (see $dir)"
    local bench=("$BENCH" --hosts "127.0.0.1:$port" --label "$side" "${COMMON[@]}")
    "${bench[@]}" --workload mixed --inflight "$INFLIGHT" --duration-secs 3 >/dev/null 2>>"$OUT/bench.log" || true
    for w in create set get mixed lock; do
        log "[$side] $w for ${DURATION}s"
        if ! "${bench[@]}" --workload "$w" --inflight "$INFLIGHT" --duration-secs "$DURATION" --contenders "$CONTENDERS" \
            --json "$OUT/$side-$w.json" 2>>"$OUT/bench.log"; then
            log "[$side] $w FAILED (see $OUT/bench.log)"
            FAILED=1
        fi
    done
    log "[$side] fill $ZNODES znodes"
    # Fill is about the end state: more requests in flight so it finishes sooner on both sides.
    if ! "${bench[@]}" --workload fill --znodes "$ZNODES" --inflight $((INFLIGHT * 4)) --keep \
        --root /bench-fill --json "$OUT/$side-fill.json" 2>>"$OUT/bench.log"; then
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
    start_server "$side" "$port" "$dir"
    pid="$PID"
    if ! probe "$port" "$last" 300 "$OUT/$side-restart.json"; then
        log "[$side] $last not readable within 300 s after restart"
        FAILED=1
    fi
    t1="$(date +%s%N)"
    local restart_ms=$(((t1 - t0) / 1000000))
    log "[$side] serving $last again after $restart_ms ms"
    printf '{"side":"%s","rss_after_fill_kb":%s,"restart_ms":%s,"znodes":%s}\n' \
        "$side" "$rss" "$restart_ms" "$ZNODES" >"$OUT/$side-server.json"
    stop_all
}

for side in "${SIDES[@]}"; do
    run_side "$side"
done

printf '{"full":%s,"zk_vs_zk":%s,"duration_secs":%s,"clients":%s,"inflight":%s,"contenders":%s,"znodes":%s,"value_size":%s,"keys":%s,"zk_heap":"%s","sides":"%s"}\n' \
    "$FULL" "$ZK_VS_ZK" "$DURATION" "$CLIENTS" "$INFLIGHT" "$CONTENDERS" "$ZNODES" "$VALUE_SIZE" "$KEYS" \
    "$ZK_HEAP" "${SIDES[*]}" >"$OUT/params.json"

# Side A is the candidate (paddock, or the second ZooKeeper in a dry run); side B is ZooKeeper.
A="${SIDES[0]}" B="zookeeper"
[[ ${#SIDES[@]} -eq 1 ]] && A="paddock"
[[ $ZK_VS_ZK -eq 1 ]] && A="zookeeper-b"
python3 - "$OUT" "$A" "$B" "$FULL" <<'EOF' | tee "$OUT/table.txt"
import json, os, sys

out, a, b, full = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"

def load(name):
    p = os.path.join(out, name)
    if not os.path.exists(p):
        return None
    with open(p) as f:
        line = f.readline()
    return json.loads(line) if line.strip() else None

# (workload, metric, how to read it, target on a/b: (">=", x) or ("<=", x), or None)
rows = []
for w, t in [("create", 2.0), ("set", 2.0), ("get", 1.5), ("mixed", None)]:
    rows.append((w, "ops/s", lambda r: r and r["ops_per_sec"], (">=", t) if t else None, w))
    rows.append((w, "p99 us", lambda r: r and r["latency_us"]["p99"], ("<=", 1.0), w))
rows.append(("lock", "hand-offs/s", lambda r: r and r["lock"]["handoffs_per_sec"], (">=", 2.0), "lock"))
rows.append(("lock", "p99 acquire us", lambda r: r and r["latency_us"]["p99"], ("<=", 1.0), "lock"))
rows.append(("lock", "violations", lambda r: r and r["lock"]["exclusion_violations"], None, "lock"))
rows.append(("fill", "ops/s", lambda r: r and r["ops_per_sec"], None, "fill"))
rows.append(("fill", "p99 us", lambda r: r and r["latency_us"]["p99"], ("<=", 1.0), "fill"))
rows.append(("fill", "RSS after MiB", lambda r: r and round(r["rss_after_fill_kb"] / 1024, 1), ("<=", 1 / 3), "server"))
rows.append(("restart", "to serving ms", lambda r: r and r["restart_ms"], None, "server"))

def cell(v):
    return "-" if v is None else (f"{v:.0f}" if isinstance(v, float) and v >= 100 else str(v))

header = ("workload", "metric", a, b, "ratio", "target")
lines = [header]
for w, metric, get, target, file in rows:
    va, vb = get(load(f"{a}-{file}.json")), get(load(f"{b}-{file}.json"))
    ratio = va / vb if isinstance(va, (int, float)) and isinstance(vb, (int, float)) and vb else None
    tcell = ""
    if target and ratio is not None:
        op, x = target
        ok = ratio >= x if op == ">=" else ratio <= x
        tcell = f"{op} {x:.2f} {'ok' if ok else 'MISS'}"
    if w == "restart" and isinstance(va, (int, float)):
        tcell = f"{a} <= 5000 ms {'ok' if va <= 5000 else 'MISS'}" + ("" if full else " (at --full)")
    if w == "fill" and metric.startswith("RSS") and not full and tcell:
        tcell += " (at --full)"
    lines.append((w, metric, cell(va), cell(vb), "-" if ratio is None else f"{ratio:.2f}", tcell))
widths = [max(len(str(l[i])) for l in lines) for i in range(len(header))]
for i, l in enumerate(lines):
    print(" | ".join(str(c).ljust(widths[j]) for j, c in enumerate(l)).rstrip())
    if i == 0:
        print("-+-".join("-" * wd for wd in widths))
EOF
if [[ $FAILED -ne 0 ]]; then
    log "some runs FAILED their correctness checks; see $OUT/bench.log"
    exit 1
fi
log "done: $OUT"
