#!/usr/bin/env bash
# Node.js client compat suite: node-zookeeper-client 1.1.3 (pinned in package.json/package-lock.json) runs
# checks.js against a fresh server: CRUD with exact stats, error codes, mkdirp, sequential and ephemeral
# nodes, watches, transactions (multi), digest ACLs, a chroot connection string, two interacting clients.
#
#   compat-tests/node/run.sh                        against paddock ($PADDOCK_BIN, else a debug build)
#   compat-tests/node/run.sh --against-zookeeper    against Apache ZooKeeper 3.9.5 (scripts/zookeeper.sh):
#                                                   every check must pass there, which proves the check right
#   compat-tests/node/run.sh [...] -- NAME...       run only the named checks
#
# `npm ci` fills compat-tests/node/node_modules only when it is missing or older than package-lock.json.
# Each check prints `ok NAME` or `FAIL NAME: why`; the last line is the `node | passed | failed | skipped` row.
# KEEP_WORK=1 keeps the temp dir (server log). Exit status 0 only if checks ran and none failed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$HERE/../lib.sh"
compat_init node

compat_args "$@"

command -v node >/dev/null || compat_fail "no 'node' on PATH (apt-get install nodejs npm)"
command -v npm >/dev/null || compat_fail "no 'npm' on PATH (apt-get install npm)"

# npm ci writes node_modules/.package-lock.json last; older than the lock file means the pin changed.
if [[ ! -f "$HERE/node_modules/.package-lock.json" || "$HERE/package-lock.json" -nt "$HERE/node_modules/.package-lock.json" ]]; then
    (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error >&2) || compat_fail "npm ci failed"
fi

PORT="$(free_port)"
if [[ "$TARGET" == zookeeper ]]; then
    start_zookeeper zk "$PORT" || compat_fail "ZooKeeper did not start"
else
    start_paddock paddock "$PORT" "$COMPAT_WORK/data" || compat_fail "paddock did not start"
fi
echo "node: node-zookeeper-client $(node -p 'require(process.argv[1]).version' "$HERE/node_modules/node-zookeeper-client/package.json") against $TARGET on 127.0.0.1:$PORT"

set +e
ZK_CONNECT="127.0.0.1:$PORT" node "$HERE/checks.js" "${PASS_ARGS[@]}" | tee "$COMPAT_WORK/checks.out"
set -e

summary="$(grep -E '^summary [0-9]+ [0-9]+$' "$COMPAT_WORK/checks.out" | tail -n 1 || true)"
if [[ -z "$summary" ]]; then
    compat_fail "checks.js ended without a summary line"
fi
read -r _ passed failed <<<"$summary"
report "$passed" "$failed" 0
((passed > 0 && failed == 0))
