#!/usr/bin/env bash
# reconfig's answers and dynamic config files (issue 42, item 2), the same scenario against paddock and
# Apache ZooKeeper 3.9.5, each started from the same zoo.cfg files: on a 3-member ensemble with
# reconfigEnabled, /zookeeper/config lists zoo.cfg's servers and a version from the start; a non-incremental
# reconfig to member 1 and two servers that were never started, sent to each member in turn, is refused
# with NewConfigNoQuorum, leaves /zookeeper/config as it was and the ensemble writing; a client on a follower
# removes that follower and adds it back on one connection, writing and reading on it in between (the
# removed member serves on as a non-voting follower); a reconfig removing
# member 3 is written by every member to zoo.cfg.dynamic.<version> with zoo.cfg pointing at it; member 1,
# restarted from that zoo.cfg, serves the two-member membership (compat-tests/reconfig-answers/check.py,
# kazoo 2.11).
#
#   compat-tests/reconfig-answers/run.sh                       against a paddock ensemble
#   compat-tests/reconfig-answers/run.sh --against-zookeeper   against a ZooKeeper 3.9.5 ensemble
#
# Ends with the row `reconfig-answers | passed | failed | skipped` (compat-tests/lib.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$COMPAT_LIB_DIR/reconfig-answers"

compat_init reconfig-answers
compat_args "$@"
bash "$ROOT/scripts/install-deps.sh" >&2 || compat_fail "scripts/install-deps.sh failed"
PY="$ROOT/.venv/bin/python"
SUPER='super:D/InIHSb7yEEbrWz8b9l71RjZJU=' # super:test

never="server.4=127.0.0.1:$(free_port):$(free_port):participant;127.0.0.1:$(free_port)"
never+=",server.5=127.0.0.1:$(free_port):$(free_port):participant;127.0.0.1:$(free_port)"

# The same zoo.cfg for both servers (ZooKeeper reads the super digest from it as the system property
# zookeeper.DigestAuthenticationProvider.superDigest; paddock reads the key itself).
ports=() servers="" dirs=""
for i in 1 2 3; do
    ports+=("$(free_port)")
    servers+="server.$i=127.0.0.1:$(free_port):$(free_port):participant;127.0.0.1:${ports[i - 1]}"$'\n'
    dirs+="${dirs:+,}$COMPAT_WORK/m$i"
done
for i in 1 2 3; do
    dir="$COMPAT_WORK/m$i"
    mkdir -p "$dir/data"
    echo "$i" >"$dir/data/myid"
    printf 'tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nreconfigEnabled=true\nstandaloneEnabled=false\n4lw.commands.whitelist=*\nadmin.enableServer=false\nDigestAuthenticationProvider.superDigest=%s\n%s' \
        "$dir/data" "$SUPER" "$servers" >"$dir/zoo.cfg"
done
if [[ "$TARGET" == zookeeper ]]; then
    MEMBER_CP="$(bash "$ROOT/scripts/zookeeper.sh" classpath)"
else
    MEMBER_BIN="$(compat_paddock_bin)" || compat_fail "no paddock binary"
fi

trap 'set +e; for i in 1 2 3; do member_stop "$i"; done; compat_cleanup' EXIT
for i in 1 2 3; do member_start "$i"; done
member_wait_serving 90 1 2 3
hosts="127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}"
export ZK_HOSTS="$hosts" NEVER_STARTED="$never" MEMBER_DIRS="$dirs" ZOO_SERVERS="$servers"

set +e
# A check.py that stops early (an exception, a lost connection) fails the suite even if no FAIL line came.
crashed=0
"$PY" "$HERE/check.py" | tee "$COMPAT_WORK/out.txt"
((PIPESTATUS[0] == 0)) || crashed=$((crashed + 1))
# Member 1 restarts from the zoo.cfg it rewrote after the reconfig (member 3 left: 1 and 2 remain).
member_stop 1
member_start 1
member_wait_serving 90 1 2
"$PY" "$HERE/check.py" restarted | tee -a "$COMPAT_WORK/out.txt"
((PIPESTATUS[0] == 0)) || crashed=$((crashed + 1))
set -e
passed=$(grep -c '^ok ' "$COMPAT_WORK/out.txt" || true)
failed=$(grep -c '^FAIL ' "$COMPAT_WORK/out.txt" || true)
# check.py exits 1 after its FAIL lines too; only an exit without one counts on its own.
((crashed == 0 || failed > 0)) || { echo "reconfig-answers: check.py ended early (exit status non-zero, no FAIL line)"; failed=$crashed; }
((passed > 0)) || failed=$((failed + 1))
report "$passed" "$failed" 0
((failed == 0))
