#!/usr/bin/env bash
# SessionMoved (issue 42, item 3), the same scenario against a 3-member paddock ensemble and a 3-member
# Apache ZooKeeper 3.9.5 ensemble in one run: a session reconnects to another member while its first
# connection stays open; a write (or multi) on the old connection gets no reply, the connection is
# closed, and the write does not commit (compat-tests/session-moved/check.py, raw wire frames).
#
#   compat-tests/session-moved/run.sh      both ensembles, one after the other (about 40 s)
#
# Ends with the row `session-moved | passed | failed | skipped` (compat-tests/lib.sh), counting the checks
# against both; each check line is prefixed with the server it ran against.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$COMPAT_LIB_DIR/session-moved"

compat_init session-moved
compat_args "$@"
bash "$ROOT/scripts/install-deps.sh" >&2 || compat_fail "scripts/install-deps.sh failed"
PY="$ROOT/.venv/bin/python"
out="$COMPAT_WORK/out.txt"
: >"$out"

modes_of() { # ports...
    local p m modes=""
    for p in "$@"; do
        m="$(paddock_mode "$p")"
        modes+="${modes:+,}$m"
    done
    echo "$modes"
}

run_check() { # label hosts ports...
    local label=$1 hosts=$2
    shift 2
    local before rc
    before=$(grep -c '^FAIL ' "$out" || true)
    set +e
    ZK_HOSTS="$hosts" MODES="$(modes_of "$@")" "$PY" "$HERE/check.py" | sed "s/^\(ok\|FAIL\) /\1 $label: /" | tee -a "$out"
    rc=${PIPESTATUS[0]}
    set -e
    # check.py exits 1 only after printing a FAIL line; any other end without one is a failure too.
    if ((rc != 0)) && [[ "$(grep -c '^FAIL ' "$out" || true)" == "$before" ]]; then
        echo "FAIL $label: check.py exited $rc without naming a failed check" | tee -a "$out"
    fi
}

# paddock
start_paddock_ensemble 3 m || compat_fail "the paddock ensemble did not start"
run_check paddock "$ENSEMBLE_CONNECT" "${ENSEMBLE_PORTS[@]}"
for name in m1 m2 m3; do stop_paddock "$name"; done

# Apache ZooKeeper 3.9.5, as compat-tests/reconfig-answers starts it
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
    printf 'tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nstandaloneEnabled=false\n4lw.commands.whitelist=*\nadmin.enableServer=false\n%s' \
        "$dir/data" "$servers" >"$dir/zoo.cfg"
    java -Xmx192m -Dzookeeper.log.dir="$dir" -cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
        >"$dir/zk.log" 2>&1 </dev/null &
    echo $! >"$dir/pid"
done
trap 'set +e; for i in 1 2 3; do kill "$(cat "$COMPAT_WORK/zk$i/pid")" 2>/dev/null; done; compat_cleanup' EXIT
deadline=$((SECONDS + 90))
for p in "${ports[@]}"; do
    until [[ "$(paddock_mode "$p")" == leader || "$(paddock_mode "$p")" == follower ]]; do
        ((SECONDS < deadline)) || compat_fail "ZooKeeper member on port $p did not serve"
        sleep 0.5
    done
done
run_check zookeeper "127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}" "${ports[@]}"

passed=$(grep -c '^ok ' "$out" || true)
failed=$(grep -c '^FAIL ' "$out" || true)
((passed > 0)) || failed=$((failed + 1))
report "$passed" "$failed" 0
((failed == 0))
