#!/usr/bin/env bash
# Rust client compat suite: paddock-compat-rust (this folder, a workspace crate) runs named checks with the
# zookeeper-client crate 0.11 against a server on a free loopback port, printing `ok <name>` /
# `FAIL <name>: <why>` per check; the last line is `rust-client | passed | failed | skipped`.
#
#   compat-tests/rust-client/run.sh                        against paddock (PADDOCK_BIN, else a debug build)
#   compat-tests/rust-client/run.sh --against-zookeeper    against Apache ZooKeeper 3.9.5: every check must
#                                                          pass there, which is what proves the check right
#   compat-tests/rust-client/run.sh [...] -- --only NAME   run some checks (repeat --only); -- --list lists them
#
# Both servers allow TTL nodes (paddock --extended-types, zookeeper.extendedTypesEnabled=true) and sweep
# containers/TTL nodes every second (znode.container.checkIntervalMs=1000; ZooKeeper's default is 60 s).
# The checks build with `cargo build --locked -p paddock-compat-rust` into $CARGO_TARGET_DIR (lib.sh's
# default), so CI shares one target dir. KEEP_WORK=1 keeps the temp dir (server log).
# Exit status: 0 only if checks ran and none failed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
CHECK_MS=1000
compat_init rust-client
compat_args "$@"

command -v cargo >/dev/null || compat_fail "cargo not found (install the Rust toolchain)"
(cd "$ROOT" && cargo build -q --locked -p paddock-compat-rust) || compat_fail "building paddock-compat-rust failed"
CHECKS="$CARGO_TARGET_DIR/debug/paddock-compat-rust"

PORT="$(free_port)"
if [[ "$TARGET" == zookeeper ]]; then
    ZK_JVMFLAGS="-Dzookeeper.extendedTypesEnabled=true -Dznode.container.checkIntervalMs=$CHECK_MS ${ZK_JVMFLAGS:-}" \
        start_zookeeper zk "$PORT" || compat_fail "ZooKeeper did not start"
else
    start_paddock paddock "$PORT" "$COMPAT_WORK/data" --extended-types -D "znode.container.checkIntervalMs=$CHECK_MS" ||
        compat_fail "paddock did not start"
fi

OUT="$COMPAT_WORK/checks.out"
set +e
"$CHECKS" --server "127.0.0.1:$PORT" "${PASS_ARGS[@]}" | tee "$OUT"
rc=${PIPESTATUS[0]}
set -e

passed=0 failed=0
if counts="$(grep -E '^checks: passed [0-9]+ failed [0-9]+$' "$OUT" | tail -n 1)" && [[ -n "$counts" ]]; then
    read -r _ _ passed _ failed <<<"$counts"
fi
# A run that stopped before its counts line (panic, connect failure) has not passed.
if [[ $rc -ne 0 && $failed -eq 0 ]]; then failed=1; fi
if ((passed + failed == 0)); then failed=1; rc=1; fi
if [[ $rc -ne 0 && "$TARGET" == paddock ]]; then
    echo "run.sh: paddock log (last 30 lines):" >&2
    tail -n 30 "$COMPAT_WORK/paddock.log" >&2 || true
fi
report "$passed" "$failed" 0
[[ $rc -eq 0 ]]
