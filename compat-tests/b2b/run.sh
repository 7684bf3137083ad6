#!/usr/bin/env bash
# Back-to-back runs of seeded random op sequences against Apache ZooKeeper 3.9 and paddock (see README.md).
#
#   compat-tests/b2b/run.sh [--ops N] [--seed S] [--seq-len L] [--exclude op,op] [--shrink-budget SECS]
#
# Starts both servers on free loopback ports with temp data dirs, runs compat-tests/b2b/b2b.py, stops them,
# prints `b2b | passed | failed | skipped` (counted in ops) and appends it to compat-tests/results.txt.
# Exit status is non-zero on any mismatch. PADDOCK_BIN overrides the binary (no build then);
# KEEP_WORK=1 keeps the temp dir with both server logs.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/paddock-target}"
RESULTS="$ROOT/compat-tests/results.txt"

PY="$ROOT/.venv/bin/python"
[[ -x "$PY" ]] || PY="$(command -v python3)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/paddock-b2b.XXXXXX")"
PADDOCK_PID=""
cleanup() {
    [[ -f "$WORK/zk/zk.pid" ]] && bash "$ROOT/scripts/zookeeper.sh" stop "$WORK/zk" >/dev/null 2>&1 || true
    if [[ -n "$PADDOCK_PID" ]] && kill -0 "$PADDOCK_PID" 2>/dev/null; then
        kill "$PADDOCK_PID" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$PADDOCK_PID" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$PADDOCK_PID" 2>/dev/null || true
    fi
    if [[ -n "${KEEP_WORK:-}" ]]; then echo "run.sh: kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

report() {  # passed failed skipped
    printf 'b2b | passed | failed | skipped\nb2b | %d | %d | %d\n' "$1" "$2" "$3"
    printf 'b2b | %d | %d | %d\n' "$1" "$2" "$3" >>"$RESULTS"
}

free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
ruok() {
    timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$1"' && printf ruok >&3 && cat <&3' 2>/dev/null || true
}

BIN="${PADDOCK_BIN:-}"
if [[ -z "$BIN" ]]; then
    (cd "$ROOT" && cargo build -q -p paddock)
    BIN="$CARGO_TARGET_DIR/debug/paddock"
fi
[[ -x "$BIN" ]] || { echo "run.sh: no paddock binary at $BIN" >&2; report 0 1 0; exit 1; }

# Container and TTL cleanup are timer driven and cannot be compared in lockstep: both servers get a
# check interval of a day, so no container is ever reaped during a run (TTLs used are an hour).
NO_REAP_MS=86400000
# ZooKeeper gets a super user so that b2b.py can read its state (to resolve "the k-th child" and
# "the current version") without ACLs getting in the way; the ops compared never use it.
SUPER_DIGEST="$(cd "$HERE" && "$PY" -c 'import zkwire; print(zkwire.digest_id("super:adminpw"))')"

ZK_PORT="$(free_port)"
mkdir -p "$WORK/zk" "$WORK/paddock"
ZK_JVMFLAGS="-Dznode.container.checkIntervalMs=$NO_REAP_MS -Dzookeeper.DigestAuthenticationProvider.superDigest=$SUPER_DIGEST" \
    bash "$ROOT/scripts/zookeeper.sh" start "$ZK_PORT" "$WORK/zk" >/dev/null

PD_PORT="$(free_port)"
"$BIN" serve --port "$PD_PORT" --data-dir "$WORK/paddock" --extended-types --max-client-cnxns 0 \
    -D "znode.container.checkIntervalMs=$NO_REAP_MS" >"$WORK/paddock.log" 2>&1 </dev/null &
PADDOCK_PID=$!
deadline=$((SECONDS + 60))
until [[ "$(ruok "$PD_PORT")" == imok ]]; do
    if ! kill -0 "$PADDOCK_PID" 2>/dev/null || ((SECONDS >= deadline)); then
        echo "run.sh: paddock did not answer ruok on 127.0.0.1:$PD_PORT; last log lines:" >&2
        tail -n 30 "$WORK/paddock.log" >&2 || true
        report 0 1 0
        exit 1
    fi
    sleep 0.2
done

set +e
(cd "$HERE" && "$PY" -u b2b.py --zk "127.0.0.1:$ZK_PORT" --paddock "127.0.0.1:$PD_PORT" \
    --counts-file "$WORK/counts" "$@")
rc=$?
set -e
if [[ -f "$WORK/counts" ]]; then
    read -r passed failed skipped <"$WORK/counts"
else
    passed=0 failed=1 skipped=0
fi
if [[ $rc -ne 0 && $failed -eq 0 ]]; then failed=1; fi
if ! kill -0 "$PADDOCK_PID" 2>/dev/null; then
    echo "run.sh: paddock exited during the run; last log lines:" >&2
    tail -n 30 "$WORK/paddock.log" >&2 || true
fi
report "$passed" "$failed" "$skipped"
exit $rc
