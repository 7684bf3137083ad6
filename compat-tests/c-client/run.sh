#!/usr/bin/env bash
# C client compat suite: Apache ZooKeeper's multi-threaded C client (Debian's libzookeeper-mt-dev, 3.8.0)
# driven by cclient.c (create/get/set/delete with stats, error codes, sequential ephemerals, watches,
# multi, ACLs with digest auth, chroot, sessions, and a server restart mid-run) against a fresh server on a
# free loopback port. Both servers run with extended types (TTL nodes) on and tickTime 2000.
#
#   compat-tests/c-client/run.sh                       against paddock (PADDOCK_BIN, else a debug build)
#   compat-tests/c-client/run.sh --against-zookeeper   against Apache ZooKeeper 3.9 (scripts/zookeeper.sh):
#                                                      every check must pass there, which proves it right
#
# Builds cclient into compat-tests/c-client/build/ (git-ignored) with cc -std=c11. Installs
# libzookeeper-mt-dev with apt-get when its header is missing. Prints one `ok NAME` / `FAIL NAME: why` line
# per check, then `c-client | passed | failed | skipped`. KEEP_WORK=1 keeps the temp dir (server log,
# the C library's log). Takes about 15 s (6 of them the idle-session check) after the package is installed.
# Exit status: 0 only if checks ran and all passed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$COMPAT_LIB_DIR/c-client"
compat_init c-client
compat_args "$@"

if [[ ! -f /usr/include/zookeeper/zookeeper.h ]]; then
    SUDO=()
    [[ $(id -u) -eq 0 ]] || SUDO=(sudo)
    echo "run.sh: installing libzookeeper-mt-dev" >&2
    if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q libzookeeper-mt-dev >/dev/null 2>&1; then
        "${SUDO[@]}" apt-get update -q >/dev/null 2>&1 || true
        "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q libzookeeper-mt-dev >/dev/null ||
            compat_fail "could not install libzookeeper-mt-dev"
    fi
fi
command -v cc >/dev/null || compat_fail "no C compiler (apt-get install gcc)"

mkdir -p "$HERE/build"
# THREADED exposes the synchronous API (zoo_create, zoo_get, ...) of the multi-threaded library.
cc -std=c11 -DTHREADED -Wall -Wextra -O1 -g -o "$HERE/build/cclient" "$HERE/cclient.c" \
    -lzookeeper_mt -lpthread || compat_fail "cclient.c did not compile"

PORT="$(free_port)"
if [[ "$TARGET" == zookeeper ]]; then
    start_zookeeper zk "$PORT" || compat_fail "ZooKeeper did not start"
else
    # scripts/zookeeper.sh turns extended types (TTL nodes) on; so does this, to compare like with like.
    start_paddock paddock "$PORT" "$COMPAT_WORK/data" --extended-types || compat_fail "paddock did not start"
fi

restart_server() {
    if [[ "$TARGET" == zookeeper ]]; then
        bash "$ROOT/scripts/zookeeper.sh" stop "$COMPAT_WORK/zk" >/dev/null && start_zookeeper zk "$PORT"
    else
        stop_paddock paddock && start_paddock paddock "$PORT" "$COMPAT_WORK/data" --extended-types
    fi
}

# cclient reads its restart answers from a fifo; holding it open read-write here means neither side
# blocks on open. The loop runs in this shell (not a pipeline subshell) so that restarted servers are
# recorded where the EXIT trap finds them.
OUT="$COMPAT_WORK/cclient.out"
CTL="$COMPAT_WORK/ctl"
mkfifo "$CTL"
exec {ctl_fd}<>"$CTL"
: >"$OUT"
set +e
# The deadline guards against a hung synchronous call.
while IFS= read -r line; do
    if [[ "$line" == "# restart-server" ]]; then
        echo "c-client: restarting the server on port $PORT" >&2
        if restart_server; then echo go >&"$ctl_fd"; else echo failed >&"$ctl_fd"; fi
        continue
    fi
    printf '%s\n' "$line" | tee -a "$OUT"
done < <(CCLIENT_ZOO_LOG="$COMPAT_WORK/zoo-client.log" timeout 300 "$HERE/build/cclient" "127.0.0.1:$PORT" \
    --restart-hook <"$CTL"; echo "$?" >"$COMPAT_WORK/cclient.rc")
rc="$(cat "$COMPAT_WORK/cclient.rc" 2>/dev/null || echo 1)"
exec {ctl_fd}>&-
set -e
if [[ $rc -ne 0 && -s "$COMPAT_WORK/zoo-client.log" ]]; then
    echo "c-client: last lines of the C client's log:" >&2
    tail -n 20 "$COMPAT_WORK/zoo-client.log" >&2
fi

result="$(grep -E '^RESULT passed=[0-9]+ failed=[0-9]+ skipped=[0-9]+$' "$OUT" | tail -n 1 || true)"
skipped=0
if [[ -z "$result" ]]; then
    # Crashed or timed out before the summary: count what printed, plus one failure for the crash.
    passed=$(grep -c '^ok ' "$OUT" || true)
    failed=$(( $(grep -c '^FAIL ' "$OUT" || true) + 1 ))
    echo "c-client: cclient exited $rc without a summary line" >&2
else
    read -r passed failed skipped < <(sed -E 's/^RESULT passed=([0-9]+) failed=([0-9]+) skipped=([0-9]+)$/\1 \2 \3/' <<<"$result")
    if [[ $rc -ne 0 && $failed -eq 0 ]]; then failed=1; fi
fi
if ((passed + failed == 0)); then failed=1; fi
if ((skipped > 0)); then report_skip "$skipped" "$(grep '^skip ' "$OUT" | sed 's/^skip //' | paste -sd ';' -)"; fi
report "$passed" "$failed" "$skipped"
[[ $failed -eq 0 ]]
