#!/usr/bin/env bash
# Locks suite (issue 10): `paddock lock`, `paddock elect`, the recipes crate's examples
# (recipes/examples/), fencing end to end against a real PostgreSQL, and Curator's InterProcessMutex and
# LeaderLatch on the same paths. Every check runs as real processes against a server this script starts.
#
#   compat-tests/locks/run.sh                        every check against paddock, then against Apache
#                                                    ZooKeeper 3.9.5 (both; the row is `locks`)
#   compat-tests/locks/run.sh --against-zookeeper    only against ZooKeeper (row `locks@zookeeper`)
#   compat-tests/locks/run.sh --paddock-only         only against paddock
#   compat-tests/locks/run.sh [...] -- NAME...       only the named checks (names as printed)
#
# Needs: cargo, a JDK and Maven (Curator 5.9.0 from Maven Central, compiled with javac), and Debian's
# PostgreSQL 15 server (installed here with apt-get if missing). PostgreSQL runs from a temp dir on a free
# port, as `nobody` when this runs as root (postgres refuses root), and is stopped on exit, also on
# failure. Both servers allow TTL nodes and sweep them every second. Session timeouts are 4 s (the
# minimum at tickTime 2000). Prints `ok NAME@TARGET` / `FAIL NAME@TARGET: why` per check, its duration,
# and the row `locks | passed | failed | 0`. KEEP_WORK=1 keeps the temp dir (logs, outputs).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CHECK_MS=1000
SESSION_MS=4000
compat_init locks
COMPAT_EXTRA_FLAGS="--paddock-only"
compat_args "$@"
SUITE_START=$SECONDS
if [[ "$TARGET" == zookeeper ]]; then
    TARGETS=(zookeeper)
elif [[ -n "${FLAGS[--paddock-only]:-}" ]]; then
    TARGETS=(paddock)
else
    TARGETS=(paddock zookeeper)
fi

# --- what the checks need ------------------------------------------------------------------------------
command -v cargo >/dev/null || compat_fail "cargo not found (install the Rust toolchain)"
(cd "$ROOT" && cargo build -q --locked -p paddock-recipes --examples) || compat_fail "building the recipes examples failed"
BIN="$(compat_paddock_bin)" || compat_fail "building paddock failed"
echo "locks: built in $((SECONDS - SUITE_START)) s" >&2
EX="$CARGO_TARGET_DIR/debug/examples"

PGBIN=/usr/lib/postgresql/15/bin
if [[ ! -x "$PGBIN/pg_ctl" ]]; then
    echo "locks: installing Debian's postgresql" >&2
    SUDO=(); [[ "$(id -u)" == 0 ]] || SUDO=(sudo)
    "${SUDO[@]}" apt-get install -y -q postgresql >&2 || { "${SUDO[@]}" apt-get update -q >&2 && "${SUDO[@]}" apt-get install -y -q postgresql >&2; } ||
        compat_fail "cannot install postgresql"
fi
command -v mvn >/dev/null && command -v javac >/dev/null || compat_fail "mvn and javac are needed (scripts/install-deps.sh)"
# Resolved class path and compiled classes are kept in java/target (git-ignored) while pom.xml and the
# source are older than them: Maven and javac cost half a minute on a busy machine.
JT="$HERE/java/target"
mkdir -p "$JT"
if [[ ! "$JT/cp.txt" -nt "$HERE/java/pom.xml" ]] || ! tr ':' '\n' <"$JT/cp.txt" | xargs -r ls >/dev/null 2>&1; then
    (cd "$HERE/java" && mvn -q -B dependency:build-classpath -Dmdep.outputFile="$JT/cp.txt" >"$COMPAT_WORK/mvn.log" 2>&1) ||
        { tail -20 "$COMPAT_WORK/mvn.log" >&2; compat_fail "resolving Curator with Maven failed"; }
fi
SRC="$HERE/java/src/main/java/dev/paddock/locks/CuratorSide.java"
if [[ ! "$JT/classes/dev/paddock/locks/CuratorSide.class" -nt "$SRC" ]]; then
    rm -rf "$JT/classes"
    javac -d "$JT/classes" -cp "$(cat "$JT/cp.txt")" "$SRC" || compat_fail "compiling CuratorSide failed"
fi
JCP="$JT/classes:$(cat "$JT/cp.txt")"
echo "locks: Curator ready at $((SECONDS - SUITE_START)) s" >&2
curator() { java -cp "$JCP" dev.paddock.locks.CuratorSide "$SERVERS" "$@"; }

# PostgreSQL: its own dir (postgres, when we are root, runs as nobody, who cannot enter COMPAT_WORK).
PGROOT="$(mktemp -d "${TMPDIR:-/tmp}/paddock-locks-pg.XXXXXX")"
PGPORT="$(free_port)"
AS=()
if [[ "$(id -u)" == 0 ]]; then chmod 755 "$PGROOT"; chown nobody "$PGROOT"; AS=(runuser -u nobody --); fi
stop_pg() {
    [[ -f "$PGROOT/data/postmaster.pid" ]] && "${AS[@]}" "$PGBIN/pg_ctl" -D "$PGROOT/data" -m immediate stop >/dev/null 2>&1
    rm -rf "$PGROOT"
}
cleanup() {
    local rc=$?
    set +e
    for pid in $(jobs -p); do kill -9 "$pid" 2>/dev/null; done
    if [[ -f "$COMPAT_WORK/servers" ]]; then
        while read -r kind what; do
            if [[ $kind == zk ]]; then
                bash "$ROOT/scripts/zookeeper.sh" stop "$what" >/dev/null 2>&1
            elif grep -q paddock "/proc/$what/cmdline" 2>/dev/null; then
                kill -9 "$what" 2>/dev/null
            fi
        done <"$COMPAT_WORK/servers"
    fi
    stop_pg
    (exit $rc)
    compat_cleanup
}
trap cleanup EXIT
"${AS[@]}" "$PGBIN/initdb" -D "$PGROOT/data" -A trust -U postgres >"$COMPAT_WORK/initdb.log" 2>&1 || { cat "$COMPAT_WORK/initdb.log" >&2; compat_fail "initdb failed"; }
"${AS[@]}" "$PGBIN/pg_ctl" -D "$PGROOT/data" -l "$PGROOT/pg.log" -w -t 60 \
    -o "-p $PGPORT -k $PGROOT -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null ||
    { cat "$PGROOT/pg.log" >&2; compat_fail "PostgreSQL did not start"; }
PSQL="$PGBIN/psql"; [[ -x "$PSQL" ]] || PSQL=psql
psql_do() { local db=$1; shift; "$PSQL" -X -q -t -A -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PGPORT" -U postgres -d "$db" -c "$*"; }

# --- helpers -------------------------------------------------------------------------------------------
passed=0 failed=0
ONLY=" ${PASS_ARGS[*]:-} "
fail() { echo "$*" >"$W/why"; return 1; }
wait_for() { # file regex seconds
    local deadline=$((SECONDS + $3))
    # shellcheck disable=SC2086 # $1 may be a glob
    until grep -qE "$2" $1 2>/dev/null; do
        ((SECONDS < deadline)) || return 1
        sleep 0.05
    done
}
lines() { grep -cE "$2" "$1" 2>/dev/null || true; }
check() { # name function
    local name=$1 start=$SECONDS
    [[ "$ONLY" == "  " || "$ONLY" == *" $name "* ]] || return 0
    W="$COMPAT_WORK/$T/$name"
    mkdir -p "$W"
    # Not in an `if`: there, set -e would be off inside the check too.
    set +e
    (set -e; cd "$W"; "$2") >"$W/out" 2>&1
    local rc=$?
    set -e
    if [[ $rc == 0 ]]; then
        echo "ok $name@$T ($((SECONDS - start)) s)"
        passed=$((passed + 1))
    else
        echo "FAIL $name@$T: $(cat "$W/why" 2>/dev/null || tail -n 5 "$W/out")"
        failed=$((failed + 1))
    fi
    # Nothing a check started outlives it: each was started by spawn, in its own process group.
    if [[ -f "$W/pids" ]]; then
        while read -r pid; do kill -9 -- "-$pid" 2>/dev/null || true; done <"$W/pids"
    fi
}
# spawn OUTFILE CMD...: runs CMD in the background in its own process group (so CMD's children go
# with it), stdout+stderr to OUTFILE, stdin from /dev/null; prints nothing, sets SPAWNED to its pid.
spawn() {
    local out=$1; shift
    setsid "$@" >"$out" 2>&1 </dev/null &
    SPAWNED=$!
    echo "$SPAWNED" >>"$W/pids"
}
# spawn_held OUTFILE CMD...: as spawn, with stdin a FIFO held open until `release_held OUTFILE`.
spawn_held() {
    local out=$1; shift
    mkfifo "$out.in"
    setsid "$@" >"$out" 2>&1 <"$out.in" &
    SPAWNED=$!
    echo "$SPAWNED" >>"$W/pids"
    setsid sleep 3600 >"$out.in" &
    echo "$!" >"$out.holder"
    echo "$!" >>"$W/pids"
}
release_held() { kill "$(cat "$1.holder")" 2>/dev/null || true; }
wait_rc() { RC=0; wait "$1" || RC=$?; }


# --- the checks ----------------------------------------------------------------------------------------
# Each runs in its own directory $W, with SERVERS, LOCK (`paddock lock` with the connection flags),
# ELECT, DB (a fresh PostgreSQL connection string) set; it fails through `fail WHY` or any failing command.

# Two shells run `paddock lock /locks/jobs -- ./job.sh` at once: one after the other, tokens increasing.
t_two_shells() {
    cat >job.sh <<'SH'
#!/bin/sh
echo "start $1 $PADDOCK_LOCK_TOKEN $PADDOCK_LOCK_PATH" >>runs
sleep 1
echo "end $1" >>runs
SH
    chmod +x job.sh
    spawn a.out "${LOCK[@]}" /locks/jobs -- ./job.sh a; local a=$SPAWNED
    spawn b.out "${LOCK[@]}" /locks/jobs -- ./job.sh b; local b=$SPAWNED
    wait_rc $a; local ra=$RC
    wait_rc $b
    [[ $ra == 0 && $RC == 0 ]] || fail "exit statuses $ra, $RC: $(cat a.out b.out)"
    mapfile -t r <runs
    [[ ${#r[@]} == 4 ]] || fail "runs: ${r[*]}"
    read -r s1 x1 t1 p1 <<<"${r[0]}"; read -r e1 y1 <<<"${r[1]}"
    read -r s2 x2 t2 p2 <<<"${r[2]}"; read -r e2 y2 <<<"${r[3]}"
    [[ "$s1 $e1 $s2 $e2" == "start end start end" && $x1 == "$y1" && $x2 == "$y2" && $x1 != "$x2" ]] ||
        fail "the jobs overlapped: ${r[*]}"
    [[ $p1 == /locks/jobs && $p2 == /locks/jobs ]] || fail "PADDOCK_LOCK_PATH: ${r[*]}"
    ((t2 > t1 && t1 > 0)) || fail "tokens not increasing: $t1 then $t2"
}

# Exit statuses: CMD's own, 3 on --timeout; without CMD the token is printed and held until stdin closes.
t_exit_statuses() {
    local rc=0
    "${LOCK[@]}" /locks/st -- sh -c 'exit 7' || rc=$?
    [[ $rc == 7 ]] || fail "CMD exited 7, paddock lock exited $rc"
    spawn_held h.out "${LOCK[@]}" /locks/st; local h=$SPAWNED
    wait_for h.out '^[0-9]+$' 10 || fail "no token printed: $(cat h.out)"
    rc=0; "${LOCK[@]}" --timeout 700ms /locks/st -- true 2>t.err || rc=$?
    [[ $rc == 3 ]] || fail "--timeout while held: exit $rc, want 3"
    grep -q "timed out" t.err || fail "no timeout message: $(cat t.err)"
    release_held h.out
    { wait_rc $h; [[ $RC == 0 ]]; } || fail "holder did not exit 0 after stdin closed"
    # The timed-out waiter left the queue as it gave up, not at its session's expiry (4 s).
    rc=0; "${LOCK[@]}" --timeout 2s /locks/st -- true || rc=$?
    [[ $rc == 0 ]] || fail "after release: exit $rc (a stale waiter's node?)"
    rc=0; "${LOCK[@]}" locks/relative -- true 2>bad.err || rc=$?
    [[ $rc == 1 ]] && grep -q "must start with /" bad.err || fail "relative path: exit $rc, $(cat bad.err)"
    rc=0; "${LOCK[@]}" --timeout soon /locks/st -- true 2>bad.err || rc=$?
    [[ $rc == 2 ]] || fail "bad --timeout: exit $rc"
}

# SIGINT/SIGTERM to paddock lock reach CMD; CMD's status is passed on.
t_signals_forwarded() {
    # shellcheck disable=SC2016
    spawn l.out "${LOCK[@]}" /locks/sig -- sh -c 'trap "echo got-term; exit 5" TERM; echo running; while :; do sleep 0.1; done'
    local l=$SPAWNED
    wait_for l.out running 10 || fail "CMD did not start: $(cat l.out)"
    kill -TERM "$l"
    { wait_rc $l; [[ $RC == 5 ]]; } || fail "exit status not CMD's 5: $(cat l.out)"
    grep -q got-term l.out || fail "CMD did not get SIGTERM"
}

# The holder's session is lost (paddock lock SIGSTOPped past the session timeout): a waiter gets the
# lock with a larger token; on resume CMD is sent SIGTERM and paddock lock exits 4.
t_session_lost() {
    # shellcheck disable=SC2016
    spawn a.out "${LOCK[@]}" /locks/lost -- sh -c 'echo "token $PADDOCK_LOCK_TOKEN"; trap "echo got-term; exit 0" TERM; while :; do sleep 0.1; done'
    local a=$SPAWNED
    wait_for a.out '^token' 10 || fail "A did not get the lock: $(cat a.out)"
    kill -STOP "$a"
    # shellcheck disable=SC2016
    spawn b.out "${LOCK[@]}" --timeout 20s /locks/lost -- sh -c 'echo "token $PADDOCK_LOCK_TOKEN"'
    local b=$SPAWNED
    { wait_rc $b; [[ $RC == 0 ]]; } || { kill -CONT "$a"; fail "B did not get the lock after A's session expired: $(cat b.out)"; }
    kill -CONT "$a"
    { wait_rc $a; [[ $RC == 4 ]]; } || fail "A did not exit 4: $(cat a.out)"
    grep -q got-term a.out || fail "A's CMD was not sent SIGTERM: $(cat a.out)"
    grep -q "lost the lock" a.out || fail "no loss message: $(cat a.out)"
    local t1 t2
    t1=$(awk '/^token/ {print $2}' a.out); t2=$(awk '/^token/ {print $2}' b.out)
    ((t2 > t1)) || fail "tokens: A $t1, B $t2"
}

# Fencing end to end: A takes the lock (t1), is SIGSTOPped past its session timeout; B takes it (t2 > t1)
# and writes; A resumes and writes: refused; the row holds B's value and t2.
t_fencing_token() {
    spawn a.out "$EX/fenced_write" --servers "$SERVERS" --pg "$DB" --mode fenced --key k-fenced --value A --pause-ms 2000
    local a=$SPAWNED
    wait_for a.out '^acquired' 20 || fail "A did not get the lock: $(cat a.out)"
    kill -STOP "$a"
    "$EX/fenced_write" --servers "$SERVERS" --pg "$DB" --mode fenced --key k-fenced --value B >b.out 2>&1 ||
        { kill -CONT "$a"; fail "B failed: $(cat b.out)"; }
    kill -CONT "$a"
    { wait_rc $a; [[ $RC == 0 ]]; } || fail "A failed: $(cat a.out)"
    local t1 t2 row
    t1=$(awk '/^acquired/ {print $2}' a.out); t2=$(awk '/^acquired/ {print $2}' b.out)
    ((t2 > t1)) || fail "tokens: A $t1, B $t2"
    grep -qx written b.out || fail "B's write: $(cat b.out)"
    grep -qx refused a.out || fail "A's late write was not refused: $(cat a.out)"
    row=$(psql_do "$DBNAME" "SELECT value || ' ' || fencing_token FROM fenced WHERE key = 'k-fenced'")
    [[ "$row" == "B $t2" ]] || fail "row is '$row', want 'B $t2'"
    [[ "$(psql_do "$DBNAME" "SELECT string_agg(value, ',' ORDER BY id) FROM fenced_writes WHERE key = 'k-fenced'")" == B ]] ||
        fail "accepted writes: not just B's"
}

# The fencing token is the czxid of the holder's own node (as the help and docs/locks.md say), read back
# through another client (Curator): for two holders of a lock one after the other, and for a leader.
t_token_is_czxid() {
    local c1 t1 n1 c2 t2 n2 tl cl
    # shellcheck disable=SC2016
    "${LOCK[@]}" /locks/cz -- sh -c 'echo "$PADDOCK_LOCK_TOKEN" >t1; "$@" >k1' sh "${CURATOR[@]}" czxids /locks/cz ||
        fail "first holder: exit $?"
    # shellcheck disable=SC2016
    "${LOCK[@]}" /locks/cz -- sh -c 'echo "$PADDOCK_LOCK_TOKEN" >t2; "$@" >k2' sh "${CURATOR[@]}" czxids /locks/cz ||
        fail "second holder: exit $?"
    t1=$(cat t1) t2=$(cat t2)
    [[ $(wc -l <k1) == 1 && $(wc -l <k2) == 1 ]] || fail "one node each while held: $(cat k1) / $(cat k2)"
    read -r n1 c1 <k1; read -r n2 c2 <k2
    [[ $n1 == _c_*-lock-* && $n2 == _c_*-lock-* && $n1 != "$n2" ]] || fail "lock nodes: $n1, $n2"
    [[ $t1 == "$c1" ]] || fail "first token $t1, its node $n1 has czxid $c1"
    [[ $t2 == "$c2" ]] || fail "second token $t2, its node $n2 has czxid $c2"
    ((t2 > t1)) || fail "tokens not increasing: $t1 then $t2"
    # shellcheck disable=SC2016
    "${ELECT[@]}" --proposal p1 /election/cz -- sh -c 'echo "$PADDOCK_LEADER_TOKEN" >tl; "$@" >kl' sh "${CURATOR[@]}" czxids /election/cz ||
        fail "leader: exit $?"
    tl=$(cat tl)
    [[ $(wc -l <kl) == 1 ]] || fail "one participant: $(cat kl)"
    read -r _ cl <kl
    [[ $tl == "$cl" ]] || fail "leader token $tl, its node has czxid $cl ($(cat kl))"
    ((tl > t2)) || fail "leader token $tl not above the lock's $t2"
}

# The same with a plain TTL lock (SETNX+TTL) and no token: A's late write lands on top of B's.
t_fencing_ttl_double_write() {
    spawn a.out "$EX/fenced_write" --servers "$SERVERS" --pg "$DB" --mode ttl --lock /fence/ttl --ttl-ms 1000 --key k-ttl --value A --pause-ms 2000
    local a=$SPAWNED
    wait_for a.out '^acquired' 20 || fail "A did not get the TTL lock: $(cat a.out)"
    kill -STOP "$a"
    timeout 30 "$EX/fenced_write" --servers "$SERVERS" --pg "$DB" --mode ttl --lock /fence/ttl --ttl-ms 1000 --key k-ttl --value B >b.out 2>&1 ||
        { kill -CONT "$a"; fail "B failed: $(cat b.out)"; }
    kill -CONT "$a"
    { wait_rc $a; [[ $RC == 0 ]]; } || fail "A failed: $(cat a.out)"
    grep -qx written a.out && grep -qx written b.out || fail "both should have written: A $(cat a.out) B $(cat b.out)"
    [[ "$(psql_do "$DBNAME" "SELECT string_agg(value, ',' ORDER BY id) FROM fenced_writes WHERE key = 'k-ttl'")" == "B,A" ]] ||
        fail "writes not B then A"
    [[ "$(psql_do "$DBNAME" "SELECT value FROM fenced WHERE key = 'k-ttl'")" == A ]] || fail "the stale holder's value did not win"
}

t_payment() {
    psql_do "$DBNAME" "CREATE TABLE charges (idempotency_key text PRIMARY KEY, order_id text, amount_cents int,
        charged_by text, fencing_token bigint)"
    local pids=() i
    for i in 1 2 3 4 5; do
        spawn p$i.out "$EX/payment" --servers "$SERVERS" --pg "$DB" --order o-42 --instance "i$i" --gateway-log "$W/gateway"
        pids+=("$SPAWNED")
    done
    for i in "${pids[@]}"; do { wait_rc "$i"; [[ $RC == 0 ]]; } || fail "an instance failed: $(cat p*.out)"; done
    [[ "$(cat p*.out | grep -c '^charged')" == 1 ]] || fail "charged lines: $(cat p*.out)"
    [[ "$(cat p*.out | grep -cx 'already-charged')" == 4 ]] || fail "already-charged lines: $(cat p*.out)"
    [[ "$(wc -l <gateway)" == 1 ]] || fail "gateway calls: $(cat gateway)"
    [[ "$(psql_do "$DBNAME" "SELECT count(*) FROM charges WHERE order_id = 'o-42'")" == 1 ]] || fail "charge rows not 1"
}

t_inventory_cas() {
    local pids=() i
    for i in 1 2 3 4; do
        spawn c$i.out "$EX/inventory" --servers "$SERVERS" --mode cas --sku cas-widget --instance "i$i" --stock 25
        pids+=("$SPAWNED")
    done
    for i in "${pids[@]}"; do { wait_rc "$i"; [[ $RC == 0 ]]; } || fail "an instance failed: $(cat c*.out)"; done
    [[ "$(cat c*.out | grep -c '^sold [0-9]')" == 25 ]] || fail "sales: $(cat c*.out | grep -c '^sold [0-9]'), want 25"
    # Each stock level was sold exactly once: 25..1, no repeats.
    [[ "$(cat c*.out | awk '/^sold [0-9]/ {print $2}' | sort -n | uniq | wc -l)" == 25 ]] || fail "a level was sold twice"
    [[ "$(cat c*.out | grep -cx sold-out)" == 4 ]] || fail "not every instance saw sold-out"
}

t_inventory_lock() {
    psql_do "$DBNAME" "CREATE TABLE stock (sku text PRIMARY KEY, qty int NOT NULL, fencing_token bigint NOT NULL DEFAULT 0);
        CREATE TABLE sales (id serial PRIMARY KEY, sku text, buyer text, fencing_token bigint);
        INSERT INTO stock VALUES ('db-widget', 12, 0)"
    local pids=() i
    for i in 1 2 3 4; do
        spawn l$i.out "$EX/inventory" --servers "$SERVERS" --mode lock --pg "$DB" --sku db-widget --instance "i$i" --stock 0
        pids+=("$SPAWNED")
    done
    for i in "${pids[@]}"; do { wait_rc "$i"; [[ $RC == 0 ]]; } || fail "an instance failed: $(cat l*.out)"; done
    [[ "$(psql_do "$DBNAME" "SELECT count(*) FROM sales")" == 12 ]] || fail "sales rows not 12"
    [[ "$(psql_do "$DBNAME" "SELECT qty FROM stock")" == 0 ]] || fail "stock not 0"
    [[ "$(cat l*.out | grep -c '^sold [0-9]')" == 12 ]] || fail "sold lines not 12"
    # Tokens only grow along the sales.
    [[ "$(psql_do "$DBNAME" "SELECT count(*) FROM (SELECT fencing_token < lag(fencing_token) OVER (ORDER BY id) AS back FROM sales) s WHERE back")" == 0 ]] ||
        fail "a sale had a smaller token than the one before"
}

t_cron() {
    local period=1000 now from to pids=() i leader
    now=$(($(date +%s%3N) / period)); from=$((now + 1)); to=$((now + 8))
    for i in 1 2 3; do
        spawn c$i.out "$EX/cron" --servers "$SERVERS" --instance "i$i" --period-ms $period --from $from --to $to --log "$W/runs"
        pids+=("$SPAWNED")
    done
    wait_for runs "^$((from + 1)) " 15 || fail "no runs: $(cat c*.out)"
    leader=$(awk 'END {print $2}' runs)
    kill -9 -- "-${pids[${leader#i} - 1]}"
    for i in 1 2 3; do
        [[ "i$i" == "$leader" ]] && continue
        { wait_rc "${pids[i - 1]}"; [[ $RC == 0 ]]; } || fail "instance i$i failed: $(cat c$i.out)"
    done
    local want got
    want=$(seq $from $to | tr '\n' ' ')
    got=$(awk '{print $1}' runs | sort -n | tr '\n' ' ')
    [[ "$got" == "$want" ]] || fail "periods run: '$got', want each of '$want' once"
    awk -v l="$leader" '$2 != l' runs | grep -q . || fail "no one took over from $leader"
}

t_migration() {
    psql_do "$DBNAME" "CREATE TABLE schema_migrations (version int PRIMARY KEY);
        CREATE TABLE migration_runs (version int, run_by text, fencing_token bigint)"
    local pids=() i first
    for i in 1 2 3 4; do
        spawn m$i.out "$EX/migration" --servers "$SERVERS" --pg "$DB" --instance "i$i" --work-ms 1500
        pids+=("$SPAWNED")
    done
    wait_for "m*.out" '^migrating' 20 || true
    first=$(grep -l '^migrating' m*.out | head -n 1); first=${first%.out}; first=${first#m}
    [[ -n "$first" ]] || fail "no one started the migration: $(cat m*.out)"
    kill -9 -- "-${pids[first - 1]}"   # killed midway
    spawn r.out "$EX/migration" --servers "$SERVERS" --pg "$DB" --instance "i$first-restarted" --work-ms 1500
    pids[first - 1]=$SPAWNED
    for i in "${pids[@]}"; do { wait_rc "$i"; [[ $RC == 0 ]]; } || fail "an instance failed: $(cat m*.out r.out)"; done
    [[ "$(psql_do "$DBNAME" "SELECT count(*) FROM migration_runs")" == 1 ]] || fail "migration ran more or less than once"
    [[ "$(psql_do "$DBNAME" "SELECT count(*) FROM accounts")" == 1000 ]] || fail "accounts rows not 1000"
    [[ "$(cat m*.out r.out | grep -c '^migrated ')" == 1 ]] || fail "migrated lines: $(cat m*.out r.out)"
    [[ "$(cat m*.out r.out | grep -cx 'ready 1000')" == 4 ]] || fail "not all 4 live instances ready with 1000 rows"
}

t_idempotency() {
    local pids=() i start
    start=$SECONDS
    for i in 1 2 3 4 5; do
        spawn d$i.out "$EX/idempotency" --servers "$SERVERS" --key req-7 --window-ms 3000
        pids+=("$SPAWNED")
    done
    for i in "${pids[@]}"; do { wait_rc "$i"; [[ $RC == 0 ]]; } || fail "an instance failed: $(cat d*.out)"; done
    [[ "$(cat d*.out | grep -cx accepted)" == 1 && "$(cat d*.out | grep -cx duplicate)" == 4 ]] ||
        fail "concurrent requests: $(cat d*.out | tr '\n' ' ')"
    [[ "$("$EX/idempotency" --servers "$SERVERS" --key req-7 --window-ms 3000)" == duplicate ]] ||
        fail "a retry inside the window was accepted"
    local got=""
    while ((SECONDS - start < 20)); do
        got=$("$EX/idempotency" --servers "$SERVERS" --key req-7 --window-ms 3000)
        [[ "$got" == accepted ]] && break
        sleep 0.5
    done
    [[ "$got" == accepted ]] || fail "the key was never accepted again after its window"
    ((SECONDS - start >= 3)) || fail "accepted again before the 3 s window passed"
}

t_election() {
    local pids=() i leader first last
    for i in 1 2 3; do
        spawn e$i.out "$EX/election" --servers "$SERVERS" --instance "r$i" --log "$W/lead"
        pids+=("$SPAWNED")
    done
    wait_for lead . 15 || fail "no leader: $(cat e*.out)"
    sleep 1
    leader=$(awk 'END {print $1}' lead)
    kill -9 -- "-${pids[${leader#r} - 1]}"
    local killed_at; killed_at=$(date +%s%3N)
    local deadline=$((SECONDS + 15))
    until awk -v l="$leader" '$1 != l' lead | grep -q .; do
        ((SECONDS < deadline)) || fail "no new leader after killing $leader"
        sleep 0.1
    done
    sleep 0.5
    # One leader at a time: the log is one run of the first leader's lines, then the next leader's.
    [[ "$(awk '{print $1}' lead | uniq | wc -l)" == 2 ]] || fail "leaders interleaved: $(awk '{print $1}' lead | uniq | tr '\n' ' ')"
    first=$(awk -v l="$leader" '$1 != l {print $2; exit}' lead)
    ((first - killed_at <= SESSION_MS + 3000)) || fail "takeover took $((first - killed_at)) ms"
}

# paddock elect: --listen prints each leader; CMD runs while leader; the next proposal takes over.
t_elect_cli() {
    spawn l.out "$BIN" elect --servers "$SERVERS" --listen /election/cli
    spawn_held p1.out "${ELECT[@]}" --proposal p1 /election/cli; local p1=$SPAWNED
    wait_for p1.out '^leader p1 [0-9]+$' 10 || fail "p1 not leader: $(cat p1.out)"
    # shellcheck disable=SC2016
    spawn p2.out "${ELECT[@]}" --proposal p2 /election/cli -- sh -c 'echo "leading $PADDOCK_LEADER_TOKEN"; sleep 1; exit 9'
    local p2=$SPAWNED
    sleep 0.5
    grep -q leading p2.out && fail "p2 ran CMD while p1 led"
    release_held p1.out
    { wait_rc $p2; [[ $RC == 9 ]]; } || fail "p2's exit status is not CMD's 9: $(cat p2.out)"
    local t1 t2; t1=$(awk '{print $3}' p1.out); t2=$(awk '/^leading/ {print $2}' p2.out)
    ((t2 > t1)) || fail "tokens: $t1, $t2"
    sleep 0.3
    [[ "$(tr '\n' ' ' <l.out)" == "p1 p2 " ]] || fail "--listen printed: $(cat l.out)"
}

# A Curator InterProcessMutex and paddock lock on one path exclude each other, both ways.
t_curator_mutex() {
    spawn c.out java -cp "$JCP" dev.paddock.locks.CuratorSide "$SERVERS" hold /locks/jobs 2500
    wait_for c.out '^acquired' 30 || fail "Curator did not get the lock: $(cat c.out)"
    local rc=0; "${LOCK[@]}" --timeout 500ms /locks/jobs -- true 2>/dev/null || rc=$?
    [[ $rc == 3 ]] || fail "paddock lock got the lock Curator holds (exit $rc)"
    "${LOCK[@]}" /locks/jobs -- sh -c 'date +%s%3N >got'
    local released; released=$(awk '/^released/ {print $2}' c.out)
    [[ -n "$released" ]] && (($(cat got) >= released)) || fail "paddock lock ran before Curator released"
    spawn_held h.out "${LOCK[@]}" /locks/jobs
    wait_for h.out '^[0-9]+$' 10 || fail "paddock lock did not get the lock"
    [[ "$(curator try /locks/jobs 700)" == timeout ]] || fail "Curator got the lock paddock lock holds"
    release_held h.out
    sleep 0.3
    [[ "$(curator try /locks/jobs 5000)" == acquired ]] || fail "Curator did not get the lock after release"
}

# Curator's LeaderLatch sees the library's leader, and takes over when it resigns; --listen sees Curator.
t_curator_latch() {
    spawn l.out "$BIN" elect --servers "$SERVERS" --listen /election/mixed
    spawn_held r.out "${ELECT[@]}" --proposal rust-leader /election/mixed
    wait_for r.out '^leader rust-leader' 10 || fail "paddock elect did not lead"
    spawn c.out java -cp "$JCP" dev.paddock.locks.CuratorSide "$SERVERS" latch /election/mixed curator 20000
    wait_for c.out '^leader-is' 30 || fail "Curator saw no leader: $(cat c.out)"
    grep -qx 'leader-is rust-leader' c.out || fail "Curator sees: $(cat c.out)"
    sleep 0.5
    grep -q '^leads' c.out && fail "Curator leads while paddock elect does"
    release_held r.out
    wait_for c.out '^leads' 15 || fail "Curator did not take over: $(cat c.out)"
    # The listener learns of the new leader through its own watch, after Curator's latch does.
    wait_for l.out '^curator$' 10 || fail "--listen never printed curator: $(cat l.out)"
    [[ "$(tr '\n' ' ' <l.out)" == "rust-leader curator "* ]] || fail "--listen printed: $(cat l.out)"
}

CHECKS=(two_shells exit_statuses signals_forwarded session_lost fencing_token token_is_czxid fencing_ttl_double_write payment
    inventory_cas inventory_lock cron migration idempotency election elect_cli curator_mutex curator_latch)

# --- run them against each target, the targets side by side ------------------------------------------
# Each target runs in its own background shell with its own server, database and directories; its
# output is printed when both are done. A server it starts is also listed in $COMPAT_WORK/servers, so
# the EXIT trap stops it whatever happens.
run_target() {
    T=$1
    passed=0 failed=0
    PORT="$(free_port)"
    if [[ "$T" == zookeeper ]]; then
        echo "zk $COMPAT_WORK/zk" >>"$COMPAT_WORK/servers"
        ZK_JVMFLAGS="-Dzookeeper.extendedTypesEnabled=true -Dznode.container.checkIntervalMs=$CHECK_MS ${ZK_JVMFLAGS:-}" \
            start_zookeeper zk "$PORT" || { echo "FAIL start@$T: ZooKeeper did not start"; echo "0 1" >"$COMPAT_WORK/$T.counts"; return; }
    else
        start_paddock paddock "$PORT" "$COMPAT_WORK/data" --extended-types -D "znode.container.checkIntervalMs=$CHECK_MS" ||
            { echo "FAIL start@$T: paddock did not start"; echo "0 1" >"$COMPAT_WORK/$T.counts"; return; }
        echo "paddock ${PADDOCK_PIDS[paddock]}" >>"$COMPAT_WORK/servers"
    fi
    SERVERS="127.0.0.1:$PORT"
    CURATOR=(java -cp "$JCP" dev.paddock.locks.CuratorSide "$SERVERS")
    LOCK=("$BIN" lock --servers "$SERVERS" --session-timeout "${SESSION_MS}ms")
    ELECT=("$BIN" elect --servers "$SERVERS" --session-timeout "${SESSION_MS}ms")
    DBNAME="locks_$T"
    psql_do postgres "CREATE DATABASE $DBNAME" >/dev/null
    DB="host=127.0.0.1 port=$PGPORT user=postgres dbname=$DBNAME"
    for c in "${CHECKS[@]}"; do
        check "${c//_/-}" "t_$c"
    done
    if [[ "$T" == zookeeper ]]; then
        bash "$ROOT/scripts/zookeeper.sh" stop "$COMPAT_WORK/zk" >/dev/null 2>&1 || true
    else
        stop_paddock paddock
    fi
    echo "$passed $failed" >"$COMPAT_WORK/$T.counts"
}

echo "locks: running against ${TARGETS[*]} side by side; each one's lines follow when all are done"
TPIDS=()
for T in "${TARGETS[@]}"; do
    run_target "$T" >"$COMPAT_WORK/$T.out" 2>&1 &
    TPIDS+=($!)
done
for pid in "${TPIDS[@]}"; do wait "$pid" || true; done
passed=0 failed=0
for T in "${TARGETS[@]}"; do
    cat "$COMPAT_WORK/$T.out"
    if read -r p f <"$COMPAT_WORK/$T.counts" 2>/dev/null; then
        passed=$((passed + p)); failed=$((failed + f))
    else
        echo "FAIL $T: the run stopped before its end"
        failed=$((failed + 1))
    fi
done

echo "locks: took $((SECONDS - SUITE_START)) s"
report "$passed" "$failed" 0
((failed == 0 && passed > 0))
