#!/usr/bin/env bash
# Re-records wire/tests/vectors/{kazoo,java}.txt: starts Apache ZooKeeper 3.9 (scripts/zookeeper.sh) on a
# free port, puts compat-tests/capture/proxy.py in front of it, and drives kazoo (kazoo_session.py) and zkCli
# (java_session.txt on stdin, plus a few one-shot invocations) through the proxy.
#
#   compat-tests/capture/capture.sh            both files
#   compat-tests/capture/capture.sh kazoo      only kazoo.txt (or: java)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="$ROOT/wire/tests/vectors"
WHICH="${1:-all}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/paddock-capture.XXXXXX")"
PROXY_PID=""

cleanup() {
    [[ -n "$PROXY_PID" ]] && kill "$PROXY_PID" 2>/dev/null || true
    [[ -f "$WORK/zk/zk.pid" ]] && bash "$ROOT/scripts/zookeeper.sh" stop "$WORK/zk" || true
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

bash "$ROOT/scripts/install-deps.sh" --zookeeper
PY="$ROOT/.venv/bin/python"
ZK_VER="$(bash "$ROOT/scripts/zookeeper.sh" version)"
KAZOO_VER="$("$PY" -c 'import importlib.metadata as m; print(m.version("kazoo"))')"
ZK_PORT="$(free_port)"
bash "$ROOT/scripts/zookeeper.sh" start "$ZK_PORT" "$WORK/zk" >/dev/null
mkdir -p "$OUT"

# record <file> <comment>... -- <command...>: runs the command with ZK_HOSTS pointing at a fresh proxy.
record() {
    local file="$1"; shift
    local comments=()
    while [[ "$1" != -- ]]; do comments+=(--comment "$1"); shift; done
    shift
    local port
    port="$(free_port)"
    "$PY" "$HERE/proxy.py" --listen "$port" --target "127.0.0.1:$ZK_PORT" --out "$WORK/$file" \
        "${comments[@]}" >"$WORK/proxy.log" 2>&1 &
    PROXY_PID=$!
    for _ in $(seq 1 50); do
        grep -q "recording to" "$WORK/proxy.log" 2>/dev/null && break
        sleep 0.1
    done
    ZK_HOSTS="127.0.0.1:$port" "$@"
    # Let the server's last frames (closeSession reply) reach the proxy before it stops.
    sleep 1
    kill "$PROXY_PID"
    wait "$PROXY_PID" || true
    PROXY_PID=""
    cat "$WORK/proxy.log" >&2
    mv "$WORK/$file" "$OUT/$file"
    echo "capture: wrote $OUT/$file ($(grep -c '^[CS] ' "$OUT/$file") frames)" >&2
}

common=(
    "Format: 'C <hex>' client->server frame, 'S <hex>' server->client frame, 4-byte length prefix included;"
    "'--- connection' starts a new connection; '#' lines are comments."
    "Server: Apache ZooKeeper $ZK_VER standalone (scripts/zookeeper.sh: tickTime=2000, extendedTypesEnabled=true)"
    "Captured $(date -u +%Y-%m-%dT%H:%MZ) by compat-tests/capture/capture.sh through compat-tests/capture/proxy.py"
)

if [[ "$WHICH" == all || "$WHICH" == kazoo ]]; then
    record kazoo.txt \
        "Client: kazoo $KAZOO_VER (Python $("$PY" -c 'import platform; print(platform.python_version())'))" \
        "${common[@]}" \
        "Command: ZK_HOSTS=<proxy> .venv/bin/python compat-tests/capture/kazoo_session.py" \
        "Connections, in the order they closed: 1 = second client firing the watches, 2 = main session (all ops," \
        "notifications, pings, closeSession), 3 = cleanup client (recursive delete)" \
        -- "$PY" "$HERE/kazoo_session.py"
fi

zkcli() { bash "$ROOT/scripts/zookeeper.sh" cli -- -server "$ZK_HOSTS" "$@"; }

java_session() {
    # One zkCli session fed from stdin (zkCli reads commands line by line when jline is absent), then
    # one-shot invocations, each its own connection.
    zkcli <"$HERE/java_session.txt" >"$WORK/zkcli.out" 2>&1
    zkcli ls / >>"$WORK/zkcli.out" 2>&1
    zkcli get /no-such-node >>"$WORK/zkcli.out" 2>&1 || true
    zkcli create -e /oneshot-ephemeral x >>"$WORK/zkcli.out" 2>&1
    cat "$WORK/zkcli.out" >&2
}

if [[ "$WHICH" == all || "$WHICH" == java ]]; then
    export -f zkcli java_session
    export ROOT HERE WORK
    record java.txt \
        "Client: zkCli (org.apache.zookeeper.ZooKeeperMain) $ZK_VER, Java $(java -version 2>&1 | head -1 | cut -d'"' -f2)" \
        "${common[@]}" \
        "Command: scripts/zookeeper.sh cli -- -server <proxy> < compat-tests/capture/java_session.txt;" \
        "then one-shots: 'ls /', 'get /no-such-node' (NoNode), 'create -e /oneshot-ephemeral x'." \
        "Connections, in the order they closed: the stdin session, then the three one-shots" \
        -- bash -c java_session
fi
