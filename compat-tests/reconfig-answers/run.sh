#!/usr/bin/env bash
# reconfig's answers (issue 42, item 2), the same scenario against paddock and Apache ZooKeeper 3.9.5:
# on a 3-member ensemble with reconfigEnabled, a non-incremental reconfig to member 1 and two servers that
# were never started, sent to each member in turn, is refused with NewConfigNoQuorum, leaves
# /zookeeper/config as it was and the ensemble writing (compat-tests/reconfig-answers/check.py, kazoo 2.11).
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

if [[ "$TARGET" == zookeeper ]]; then
    cp="$(bash "$ROOT/scripts/zookeeper.sh" classpath)"
    ports=() servers=""
    for i in 1 2 3; do
        ports+=("$(free_port)")
        servers+="server.$i=127.0.0.1:$(free_port):$(free_port):participant;127.0.0.1:${ports[i - 1]}"$'\n'
    done
    for i in 1 2 3; do
        dir="$COMPAT_WORK/zk$i"
        mkdir -p "$dir/data"
        echo "$i" >"$dir/data/myid"
        printf 'tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nreconfigEnabled=true\nstandaloneEnabled=false\n4lw.commands.whitelist=*\nadmin.enableServer=false\n%s' \
            "$dir/data" "$servers" >"$dir/zoo.cfg"
        java -Xmx192m -Dzookeeper.DigestAuthenticationProvider.superDigest="$SUPER" \
            -Dzookeeper.log.dir="$dir" -cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
            >"$dir/zk.log" 2>&1 </dev/null &
        echo $! >"$dir/pid"
    done
    trap 'for i in 1 2 3; do kill "$(cat "$COMPAT_WORK/zk$i/pid")" 2>/dev/null || true; done; compat_cleanup' EXIT
    deadline=$((SECONDS + 90))
    for p in "${ports[@]}"; do
        until [[ "$(paddock_mode "$p")" == leader || "$(paddock_mode "$p")" == follower ]]; do
            ((SECONDS < deadline)) || compat_fail "ZooKeeper member on port $p did not serve"
            sleep 0.5
        done
    done
    hosts="127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}"
else
    ENSEMBLE_EXTRA_CFG=$'reconfigEnabled=true\nstandaloneEnabled=false\n' \
        start_paddock_ensemble 3 m --super-digest "$SUPER" ||
        compat_fail "the paddock ensemble did not start"
    hosts="$ENSEMBLE_CONNECT"
fi

set +e
ZK_HOSTS="$hosts" NEVER_STARTED="$never" "$PY" "$HERE/check.py" | tee "$COMPAT_WORK/out.txt"
set -e
passed=$(grep -c '^ok ' "$COMPAT_WORK/out.txt" || true)
failed=$(grep -c '^FAIL ' "$COMPAT_WORK/out.txt" || true)
((passed > 0)) || failed=$((failed + 1))
report "$passed" "$failed" 0
((failed == 0))
