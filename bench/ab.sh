#!/usr/bin/env bash
# Compares two paddock builds on one workload, in alternating runs, and says in how many pairs the
# second did better: the way each server change of issue #12 was judged before it was kept.
#
#   bench/ab.sh A B WORKLOAD [options]
#         A, B: each a paddock binary, or a directory holding one (a build's target/release, or a copy).
#         WORKLOAD: create, set, get, mixed, lock, lone (one session, one set in flight), or restart.
#
# Each pair runs A then B, the next pair B then A, and so on: the host's speed drifts by more than most
# changes save (on the VM of 5 Dec 2026 the same build's lone write p50 read 287-388 us within an
# hour), so only a difference that holds pair after pair means anything. Every run gets a fresh server
# pinned as bench/compare.sh pins it (server on --server-cpu, the load generator on the other CPUs), a
# --warmup seconds (1) unrecorded, then --duration seconds recorded; the server's CPU time over the recorded run
# comes from /proc (so CPU per op). restart: each run copies --data-dir (a data directory a filled,
# SIGKILLed server left; see bench/README.md) to a fresh directory, starts the server there and times
# it until --path reads (the load generator's probe: it knocks on the port every 10 ms, then opens a
# session every 50 ms), and keeps the server's own phase lines.
#
# Options: --pairs N (6), --duration S (4), --warmup S (1; a longer one reaches the state of a server
#   that has run for a while: e.g. 12 s of sets fill, prune and reuse log segments, which 1 s never
#   does), --clients C (8), --inflight I (32), --contenders K (8), --data-dir DIR and --path P
#   (restart), --server-cpu LIST (0), --client-cpus LIST (the others),
#   --unpinned, --bench BIN (paddock-bench; default $CARGO_TARGET_DIR/release/paddock-bench),
#   --out DIR (default bench/results/ab-<workload>-<timestamp>/).
# Environment: CARGO_TARGET_DIR (default ~/.cache/paddock-target), PADDOCK_EXTRA_ARGS (default
#   "--max-client-cnxns 0").
# Output: one line per run, then per measure the medians of A and B, B/A, and the pairs B won; the
# runs in runs.jsonl and each server's log in --out. Exit code 0 when every run completed, 1 if one
# failed, 2 for bad usage. It builds nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

ARGS=() PAIRS=6 DURATION=4 WARMUP=1 CLIENTS=8 INFLIGHT=32 CONTENDERS=8 DATA_DIR="" PROBE_PATH="" PINNED=1
SERVER_CPU=0 CLIENT_CPUS="" BENCH="" OUT=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --unpinned) PINNED=0 ;;
        --pairs | --duration | --warmup | --clients | --inflight | --contenders | --data-dir | --path | --server-cpu | \
            --client-cpus | --bench | --out)
            [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value"
            case "$1" in
                --pairs) PAIRS="$2" ;;
                --duration) DURATION="$2" ;;
                --warmup) WARMUP="$2" ;;
                --clients) CLIENTS="$2" ;;
                --inflight) INFLIGHT="$2" ;;
                --contenders) CONTENDERS="$2" ;;
                --data-dir) DATA_DIR="$2" ;;
                --path) PROBE_PATH="$2" ;;
                --server-cpu) SERVER_CPU="$2" ;;
                --client-cpus) CLIENT_CPUS="$2" ;;
                --bench) BENCH="$2" ;;
                --out) OUT="$2" ;;
            esac
            shift
            ;;
        -h | --help) usage ;;
        -*) echo "ab.sh: unknown option $1" >&2; usage ;;
        *) ARGS+=("$1") ;;
    esac
    shift
done
[[ ${#ARGS[@]} -eq 3 ]] || { echo "ab.sh: A, B and a workload, got ${#ARGS[@]} argument(s)" >&2; usage; }
binary_of() {
    if [[ -d "$1" ]]; then echo "$1/paddock"; else echo "$1"; fi
}
A="$(binary_of "${ARGS[0]}")" B="$(binary_of "${ARGS[1]}")" WORKLOAD="${ARGS[2]}"
for bin in "$A" "$B"; do
    [[ -x "$bin" ]] || die "no paddock binary at $bin"
done
positive_numbers PAIRS DURATION WARMUP CLIENTS INFLIGHT CONTENDERS
if [[ "$WORKLOAD" == restart ]]; then
    [[ -n "$DATA_DIR" && -n "$PROBE_PATH" ]] || die "restart needs --data-dir DIR and --path P"
    [[ -d "$DATA_DIR" ]] || die "--data-dir $DATA_DIR is not a directory"
else
    bench_args "$WORKLOAD" "$CLIENTS" "$INFLIGHT" "$CONTENDERS" ||
        die "unknown workload '$WORKLOAD' (create, set, get, mixed, lock, lone or restart)"
fi
BENCH="${BENCH:-$CARGO_TARGET_DIR/release/paddock-bench}"
[[ -x "$BENCH" ]] || die "no paddock-bench at $BENCH (cargo build --release -p paddock-bench, or --bench BIN)"

pin_cpus "$PINNED" "$SERVER_CPU" "$CLIENT_CPUS"

OUT="${OUT:-$ROOT/bench/results/ab-$WORKLOAD-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/paddock-ab.XXXXXX")"
SERVER_PID=""
stop_server() {
    local p="$SERVER_PID"
    SERVER_PID=""
    [[ -n "$p" ]] || return 0
    kill "$p" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
}
cleanup() { stop_server; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK="$(getconf CLK_TCK)"
FAILED=0

# one_run <label: A|B> <binary> <run number>: appends one JSON line to runs.jsonl.
one_run() {
    local label="$1" bin="$2" n="$3" port data c0 c1 t0 t1
    port="$(free_port)"
    data="$WORK/data-$n"
    rm -rf "$data"
    [[ "$WORKLOAD" == restart ]] && cp -a "$DATA_DIR" "$data"
    sync
    t0="$(date +%s%N)"
    # shellcheck disable=SC2086
    "${SERVER_PIN[@]+"${SERVER_PIN[@]}"}" "$bin" serve --port "$port" --data-dir "$data" $PADDOCK_EXTRA_ARGS \
        >"$OUT/server-$n-$label.log" 2>&1 </dev/null &
    SERVER_PID=$!
    if [[ "$WORKLOAD" == restart ]]; then
        if ! "${CLIENT_PIN[@]+"${CLIENT_PIN[@]}"}" "$BENCH" --hosts "127.0.0.1:$port" --workload probe \
            --path "$PROBE_PATH" --duration-secs 300 --label probe >>"$OUT/bench.log" 2>&1; then
            log "run $n ($label): $PROBE_PATH did not read within 300 s (see $OUT/server-$n-$label.log)"
            FAILED=1
            stop_server
            return
        fi
        t1="$(date +%s%N)"
        c1="$(cpu_ticks "$SERVER_PID")"
        stop_server
        python3 - "$label" "$n" "$(((t1 - t0) / 1000000))" "$((c1 * 1000 / TICK))" "$OUT/server-$n-$label.log" \
            >>"$OUT/runs.jsonl" <<'EOF'
import json, re, sys
label, n, ms, cpu_ms, server_log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
# The server's own phases, from its log lines' timestamps (first line, snapshot loaded, restored,
# log replayed).
marks, phases = {}, {}
for line in open(server_log, errors="replace"):
    m = re.match(r"\S*T(\d+):(\d+):([\d.]+)Z", line)
    if not m:
        continue
    t = (int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))) * 1000
    for key, text in (("start", "paddock starting"), ("loaded", "loaded snapshot"),
                      ("restored", "restored snapshot"), ("replayed", "log replayed")):
        if text in line and key not in marks:
            marks[key] = t
for name, a, b in (("load_ms", "start", "loaded"), ("restore_ms", "loaded", "restored"),
                   ("replay_ms", "restored", "replayed")):
    if a in marks and b in marks:
        phases[name] = round(marks[b] - marks[a], 1)
print(json.dumps({"label": label, "run": n, "restart_ms": ms, "cpu_ms": cpu_ms, **phases}))
EOF
        return
    fi
    if ! "${CLIENT_PIN[@]+"${CLIENT_PIN[@]}"}" "$BENCH" --hosts "127.0.0.1:$port" --workload probe --path / \
        --duration-secs 60 --label probe >>"$OUT/bench.log" 2>&1; then
        log "run $n ($label): the server did not serve (see $OUT/server-$n-$label.log)"
        FAILED=1
        stop_server
        return
    fi
    # Warm-up, unrecorded; it also makes the keys set, get and mixed use.
    "${CLIENT_PIN[@]+"${CLIENT_PIN[@]}"}" "$BENCH" --hosts "127.0.0.1:$port" "${WARGS[@]}" --duration-secs "$WARMUP" \
        --label warmup >>"$OUT/bench.log" 2>&1 || true
    c0="$(cpu_ticks "$SERVER_PID")"
    if ! "${CLIENT_PIN[@]+"${CLIENT_PIN[@]}"}" "$BENCH" --hosts "127.0.0.1:$port" "${WARGS[@]}" \
        --duration-secs "$DURATION" --label "$label" --json "$WORK/run.json" >>"$OUT/bench.log" 2>&1; then
        log "run $n ($label): the load generator failed (see $OUT/bench.log)"
        FAILED=1
    fi
    c1="$(cpu_ticks "$SERVER_PID")"
    stop_server
    [[ -s "$WORK/run.json" ]] || return 0
    python3 - "$label" "$n" "$(((c1 - c0) * 1000000 / TICK))" "$WORK/run.json" >>"$OUT/runs.jsonl" <<'EOF'
import json, sys
label, n, cpu_us, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
r = json.loads(open(path).readline())
ops = r["lock"]["handoffs"] if r.get("lock") else r["count"]
rate = r["lock"]["handoffs_per_sec"] if r.get("lock") else r["ops_per_sec"]
print(json.dumps({"label": label, "run": n, "ops_per_sec": rate, "p50_us": r["latency_us"]["p50"],
                  "p99_us": r["latency_us"]["p99"], "cpu_us_per_op": round(cpu_us / ops, 2) if ops else None,
                  "errors": r["errors"]}))
EOF
    rm -f "$WORK/run.json"
}

log "A = $A, B = $B; $WORKLOAD, $PAIRS pairs$([[ $WORKLOAD == restart ]] || echo ", $DURATION s each after $WARMUP s of warm-up"); results in $OUT"
: >"$OUT/runs.jsonl"
n=0
for p in $(seq 1 "$PAIRS"); do
    if ((p % 2)); then order=(A B); else order=(B A); fi
    for side in "${order[@]}"; do
        n=$((n + 1))
        if [[ $side == A ]]; then one_run A "$A" "$n"; else one_run B "$B" "$n"; fi
        tail -n 1 "$OUT/runs.jsonl" >&2
    done
done

python3 - "$OUT/runs.jsonl" "$WORKLOAD" <<'EOF' | tee "$OUT/summary.txt"
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
if sys.argv[2] == "restart":
    measures = [("restart_ms", "restart to serving, ms", -1), ("cpu_ms", "server CPU, ms", -1),
                ("load_ms", "first line to loaded snapshot, ms", -1), ("restore_ms", "restore, ms", -1),
                ("replay_ms", "replay, ms", -1)]
else:
    measures = [("ops_per_sec", "ops/s", 1), ("p50_us", "p50, us", -1), ("p99_us", "p99, us", -1),
                ("cpu_us_per_op", "server CPU per op, us", -1)]
a = [r for r in runs if r["label"] == "A"]
b = [r for r in runs if r["label"] == "B"]
print(f"{'measure':36} {'A median':>10} {'B median':>10} {'B/A':>6}  B better in")
for key, name, sign in measures:
    # Runs 1 and 2 are pair 0, runs 3 and 4 pair 1, and so on (a failed run leaves its pair out).
    pa = {(r["run"] - 1) // 2: r[key] for r in a if r.get(key) is not None}
    pb = {(r["run"] - 1) // 2: r[key] for r in b if r.get(key) is not None}
    if not pa or not pb:
        continue
    ma, mb = statistics.median(pa.values()), statistics.median(pb.values())
    both = sorted(set(pa) & set(pb))
    won = sum(1 for k in both if (pb[k] - pa[k]) * sign > 0)
    print(f"{name:36} {ma:>10.1f} {mb:>10.1f} {mb / ma if ma else float('nan'):>6.3f}  {won} of {len(both)} pairs")
EOF
exit "$FAILED"
