#!/usr/bin/env bash
# kazoo smoke: paddock's own pytest checks (compat-tests/kazoo/test_*.py) through kazoo 2.11, against a
# server this script starts on a free loopback port with a fresh data dir (ZK_HOSTS=127.0.0.1:<port>).
#
#   compat-tests/kazoo/run.sh                        against paddock (PADDOCK_BIN, or a debug build)
#   compat-tests/kazoo/run.sh --against-zookeeper    against Apache ZooKeeper 3.9 (scripts/zookeeper.sh):
#                                                    every test must pass there, which proves the test right
#   compat-tests/kazoo/run.sh [...] -- <pytest args> e.g. -- -k watches -x
#
# Ends with the row `kazoo | passed | failed | skipped` (compat-tests/lib.sh). KEEP_WORK=1 keeps the
# server log. Exit status: 0 only if pytest ran tests and all passed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$COMPAT_LIB_DIR/kazoo"

compat_init kazoo
compat_args "$@"

bash "$ROOT/scripts/install-deps.sh" || compat_fail "scripts/install-deps.sh failed"
PY="$ROOT/.venv/bin/python"

PORT="$(free_port)"
if [[ "$TARGET" == zookeeper ]]; then
    start_zookeeper zk "$PORT" || compat_fail "ZooKeeper did not start"
else
    start_paddock paddock "$PORT" "$COMPAT_WORK/data" || compat_fail "paddock did not start"
fi

set +e
ZK_HOSTS="127.0.0.1:$PORT" ZK_TARGET="$TARGET" "$PY" -m pytest "$HERE" -q -rfEs --timeout=120 \
    -p no:cacheprovider --junitxml="$COMPAT_WORK/junit.xml" "${PASS_ARGS[@]}"
rc=$?
set -e

read -r passed failed skipped < <(compat_junit_counts "$COMPAT_WORK/junit.xml")
# pytest exits 5 when it collected nothing: a suite that ran no test has not passed.
if [[ $rc -ne 0 && $failed -eq 0 ]]; then failed=1; fi
if [[ $rc -ne 0 && "$TARGET" == paddock ]]; then
    echo "run.sh: server log (last 30 lines):" >&2
    tail -n 30 "$COMPAT_WORK/paddock.log" >&2 || true
fi
((skipped == 0)) || report_skip "$skipped" "skipped by pytest (see the SKIPPED lines above)"
report "$passed" "$failed" "$skipped"
[[ $rc -eq 0 ]]
