#!/usr/bin/env bash
# ZooKeeper's container settings (issue 42, item 5), the same checks against paddock and Apache ZooKeeper
# 3.9.5, each a standalone server started with znode.container.checkIntervalMs=50,
# znode.container.maxNeverUsedIntervalMs=600 and znode.container.maxPerMinute=120: a container that never
# had a child goes after 600 ms, deletions go at least a minute / 120 apart (check.py, kazoo 2.11).
#
#   compat-tests/containers/run.sh                       against paddock
#   compat-tests/containers/run.sh --against-zookeeper   against ZooKeeper 3.9.5
#
# Ends with the row `containers | passed | failed | skipped` (compat-tests/lib.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$COMPAT_LIB_DIR/containers"

compat_init containers
compat_args "$@"
bash "$ROOT/scripts/install-deps.sh" >&2 || compat_fail "scripts/install-deps.sh failed"
PY="$ROOT/.venv/bin/python"
PROPS=(znode.container.checkIntervalMs=50 znode.container.maxNeverUsedIntervalMs=600 znode.container.maxPerMinute=120)

port="$(free_port)"
if [[ "$TARGET" == zookeeper ]]; then
    ZK_JVMFLAGS="$(printf -- '-D%s ' "${PROPS[@]}")" start_zookeeper zk "$port" ||
        compat_fail "ZooKeeper did not start"
else
    args=()
    for p in "${PROPS[@]}"; do args+=(-D "$p"); done
    start_paddock paddock "$port" "$COMPAT_WORK/data" "${args[@]}" || compat_fail "paddock did not start"
fi

set +e
ZK_HOSTS="127.0.0.1:$port" "$PY" "$HERE/check.py" | tee "$COMPAT_WORK/out.txt"
set -e
passed=$(grep -c '^ok ' "$COMPAT_WORK/out.txt" || true)
failed=$(grep -c '^FAIL ' "$COMPAT_WORK/out.txt" || true)
((passed > 0)) || failed=$((failed + 1))
report "$passed" "$failed" 0
((failed == 0))
