#!/usr/bin/env bash
# kazoo compat smoke: starts a server on a free loopback port with a fresh data dir, runs the pytest suite in
# compat-tests/kazoo/ against it (ZK_HOSTS=127.0.0.1:<port>), stops the server, and prints
# `suite | passed | failed | skipped` to stdout and compat-tests/results.txt.
#
#   compat-tests/run.sh                        against paddock ($CARGO_TARGET_DIR/debug/paddock, built first)
#   compat-tests/run.sh --against-zookeeper    against Apache ZooKeeper 3.9 (scripts/zookeeper.sh): every
#                                              test must pass there, which is what proves the test right
#   compat-tests/run.sh [...] -- <pytest args> e.g. -- -k watches -x
#
# PADDOCK_BIN overrides the binary (no build then). Exit status: 0 only if pytest ran tests and all passed.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/paddock-target}"
TARGET=paddock
PYTEST_ARGS=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --against-zookeeper) TARGET=zookeeper ;;
        --) shift; PYTEST_ARGS=("$@"); break ;;
        *) echo "run.sh: unknown option '$1' (see the header of $0)" >&2; exit 2 ;;
    esac
    shift
done

RESULTS="$HERE/results.txt"
rm -f "$RESULTS"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/paddock-compat.XXXXXX")"
SERVER_PID=""

cleanup() {
    if [[ "$TARGET" == zookeeper ]]; then
        [[ -f "$WORK/data/zk.pid" ]] && bash "$ROOT/scripts/zookeeper.sh" stop "$WORK/data" || true
    elif [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$SERVER_PID" 2>/dev/null || true
    fi
    [[ -n "${KEEP_WORK:-}" ]] || rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

ruok() {
    timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$1"' && printf ruok >&3 && cat <&3' 2>/dev/null || true
}

if [[ "$TARGET" == zookeeper ]]; then
    bash "$ROOT/scripts/install-deps.sh" --zookeeper
else
    bash "$ROOT/scripts/install-deps.sh"
fi
PY="$ROOT/.venv/bin/python"

PORT="$(free_port)"
mkdir -p "$WORK/data"
if [[ "$TARGET" == zookeeper ]]; then
    bash "$ROOT/scripts/zookeeper.sh" start "$PORT" "$WORK/data" >/dev/null
    SUITE="kazoo@zookeeper-$(bash "$ROOT/scripts/zookeeper.sh" version)"
else
    BIN="${PADDOCK_BIN:-}"
    if [[ -z "$BIN" ]]; then
        (cd "$ROOT" && cargo build -q -p paddock)
        BIN="$CARGO_TARGET_DIR/debug/paddock"
    fi
    [[ -x "$BIN" ]] || { echo "run.sh: no paddock binary at $BIN" >&2; exit 1; }
    "$BIN" serve --port "$PORT" --data-dir "$WORK/data" >"$WORK/paddock.log" 2>&1 </dev/null &
    SERVER_PID=$!
    deadline=$((SECONDS + 60))
    until [[ "$(ruok "$PORT")" == imok ]]; do
        if ! kill -0 "$SERVER_PID" 2>/dev/null || ((SECONDS >= deadline)); then
            echo "run.sh: paddock did not answer ruok on 127.0.0.1:$PORT; last log lines:" >&2
            tail -n 30 "$WORK/paddock.log" >&2 || true
            printf 'suite | passed | failed | skipped\nkazoo | 0 | 1 | 0\n' | tee "$RESULTS"
            exit 1
        fi
        sleep 0.2
    done
    SUITE=kazoo
fi

set +e
ZK_HOSTS="127.0.0.1:$PORT" ZK_TARGET="$TARGET" "$PY" -m pytest "$HERE/kazoo" -q -rfE --timeout=120 \
    -p no:cacheprovider --junitxml="$WORK/junit.xml" "${PYTEST_ARGS[@]}"
rc=$?
set -e

read -r passed failed skipped < <("$PY" - "$WORK/junit.xml" <<'EOF'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError):
    print(0, 1, 0); sys.exit()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
t = f = s = 0
for x in suites:
    t += int(x.get("tests", 0)); s += int(x.get("skipped", 0))
    f += int(x.get("failures", 0)) + int(x.get("errors", 0))
print(t - f - s, f, s)
EOF
)
# pytest exits 5 when it collected nothing: a suite that ran no test has not passed.
if [[ $rc -ne 0 && $failed -eq 0 ]]; then failed=1; fi
if [[ $rc -ne 0 && "$TARGET" == paddock ]]; then
    echo "run.sh: server log (last 30 lines):" >&2
    tail -n 30 "$WORK/paddock.log" >&2 || true
fi
printf 'suite | passed | failed | skipped\n%s | %d | %d | %d\n' "$SUITE" "$passed" "$failed" "$skipped" | tee "$RESULTS"
[[ $rc -eq 0 ]]
