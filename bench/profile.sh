#!/usr/bin/env bash
# Records a `perf` profile (call graphs) of the paddock server under one paddock-bench workload and
# prints the top symbols.
#
#   bench/profile.sh WORKLOAD [options]      WORKLOAD: create, set, get, mixed, lock or lone
#
# Options: --duration S (recorded seconds, default 8), --clients C (8), --inflight I (4),
#   --contenders K (8), --freq HZ (perf sampling frequency, 499), --top N (symbols printed, 40),
#   --unpinned (by default the server runs on --server-cpu, 0, and the load generator on the other
#   CPUs, as in bench/compare.sh), --server-cpu LIST, --client-cpus LIST, --no-build, --bin-dir DIR,
#   --out DIR (default bench/results/profile-<workload>-<timestamp>/).
# Environment: CARGO_TARGET_DIR (default ~/.cache/paddock-target), PADDOCK_EXTRA_ARGS
#   (default "--max-client-cnxns 0").
#
# Installs Debian's linux-perf once if perf is missing (root and apt-get needed). Debian's /usr/bin/perf
# is a wrapper that refuses to run on a kernel other than the one it was built for; this script then
# calls the versioned binary (/usr/bin/perf_X.Y) directly. perf needs kernel.perf_event_paranoid <= 1
# for a non-root user, or root (CAP_PERFMON); inside a container a seccomp policy may refuse
# perf_event_open altogether: the script reports what perf said and exits 1.
# The release profile keeps symbols (no strip), so Rust function names show; frames are unwound with
# DWARF (--call-graph dwarf), as the release build has no frame pointers.
# Output: perf.data, report.txt (perf report --no-children, by symbol), report-children.txt
# (--children: the callers' share), report-threads.txt (by thread name), the load generator's report
# and the server's log. perf record runs with --no-buildid-cache (nothing written to ~/.debug).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

WORKLOAD="" DURATION=8 CLIENTS=8 INFLIGHT=4 CONTENDERS=8 FREQ=499 TOP=40 PINNED=1 SERVER_CPU=0 CLIENT_CPUS=""
BUILD=1 BIN_DIR="" OUT=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --unpinned) PINNED=0 ;;
        --no-build) BUILD=0 ;;
        --duration | --clients | --inflight | --contenders | --freq | --top | --server-cpu | --client-cpus | --bin-dir | --out)
            [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value"
            case "$1" in
                --duration) DURATION="$2" ;;
                --clients) CLIENTS="$2" ;;
                --inflight) INFLIGHT="$2" ;;
                --contenders) CONTENDERS="$2" ;;
                --freq) FREQ="$2" ;;
                --top) TOP="$2" ;;
                --server-cpu) SERVER_CPU="$2" ;;
                --client-cpus) CLIENT_CPUS="$2" ;;
                --bin-dir) BIN_DIR="$2" BUILD=0 ;;
                --out) OUT="$2" ;;
            esac
            shift
            ;;
        -h | --help) usage ;;
        -*) echo "profile.sh: unknown option $1" >&2; usage ;;
        *) [[ -z "$WORKLOAD" ]] || die "one workload, got '$WORKLOAD' and '$1'"; WORKLOAD="$1" ;;
    esac
    shift
done
[[ -n "$WORKLOAD" ]] || { echo "profile.sh: which workload?" >&2; usage; }
bench_args "$WORKLOAD" "$CLIENTS" "$INFLIGHT" "$CONTENDERS" ||
    die "unknown workload '$WORKLOAD' (create, set, get, mixed, lock or lone)"
positive_numbers DURATION CLIENTS INFLIGHT CONTENDERS FREQ TOP

# perf: Debian's linux-perf, installed once.
find_perf() {
    local p
    # The wrapper /usr/bin/perf runs perf_<major.minor of the running kernel> and fails when that is
    # missing; the versioned binaries work on other kernels too.
    if command -v perf >/dev/null && perf version >/dev/null 2>&1; then
        command -v perf
        return
    fi
    for p in /usr/bin/perf_* /usr/lib/linux-tools*/perf; do
        [[ -x "$p" ]] && "$p" version >/dev/null 2>&1 && { echo "$p"; return; }
    done
    return 1
}
if ! PERF="$(find_perf)"; then
    log "installing Debian's linux-perf"
    [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null || die "no perf, and no root apt-get to install linux-perf"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends linux-perf; } >&2 ||
        die "apt-get install linux-perf failed"
    PERF="$(find_perf)" || die "linux-perf is installed but no perf binary runs here"
fi
log "perf: $PERF ($("$PERF" version 2>&1)); kernel $(uname -r); kernel.perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo '?')"

pin_cpus "$PINNED" "$SERVER_CPU" "$CLIENT_CPUS"
if [[ $PINNED -eq 1 ]]; then log "server on CPU(s) $SERVER_CPU, load generator on CPU(s) $CLIENT_CPUS"; fi

if [[ -n "$BIN_DIR" ]]; then
    BENCH="$BIN_DIR/paddock-bench" PADDOCK="$BIN_DIR/paddock"
else
    BENCH="$CARGO_TARGET_DIR/release/paddock-bench" PADDOCK="$CARGO_TARGET_DIR/release/paddock"
fi
if [[ $BUILD -eq 1 ]]; then
    log "building release binaries (cargo build --release -p paddock -p paddock-bench)"
    cargo build --release --locked -p paddock -p paddock-bench >&2 || die "the release build failed"
fi
[[ -x "$BENCH" && -x "$PADDOCK" ]] || die "no binaries at $BENCH and $PADDOCK (run without --no-build)"

OUT="${OUT:-$ROOT/bench/results/profile-$WORKLOAD-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/paddock-profile.XXXXXX")"
SERVER_PID="" BENCH_PID=""
cleanup() {
    local p
    for p in $BENCH_PID $SERVER_PID; do
        if kill -0 "$p" 2>/dev/null; then
            kill "$p" 2>/dev/null || true
            for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$p" 2>/dev/null || true
        fi
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PORT="$(free_port)"
# shellcheck disable=SC2086
"${SERVER_PIN[@]+"${SERVER_PIN[@]}"}" "$PADDOCK" serve --port "$PORT" --data-dir "$WORK/data" $PADDOCK_EXTRA_ARGS \
    >"$OUT/paddock.log" 2>&1 </dev/null &
SERVER_PID=$!
"${CLIENT_PIN[@]+"${CLIENT_PIN[@]}"}" "$BENCH" --hosts "127.0.0.1:$PORT" --workload probe --path / --duration-secs 60 \
    --label probe 2>>"$OUT/bench.log" || die "paddock did not serve (see $OUT/paddock.log)"
log "paddock (pid $SERVER_PID) serving on 127.0.0.1:$PORT; $WORKLOAD for $((DURATION + 2)) s, recording ${DURATION} s"
# The load runs 2 s longer than the recording: 1 s to reach its pace first, 1 s to spare at the end.
"${CLIENT_PIN[@]+"${CLIENT_PIN[@]}"}" "$BENCH" --hosts "127.0.0.1:$PORT" --label paddock "${WARGS[@]}" \
    --duration-secs $((DURATION + 2)) --json "$OUT/bench.json" 2>>"$OUT/bench.log" &
BENCH_PID=$!
sleep 1
PERF_RC=0
"$PERF" record --no-buildid-cache -F "$FREQ" --call-graph dwarf,8192 -p "$SERVER_PID" -o "$OUT/perf.data" -- sleep "$DURATION" \
    >"$OUT/perf-record.log" 2>&1 || PERF_RC=$?
BENCH_RC=0
wait "$BENCH_PID" || BENCH_RC=$?
BENCH_PID=""
if [[ $PERF_RC -ne 0 || ! -s "$OUT/perf.data" ]]; then
    cat "$OUT/perf-record.log" >&2
    log "perf record failed (exit $PERF_RC); kernel.perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo '?')"
    log "as root, 'sysctl kernel.perf_event_paranoid=1' may help; in a container, perf_event_open may be refused outright"
    exit 1
fi
[[ $BENCH_RC -eq 0 ]] || log "NOTE: the load generator reported a failure (exit $BENCH_RC; see $OUT/bench.log)"
# -F overhead,sym: no IPC columns (a VM's cpu-clock event has none); trailing blanks trimmed.
report() { # file, then perf report options
    local file="$1"
    shift
    "$PERF" report -i "$OUT/perf.data" --stdio -g none "$@" 2>>"$OUT/perf-report.log" | sed 's/ *$//' >"$OUT/$file"
}
report report.txt --no-children -F overhead,sym --percent-limit 0.3 ||
    { cat "$OUT/perf-report.log" >&2; die "perf report failed"; }
report report-children.txt --children -F overhead_children,overhead,sym --percent-limit 2 || true
report report-threads.txt --no-children -F overhead,comm || true
python3 - "$OUT/bench.json" <<'EOF' >&2 || true
import json, sys
r = json.loads(open(sys.argv[1]).readline())
rate = r["lock"]["handoffs_per_sec"] if r.get("lock") else r["ops_per_sec"]
print(f"profile.sh: load: {r['workload']} {rate:.0f}/s, p50 {r['latency_us']['p50']} us, p99 {r['latency_us']['p99']} us, {r['errors']} errors")
EOF
echo "== threads (share of samples) =="
grep -v '^#' "$OUT/report-threads.txt" | sed '/^$/d' | head -n 12
echo "== top $TOP symbols (self) =="
grep -v '^#' "$OUT/report.txt" | sed '/^$/d' | head -n "$TOP"
log "perf.data and reports in $OUT"
exit "$BENCH_RC"
