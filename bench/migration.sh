#!/usr/bin/env bash
# Measures issue 40's two figures at scale (release build):
#   1. paddock import of a ZooKeeper data directory of N znodes (default 1M, 100 bytes each under 1000
#      parents, plus a log of 10k setData after the snapshot: zk-format's synth_zk_dir example): the
#      import's own "read:" line (znodes/s, MB/s) and its wall time;
#   2. the AdminServer's snapshot streamed from the server serving that import: its time, and the
#      longest getData a client waited meanwhile (a kazoo client in a loop, one request at a time).
#
#   bench/migration.sh [NODES]          prints both; leaves nothing behind
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODES="${1:-1000000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/paddock-target}"
cargo build --release -q -p paddock -p zk-format --examples --bins
BIN="$CARGO_TARGET_DIR/release/paddock"
W="$(mktemp -d "${TMPDIR:-/tmp}/paddock-migration-bench.XXXXXX")"
PID=""
cleanup() { [[ -n "$PID" ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

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
