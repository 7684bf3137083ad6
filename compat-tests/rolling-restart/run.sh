#!/usr/bin/env bash
# Growing 3 members to 5 by a rolling restart (issue 42, item 1), the same steps against paddock and Apache
# ZooKeeper 3.9.5, each started from the same zoo.cfg files (no reconfigEnabled): members 1-3 start with the
# 3-server list; a writer creates znodes through kazoo 2.11 all along; members 4 and 5 start, empty, with the
# 5-server list; then 1, 2 and 3 restart one at a time with it, each serving again before the next. After each
# step a write must be acknowledged within 30 s; at the end all five serve and, after a sync, the same
# children holding every acknowledged write (check.py).
#
#   compat-tests/rolling-restart/run.sh                       against paddock
#   compat-tests/rolling-restart/run.sh --against-zookeeper   against ZooKeeper 3.9.5
#
# Ends with the row `rolling-restart | passed | failed | skipped` (compat-tests/lib.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$COMPAT_LIB_DIR/rolling-restart"

compat_init rolling-restart
compat_args "$@"
bash "$ROOT/scripts/install-deps.sh" >&2 || compat_fail "scripts/install-deps.sh failed"
PY="$ROOT/.venv/bin/python"

ports=() lines=()
for i in 1 2 3 4 5; do
    ports+=("$(free_port)")
    lines+=("server.$i=127.0.0.1:$(free_port):$(free_port):participant;127.0.0.1:${ports[i - 1]}")
done
three="$(printf '%s\n' "${lines[@]:0:3}")"
five="$(printf '%s\n' "${lines[@]}")"

write_cfg() { # i server-lines
    local dir="$COMPAT_WORK/m$1"
    mkdir -p "$dir/data"
    echo "$1" >"$dir/data/myid"
    printf 'tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s\n4lw.commands.whitelist=*\nadmin.enableServer=false\n%s\n' \
        "$dir/data" "$2" >"$dir/zoo.cfg"
}

if [[ "$TARGET" == zookeeper ]]; then
    MEMBER_CP="$(bash "$ROOT/scripts/zookeeper.sh" classpath)"
else
    MEMBER_BIN="$(compat_paddock_bin)" || compat_fail "no paddock binary"
fi

trap 'set +e; touch "$COMPAT_WORK/stop"; for i in 1 2 3 4 5; do member_stop "$i"; done; compat_cleanup' EXIT
export ZK_HOSTS
ZK_HOSTS="$(printf '127.0.0.1:%s,' "${ports[@]}")"
ZK_HOSTS="${ZK_HOSTS%,}"
out="$COMPAT_WORK/out.txt"
: >"$out"

for i in 1 2 3; do write_cfg "$i" "$three"; member_start "$i"; done
member_wait_serving 120 1 2 3
"$PY" "$HERE/check.py" write "$COMPAT_WORK" >"$COMPAT_WORK/writer.log" 2>&1 &
writer=$!
set +e
# A check.py that stops early (an exception, a lost connection) fails the suite even if no FAIL line came.
crashed=0
check() { # check.py arguments...
    "$PY" "$HERE/check.py" "$@" | tee -a "$out"
    ((PIPESTATUS[0] == 0)) || crashed=$((crashed + 1))
}
check progress "$COMPAT_WORK" "the start on 3 members"
# The new members serve once a member they can follow knows them (paddock: once the leader runs with the
# 5-server list); they are waited for at the end.
for i in 4 5; do write_cfg "$i" "$five"; member_start "$i"; done
sleep 5
check progress "$COMPAT_WORK" "members 4 and 5 started"
for i in 1 2 3; do
    member_stop "$i"
    write_cfg "$i" "$five"
    member_start "$i"
    member_wait_serving 120 "$i"
    check progress "$COMPAT_WORK" "member $i restarted with 5 servers"
done
touch "$COMPAT_WORK/stop"
wait "$writer"
member_wait_serving 120 1 2 3 4 5
check verify "$COMPAT_WORK"
set -e
passed=$(grep -c '^ok ' "$out" || true)
failed=$(grep -c '^FAIL ' "$out" || true)
# check.py exits 1 after its FAIL lines too; only an exit without one counts on its own.
((crashed == 0 || failed > 0)) || { echo "rolling-restart: check.py ended early (exit status non-zero, no FAIL line)"; failed=$crashed; }
((passed > 0)) || failed=$((failed + 1))
report "$passed" "$failed" 0
((failed == 0))
