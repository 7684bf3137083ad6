#!/usr/bin/env bash
# Measures issue 40's two figures at scale (release build):
#   1. paddock import of a ZooKeeper data directory of N znodes (default 1M, 100 bytes each under 1000
#      parents, plus a log of 10k setData after the snapshot: zk-format's synth_zk_dir example): the
#      import's own "read:" line (znodes/s, MB/s) and its wall time;
#   2. the AdminServer's snapshot streamed from the server serving that import: its time, and the
#      longest getData a client waited meanwhile (a kazoo client in a loop, one request at a time).
#
#   3. with --cutover, instead: the write-unavailable window of a live cut-over at that size
#      (docs/operations.md, "Cutting over from ZooKeeper"): a 3-member ZooKeeper 3.9.5 ensemble
#      (scripts/ensemble.sh --zookeeper, 1 GB heaps) serving that directory, a kazoo writer setting a
#      node every 20 ms and a watcher holding an ephemeral (compat-tests/migration/cutover_client.py),
#      then the cut-over to three paddock members on the same addresses
#      (compat-tests/migration/cutover_steps.sh): the stop, import and start times, and the window
#      from the writer's first failed or held write to its first success, sessions kept.
#
#   bench/migration.sh [NODES]            prints 1 and 2; leaves nothing behind
#   bench/migration.sh --cutover [NODES]  prints 3 (about 3 minutes at 1M on 2 cores; ~2.5 GB in $TMPDIR)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CUTOVER=0
if [[ "${1:-}" == --cutover ]]; then CUTOVER=1; shift; fi
NODES="${1:-1000000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/paddock-target}"
cargo build --release -q -p paddock -p zk-format --examples --bins
BIN="$CARGO_TARGET_DIR/release/paddock"
W="$(mktemp -d "${TMPDIR:-/tmp}/paddock-migration-bench.XXXXXX")"
PID=""
PY_PID=""
declare -gA CUT_PIDS=()
cleanup() {
    [[ -n "$PID" ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    [[ -n "$PY_PID" ]] && kill "$PY_PID" 2>/dev/null
    for p in "${CUT_PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    [[ -f "$W/zk/ensemble.env" ]] && bash "$ROOT/scripts/ensemble.sh" stop --dir "$W/zk" >/dev/null 2>&1
    rm -rf "$W"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

if ((CUTOVER == 1)); then
    # shellcheck source=../compat-tests/migration/cutover_steps.sh
    source "$ROOT/compat-tests/migration/cutover_steps.sh"
    PY="$ROOT/.venv/bin/python"
    "$CARGO_TARGET_DIR/release/examples/synth_zk_dir" "$W/synth" "$NODES" 10000
    # ensemble.sh writes the members' zoo.cfg on a first start in an empty dir; then each member's
    # dataDir gets the synthetic files (and no epoch files: ZooKeeper derives them from the zxids).
    export ZK_HEAP="${ZK_HEAP:-1g}" ENSEMBLE_START_TIMEOUT=600
    bash "$ROOT/scripts/ensemble.sh" start 3 --zookeeper --dir "$W/zk" >/dev/null 2>"$W/zk-start.log"
    bash "$ROOT/scripts/ensemble.sh" stop --dir "$W/zk" 2>/dev/null
    for k in 1 2 3; do
        rm -rf "$W/zk/m$k/data/version-2" "$W/zk/m$k/data/currentEpoch" "$W/zk/m$k/data/acceptedEpoch"
        cp -r "$W/synth/version-2" "$W/zk/m$k/data/"
    done
    rm -rf "$W/synth"
    start=$(date +%s.%N)
    ZK_CONNECT="$(bash "$ROOT/scripts/ensemble.sh" start 3 --zookeeper --dir "$W/zk" 2>>"$W/zk-start.log")" ||
        { tail -n 20 "$W/zk-start.log" >&2; exit 1; }
    echo "ZooKeeper 3.9.5 ensemble serving $NODES znodes after $(cut_secs "$start" "$(date +%s.%N)") s"
    "$PY" "$ROOT/compat-tests/migration/cutover_client.py" client "$ZK_CONNECT" "$W" --session-timeout 30 \
        >"$W/py.out" 2>"$W/py.err" </dev/null &
    PY_PID=$!
    until [[ -f "$W/py.ready" ]]; do
        kill -0 "$PY_PID" 2>/dev/null || { cat "$W/py.err" >&2; exit 1; }
        sleep 0.2
    done
    sleep 3
    cut_over "$W/zk" "$W/pd" "$BIN" || { echo "cut-over failed: $CUT_ERROR" >&2; exit 1; }
    echo "$(cut_summary "$W/pd")"
    grep -E '^(read|transactions|digest):' "$W/pd/import.txt" | sed 's/^/  import: /'
    sleep 5 # the clients back
    echo "$CUT_T0" >"$W/py.check.tmp" && mv "$W/py.check.tmp" "$W/py.check"
    wait "$PY_PID" || true
    PY_PID=""
    sed 's/^/  /' "$W/py.out"
    read -r window w_start w_end <"$W/window.txt"
    echo "write-unavailable window: $window s (first failed write $(cut_secs "$CUT_T0" "$w_start") s after the SIGTERMs," \
        "first success $(cut_secs "$CUT_T3" "$w_end") s after paddock served)"
    exit 0
fi

"$CARGO_TARGET_DIR/release/examples/synth_zk_dir" "$W/zk" "$NODES" 10000
start=$(date +%s.%N)
"$BIN" import --zookeeper "$W/zk" --data-dir "$W/pd" | grep -E '^(read|digest|tree|transactions):'
echo "import wall time: $(echo "$(date +%s.%N) - $start" | bc) s (reading, replay, the tree, the raft snapshot written)"

PORT=$(free_port); ADMIN=$(free_port)
SUPER="admin:$(printf 'admin:pw' | openssl dgst -binary -sha1 | openssl base64)"
"$BIN" serve --data-dir "$W/pd" --port "$PORT" -D admin.serverAddress=127.0.0.1 -D admin.serverPort="$ADMIN" \
    -D "DigestAuthenticationProvider.superDigest=$SUPER" >"$W/serve.log" 2>&1 &
PID=$!
until [[ "$(timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT && printf ruok >&3 && cat <&3" 2>/dev/null)" == imok ]]; do sleep 0.2; done
"$ROOT/.venv/bin/python" - "$PORT" "$ADMIN" <<'PY'
import subprocess, sys, threading, time
from kazoo.client import KazooClient
port, admin = sys.argv[1], sys.argv[2]
zk = KazooClient(hosts=f"127.0.0.1:{port}"); zk.start()
stop, lat = threading.Event(), []
def loop():
    while not stop.is_set():
        t = time.perf_counter(); zk.get("/p0001/n000001"); lat.append(time.perf_counter() - t)
th = threading.Thread(target=loop); th.start()
time.sleep(2.0)  # the client's own noise, for comparison
base = sorted(lat); lat.clear()
t = time.perf_counter()
r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}",
                    "-H", "Authorization: digest admin:pw",
                    f"http://127.0.0.1:{admin}/commands/snapshot?streaming=true"], capture_output=True, text=True)
took = time.perf_counter() - t
stop.set(); th.join()
during = sorted(lat)
code, size = r.stdout.split()
p99 = lambda v: v[int(len(v) * 0.99)] * 1000
print(f"snapshot: HTTP {code}, {int(size)/1e6:.1f} MB in {took:.2f} s; getData meanwhile: longest "
      f"{during[-1]*1000:.1f} ms, p99 {p99(during):.2f} ms over {len(during)} gets; in the 2 s before: "
      f"longest {base[-1]*1000:.1f} ms, p99 {p99(base):.2f} ms over {len(base)}")
zk.stop()
PY
