#!/usr/bin/env bash
# The live cut-over from a running ZooKeeper 3.9.5 ensemble to a paddock ensemble on the same client
# and peer addresses, sessions kept (issue 40; the procedure is docs/operations.md, "Cutting over from
# ZooKeeper"). A 3-member ZooKeeper ensemble (scripts/ensemble.sh --zookeeper) serves:
#   - two Kafka 3.9.2 brokers (ZooKeeper mode, chroot /kafka): ids registered, one the controller, a
#     producer (acks=all) sending every 50 ms to a topic with 2 replicas;
#   - a Curator 5.9 InterProcessMutex held by a Java process (cutover-java/, which also runs that producer);
#   - a kazoo client holding an ephemeral, a data watch and a child watch, and a kazoo writer setting a
#     node every 20 ms (cutover_client.py).
# Every client's session timeout is 30 s (SESSION_MS). Then the procedure: SIGTERM to every ZooKeeper
# member at once; `paddock import --dry-run` on each member's dataDir to find the highest zxid;
# `paddock import --config` of that member, `import --join` of the others; the three paddock members
# start on the same addresses. Then, each an "ok"/"FAIL" line:
#   - Kafka: /kafka/brokers/ids/N and /kafka/controller keep their czxid and ephemeralOwner, and
#     /kafka/controller_epoch its version (no new registration, no controller election); each broker's log
#     shows its own session re-established on paddock and no "Creating /brokers/ids", no expiry, after
#     the cut-over; every acknowledged message is consumed;
#   - Curator: the same session (never LOST), the same lock node, still held; a second contender does not
#     get the lock in 3 s, and gets it when the holder releases it;
#   - watches: a plain ZooKeeper Java client's data and child watches, set once before the cut-over, are
#     listed by paddock's wchc (its SetWatches) and fire for changes made after it;
#   - kazoo: both sessions kept, the ephemeral unchanged, its DataWatch and ChildrenWatch see the changes
#     made after the cut-over (kazoo 2.11 sends no SetWatches: its recipes read again on reconnect);
#   - the write-unavailable window (the writer's first failed or held write to its first success after
#     it) printed, with the stop, import and start times; it must be below the session timeout.
# About 2-3 minutes, 8 JVMs at the peak (3 ZooKeeper members, 2 brokers, the Java clients). Runs alone or
# from migration/run.sh (which adds its counts to its row). KEEP_WORK=1 keeps the logs.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$HERE/../lib.sh"
# shellcheck source=cutover_steps.sh
source "$HERE/cutover_steps.sh"
compat_init migration-cutover
compat_args "$@"
[[ "$TARGET" == paddock ]] || compat_fail "a cut-over to paddock: --against-zookeeper does not apply"

PY="$ROOT/.venv/bin/python"
[[ -x "$PY" ]] || compat_fail "no $PY: run scripts/install-deps.sh"
command -v mvn >/dev/null || compat_fail "mvn not found (scripts/install-deps.sh installs maven)"
command -v java >/dev/null || compat_fail "java not found (scripts/install-deps.sh installs it)"
BIN="$(compat_paddock_bin)" || compat_fail "could not build paddock"
W="$COMPAT_WORK"
SESSION_MS=30000
PASSED=0
FAILED=0
ok() { PASSED=$((PASSED + 1)); echo "cutover: ok   $1"; }
bad() { FAILED=$((FAILED + 1)); echo "cutover: FAIL $1${2:+: $2}"; }
secs() { cut_secs "$@"; }

export KAFKA_WORK="$W/kafka"
mkdir -p "$KAFKA_WORK"
JAVA_PID=""
PY_PID=""
cutover_cleanup() {
    local rc=$? f pid
    for pid in "$JAVA_PID" "$PY_PID"; do [[ -n "$pid" ]] && kill "$pid" 2>/dev/null; done
    for f in "$KAFKA_WORK"/*.pid; do
        [[ -f "$f" ]] || continue
        pid=$(<"$f")
        if grep -qa kafka.Kafka "/proc/$pid/cmdline" 2>/dev/null; then kill -9 "$pid" 2>/dev/null; fi
    done
    [[ -f "$W/zk/ensemble.env" ]] && bash "$ROOT/scripts/ensemble.sh" stop --dir "$W/zk" >/dev/null 2>&1
    set +e
    (exit "$rc")
    compat_cleanup
}
trap cutover_cleanup EXIT

# --- the Java clients and the brokers' classpath ---------------------------------------------
mvn_build() { # dir [mvn args]
    local d=$1
    shift
    (cd "$d" && mvn -q -B -Dstyle.color=never "$@" compile dependency:build-classpath \
        -Dmdep.outputFile=target/classpath.txt)
}
for d in "$HERE/cutover-java" "$ROOT/compat-tests/kafka"; do
    if ! mvn_build "$d" -o >"$W/mvn.log" 2>&1; then
        echo "cutover: resolving Maven dependencies online for ${d#"$ROOT"/} (first run)" >&2
        mvn_build "$d" >>"$W/mvn.log" 2>&1 || compat_fail "mvn could not build ${d#"$ROOT"/} (see $W/mvn.log)"
    fi
done
cp "$ROOT/compat-tests/kafka/target/classpath.txt" "$KAFKA_WORK/classpath.txt"

# --- ZooKeeper, Kafka, Curator, kazoo ---------------------------------------------------------
ZK_CONNECT="$(bash "$ROOT/scripts/ensemble.sh" start 3 --zookeeper --dir "$W/zk" 2>"$W/zk-start.log")" ||
    { tail -n 20 "$W/zk-start.log" >&2; compat_fail "the ZooKeeper ensemble did not start"; }
echo "cutover: ZooKeeper 3.9.5 ensemble serving on $ZK_CONNECT"

BOOTSTRAP=""
for id in 0 1; do
    listener="127.0.0.1:$(free_port)"
    BOOTSTRAP+="${BOOTSTRAP:+,}$listener"
    mkdir -p "$KAFKA_WORK/broker-$id"
    cat >"$KAFKA_WORK/broker-$id/server.properties" <<PROPS
broker.id=$id
listeners=PLAINTEXT://$listener
log.dirs=$KAFKA_WORK/broker-$id/data
zookeeper.connect=$ZK_CONNECT/kafka
zookeeper.session.timeout.ms=$SESSION_MS
zookeeper.connection.timeout.ms=30000
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
background.threads=2
log.cleaner.enable=false
PROPS
    bash "$ROOT/compat-tests/kafka/broker.sh" "broker-$id"
done

"$PY" - "$ZK_CONNECT" <<'PY' || compat_fail "the brokers did not register within 120 s (logs in $KAFKA_WORK)"
import sys, time
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=30)
deadline = time.time() + 120
while time.time() < deadline:
    ids = zk.exists("/kafka/brokers/ids") and zk.get_children("/kafka/brokers/ids")
    if ids and sorted(ids) == ["0", "1"] and zk.exists("/kafka/controller"):
        break
    time.sleep(0.5)
else:
    sys.exit(1)
zk.stop(); zk.close()
PY

java -Xmx192m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -Dzk="$ZK_CONNECT" -Dbootstrap="$BOOTSTRAP" -Dwork="$W" -Dsession.ms="$SESSION_MS" \
    -cp "$HERE/cutover-java/target/classes:$(cat "$HERE/cutover-java/target/classpath.txt")" \
    dev.paddock.compat.cutover.CutoverClients >"$W/java.out" 2>"$W/java.err" </dev/null &
JAVA_PID=$!
"$PY" "$HERE/cutover_client.py" client "$ZK_CONNECT" "$W" --session-timeout $((SESSION_MS / 1000)) \
    >"$W/py.out" 2>"$W/py.err" </dev/null &
PY_PID=$!
deadline=$((SECONDS + 180))
until [[ -f "$W/java.ready" && -f "$W/py.ready" ]]; do
    if ! kill -0 "$JAVA_PID" 2>/dev/null || ! kill -0 "$PY_PID" 2>/dev/null || ((SECONDS >= deadline)); then
        tail -n 20 "$W/java.out" "$W/java.err" "$W/py.err" >&2 || true
        compat_fail "the clients did not start (logs in $W)"
    fi
    sleep 0.2
done
sed 's/^/  /' "$W/java.before"
sleep 2 # writes, produces and holds going

PATHS=(/kafka/brokers/ids/* /kafka/controller /kafka/controller_epoch /cutover/lock/* /cutover/kazoo-eph)
"$PY" "$HERE/cutover_client.py" stats "$ZK_CONNECT" "$W/before.json" "${PATHS[@]}"
declare -A LOG_AT
for id in 0 1; do LOG_AT[$id]=$(stat -c %s "$KAFKA_WORK/broker-$id.log"); done

# --- the cut-over (docs/operations.md, "Cutting over from ZooKeeper"; cutover_steps.sh) ------------
if ! cut_over "$W/zk" "$W/pd" "$BIN"; then
    for k in "${!CUT_PIDS[@]}"; do PADDOCK_PIDS[pd$k]=${CUT_PIDS[$k]}; done
    compat_fail "$CUT_ERROR"
fi
for k in "${!CUT_PIDS[@]}"; do PADDOCK_PIDS[pd$k]=${CUT_PIDS[$k]}; done
PORTS=$CUT_PORTS
T0=$CUT_T0 T3=$CUT_T3
echo "cutover: $(cut_summary "$W/pd")"

# The clients reconnect on their own (the Java client tries the next address after up to 1 s).
deadline=$((SECONDS + 60))
until [[ "$(grep -c 'Session establishment complete' <(tail -c +"$((LOG_AT[0] + 1))" "$KAFKA_WORK/broker-0.log"))" -gt 0 &&
    "$(grep -c 'Session establishment complete' <(tail -c +"$((LOG_AT[1] + 1))" "$KAFKA_WORK/broker-1.log"))" -gt 0 ]]; do
    ((SECONDS < deadline)) || break
    sleep 0.2
done
sleep 2
"$PY" "$HERE/cutover_client.py" stats "$ZK_CONNECT" "$W/after.json" "${PATHS[@]}"

# --- Kafka's znodes ---------------------------------------------------------------------------
if out=$("$PY" - "$W/before.json" "$W/after.json" <<'PY'
import json, sys
before, after = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
kafka = [p for p in before if p.startswith("/kafka/")]
assert sorted(p for p in after if p.startswith("/kafka/")) == sorted(kafka), (sorted(before), sorted(after))
assert len([p for p in kafka if p.startswith("/kafka/brokers/ids/")]) == 2, kafka
for p in kafka:
    b, a = before[p], after[p]
    assert (a["czxid"], a["ephemeralOwner"], a["version"], a["data"]) == \
        (b["czxid"], b["ephemeralOwner"], b["version"], b["data"]), (p, b, a)
ids = " ".join(f"{p.rsplit('/', 1)[1]}: {before[p]['ephemeralOwner']:#x}" for p in kafka if "/ids/" in p)
print(f"brokers' sessions {ids}; controller {json.loads(before['/kafka/controller']['data'])['brokerid']}, "
      f"epoch {before['/kafka/controller_epoch']['data']}")
PY
); then
    ok "kafka znodes unchanged: /brokers/ids/N and /controller keep czxid and owner, /controller_epoch its version ($out)"
else
    bad "kafka znodes" "$out"
fi

# --- the brokers' logs after the cut-over --------------------------------------------------------
for id in 0 1; do
    owner=$("$PY" -c "import json,sys; print(format(json.load(open(sys.argv[1]))['/kafka/brokers/ids/$id']['ephemeralOwner'], 'x'))" "$W/before.json")
    tail -c +"$((LOG_AT[$id] + 1))" "$KAFKA_WORK/broker-$id.log" >"$W/broker-$id.after.log"
    est=$(grep 'Session establishment complete' "$W/broker-$id.after.log" || true)
    # ClientCnxn logs "Attempting reconnect except it is a SessionExpiredException" at every lost
    # connection: not an expiry.
    trouble=$(grep -E 'Creating /brokers/ids|Registered broker|SessionExpired|[Ss]ession expired|[Ee]xpired session|ZooKeeperClientExpiredException|Creating /controller' \
        "$W/broker-$id.after.log" | grep -v 'Attempting reconnect except it is a SessionExpiredException' || true)
    if [[ "$est" == *"session id = 0x$owner,"* && -z "$trouble" ]]; then
        ok "broker $id resumed session 0x$owner on paddock; no re-registration, no expiry, no controller election in its log"
    else
        bad "broker $id log after the cut-over" "established: ${est:-none} (want 0x$owner); $(head -3 <<<"$trouble")"
    fi
done

# --- the Java client's SetWatches: paddock holds its watch before it asked anything of paddock -----
# (wchc lists data watches, as ZooKeeper's does; the child watch is proven by its firing, below.)
# awk compares the ids as strings: as numbers, 0x3000207bae70003 and 0x3000207bae70000 are equal.
watcher=$(sed -n 's/^watcher=//p' "$W/java.before")
deadline=$((SECONDS + 30))
while true; do
    held=""
    for p in $PORTS; do
        held+="$(timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$p && printf wchc >&3 && cat <&3" 2>/dev/null |
            awk -v s="$watcher" '/^0x/ {on = ($1 "" == s ""); next} on {print $1}')"$'\n'
    done
    [[ "$held" == *"/cutover/jwatched"* ]] && break
    ((SECONDS < deadline)) || break
    sleep 0.5
done
if [[ "$(grep -v '^$' <<<"$held" | sort -u | tr '\n' ' ')" == "/cutover/jwatched " ]]; then
    ok "paddock's wchc lists the Java client $watcher's data watch on /cutover/jwatched, and only it (its SetWatches)"
else
    bad "wchc: session $watcher's watches" "got: $(tr '\n' ' ' <<<"$held")"
fi

# --- Curator, kazoo, the producer -----------------------------------------------------------------
touch "$W/java.check"
echo "$T0" >"$W/py.check.tmp" && mv "$W/py.check.tmp" "$W/py.check"
for who in JAVA PY; do
    pid_var="${who}_PID"
    deadline=$((SECONDS + 120))
    while kill -0 "${!pid_var}" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    if kill -0 "${!pid_var}" 2>/dev/null; then
        kill "${!pid_var}" 2>/dev/null || true
        bad "$who clients" "no answer within 120 s"
    fi
    wait "${!pid_var}" 2>/dev/null || true
    printf -v "$pid_var" '%s' ""
done
while IFS= read -r line; do
    case "$line" in
        ok\ *) ok "${line#ok }" ;;
        FAIL\ *) bad "${line#FAIL }" ;;
    esac
done < <(cat "$W/java.out" "$W/py.out")
grep -q '^ok kafka' "$W/java.out" || bad "java clients" "$(tail -5 "$W/java.err")"
grep -q '^ok writer' "$W/py.out" || [[ -s "$W/py.out" ]] || bad "kazoo clients" "$(tail -5 "$W/py.err")"

if [[ -f "$W/window.txt" ]]; then
    read -r window w_start w_end <"$W/window.txt"
    echo "cutover: write-unavailable window $window s: the first failed write $(secs "$T0" "$w_start") s after the" \
        "SIGTERMs, the first success $(secs "$T3" "$w_end") s after paddock served (session timeout $((SESSION_MS / 1000)) s)"
    if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$window" "$((SESSION_MS / 1000))"; then
        ok "the window stayed below the clients' session timeout"
    else
        bad "the window ($window s) reached the session timeout ($((SESSION_MS / 1000)) s)"
    fi
fi

echo "cutover: total $SECONDS s"
report "$PASSED" "$FAILED" 0
[[ "$FAILED" == 0 ]]
