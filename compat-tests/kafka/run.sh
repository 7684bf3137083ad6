#!/usr/bin/env bash
# Kafka 3.9 (ZooKeeper mode) compat suite: two brokers on a 3-member ensemble (scripts/ensemble.sh;
# zookeeper.connect lists all three members, chroot /kafka), a topic with replication factor 2, produce and
# consume, kill -9 of the ensemble member the controller broker's session is on while a producer writes (the
# sessions must move to the other members, every acked message must be consumed, the controller must stay),
# that member's restart (it must rejoin as a follower at the leader's zxid), kill -9 of the controller's
# broker (its /brokers/ids entry must stay until the session expires, then the other broker becomes
# controller and the data stays readable), a restart, and a graceful stop (SIGTERM: the entry must go at
# once). The checks live in the Java program src/main/java/dev/paddock/compat/kafka/KafkaFailover.java;
# this script provides the ensemble and the brokers.
#
#   compat-tests/kafka/run.sh                        against paddock (PADDOCK_BIN, or a debug build)
#   compat-tests/kafka/run.sh --against-zookeeper    against a 3-member Apache ZooKeeper 3.9 ensemble
#                                                    (ensemble.sh --zookeeper, scripts/zookeeper.sh's jars):
#                                                    every check must pass there, which proves the check
#   compat-tests/kafka/run.sh --secure mtls|kerberos [--against-zookeeper]
#         the same scenario secured (README.md, "Secured runs"), with zookeeper.set.acl=true. mtls: quorum
#         TLS, the brokers on the members' secure client ports with a client certificate (Netty client
#         socket). kerberos: a KDC of compat-tests/kerberos/kdc.sh, the members' JAAS Server section, the
#         brokers' Client section (Krb5LoginModule, key table). One more check: the ACLs of Kafka's znodes
#         name the brokers' identity, and an unauthenticated client gets NoAuth
#
# Brokers: kafka_2.13 3.9.2 from Maven Central (the newest 3.9.x; 4.0 dropped ZooKeeper mode), each a JVM
# with a 384 MB heap started by broker.sh, which records its PID in the work dir; the EXIT trap kills every
# recorded broker, including one the checker restarted. zookeeper.session.timeout.ms=10000 (tickTime 2000
# on both servers), so a kill -9 shows as a removal 6.7-12 s later and a SIGTERM as one within a second or two.
# Maven runs offline once ~/.m2 holds the dependencies (the first run resolves them online).
# KEEP_WORK=1 keeps the work dir (broker logs, server log, checker output).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$HERE/../lib.sh"
compat_init kafka

# --secure MODE is this suite's own option; the rest goes to lib.sh's compat_args.
SECURE=""
ARGS=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --secure)
            SECURE="${2:-}"
            [[ "$SECURE" == mtls || "$SECURE" == kerberos ]] ||
                { echo "$0: --secure takes mtls or kerberos, got '$SECURE'" >&2; exit 2; }
            shift
            ;;
        *) ARGS+=("$1") ;;
    esac
    shift
done
compat_args "${ARGS[@]+"${ARGS[@]}"}"
[[ -z "$SECURE" ]] || COMPAT_SUITE="kafka-$SECURE${COMPAT_SUITE#kafka}"
SESSION_MS=10000
CHROOT=/kafka
export KAFKA_WORK="$COMPAT_WORK"
ENSEMBLE_DIR="$COMPAT_WORK/ensemble"

# Brokers first (kill -9: their state is throw-away, and they must not outlive the servers they talk to),
# then the ensemble (ensemble.sh stop: every member, including one the checker restarted), then lib.sh's
# cleanup (work dir). A PID is only killed if it still runs kafka.Kafka.
CHECKER_PID=""
kafka_cleanup() {
    local rc=$? f pid
    # timeout passes the TERM on to the checker JVM.
    if [[ -n "$CHECKER_PID" ]]; then kill "$CHECKER_PID" 2>/dev/null || true; fi
    for f in "$KAFKA_WORK"/*.pid; do
        [[ -f "$f" ]] || continue
        pid=$(<"$f")
        if grep -qa kafka.Kafka "/proc/$pid/cmdline" 2>/dev/null; then
            kill -9 "$pid" 2>/dev/null || true
            for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        fi
    done
    if [[ -f "$ENSEMBLE_DIR/ensemble.env" ]]; then
        bash "$ROOT/scripts/ensemble.sh" stop --dir "$ENSEMBLE_DIR" >/dev/null 2>&1 || true
    fi
    if [[ -f "$COMPAT_WORK/kdc/krb5.conf" ]]; then
        bash "$ROOT/compat-tests/kerberos/kdc.sh" stop "$COMPAT_WORK/kdc" >/dev/null 2>&1 || true
    fi
    if ((rc != 0)) && [[ -z "${KEEP_WORK:-}" ]]; then
        echo "kafka: run with KEEP_WORK=1 to keep the broker and server logs" >&2
    fi
    set +e # else (exit rc) would end the trap before compat_cleanup
    (exit "$rc")
    compat_cleanup
}
trap kafka_cleanup EXIT

PHASE_START=$SECONDS
phase() { # name: prints how long the phase that just ended took
    echo "kafka: phase $1: $((SECONDS - PHASE_START)) s"
    PHASE_START=$SECONDS
}

command -v mvn >/dev/null || compat_fail "mvn not found (apt-get install maven)"
command -v java >/dev/null || compat_fail "java not found (apt-get install openjdk-17-jdk-headless)"

build() {
    (cd "$HERE" && mvn -q -B -Dstyle.color=never "$@" compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt)
}
if ! build -o >/dev/null 2>&1; then
    echo "kafka: resolving Maven dependencies online (first run)" >&2
    (cd "$HERE" && mvn -q -B -Dstyle.color=never dependency:go-offline) >&2 || compat_fail "mvn could not resolve the dependencies"
    build >&2 || compat_fail "mvn could not build the checker"
fi
cp "$HERE/target/classpath.txt" "$KAFKA_WORK/classpath.txt"
phase build

# --secure kerberos: a realm of its own (compat-tests/kerberos/kdc.sh), before the members start. The members
# log in as zookeeper/localhost (the JAAS Server section, as the kerberos suite's), the brokers and the checker
# as kafka/localhost (a Client section); kerberos.removeHostFromPrincipal=true, as Kafka's documentation
# advises for brokers on several hosts, makes their id sasl:kafka@REALM. The brokers connect to
# localhost:port, so the ZooKeeper client asks for a ticket to zookeeper/localhost.
if [[ "$SECURE" == kerberos ]]; then
    REALM=PADDOCK.TEST
    KDC="$COMPAT_WORK/kdc"
    bash "$ROOT/compat-tests/kerberos/kdc.sh" install || compat_fail "cannot install the KDC packages"
    bash "$ROOT/compat-tests/kerberos/kdc.sh" start "$KDC" "$REALM" "$(free_port)" || compat_fail "the KDC did not start"
    export KRB5_CONFIG="$KDC/krb5.conf" KRB5CCNAME="FILE:$KDC/ccache"
    bash "$ROOT/compat-tests/kerberos/kdc.sh" keytab "$KDC" "$KDC/server.keytab" zookeeper/localhost zookeeper/127.0.0.1 &&
        bash "$ROOT/compat-tests/kerberos/kdc.sh" keytab "$KDC" "$KDC/kafka.keytab" kafka/localhost ||
        compat_fail "kadmin.local failed"
    jaas() { # file section keytab principal
        printf '%s {\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n  keyTab="%s"\n  storeKey=true\n  useTicketCache=false\n  principal="%s";\n};\n' \
            "$2" "$3" "$4" >"$1"
    }
    jaas "$KDC/server-jaas.conf" Server "$KDC/server.keytab" "zookeeper/localhost@$REALM"
    jaas "$KDC/kafka-jaas.conf" Client "$KDC/kafka.keytab" "kafka/localhost@$REALM"
    export ENSEMBLE_EXTRA_CFG="authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
kerberos.removeHostFromPrincipal=true"
    export ENSEMBLE_SYSPROPS="java.security.auth.login.config=$KDC/server-jaas.conf java.security.krb5.conf=$KDC/krb5.conf"
    export BROKER_JVM_FLAGS="-Djava.security.auth.login.config=$KDC/kafka-jaas.conf -Djava.security.krb5.conf=$KDC/krb5.conf -Dzookeeper.sasl.client=true"
fi

# Three members from ordinary zoo.cfg files (server.1..3, myid; tickTime 2000), started by ensemble.sh, which
# the checker runs again to restart the member it kills (it starts only the members that are down).
ENSEMBLE_ARGS=(3 --dir "$ENSEMBLE_DIR")
[[ "$SECURE" == mtls ]] && ENSEMBLE_ARGS+=(--tls --client-tls)
if [[ "$TARGET" == zookeeper ]]; then
    ENSEMBLE_ARGS+=(--zookeeper)
else
    PADDOCK_BIN="$(compat_paddock_bin)" || compat_fail "could not build paddock"
    export PADDOCK_BIN
fi
ZK_CONNECT="$(bash "$ROOT/scripts/ensemble.sh" start "${ENSEMBLE_ARGS[@]}" 2>"$COMPAT_WORK/ensemble-start.log")" ||
    { tail -n 20 "$COMPAT_WORK/ensemble-start.log" >&2; compat_fail "the $TARGET ensemble did not start"; }
# shellcheck source=/dev/null
MEMBER_PORTS="$(source "$ENSEMBLE_DIR/ensemble.env" && tr ' ' , <<<"$CLIENT_PORTS")"
phase "start 3-member $TARGET ensemble${SECURE:+ ($SECURE)}"

# Secured runs: what the brokers add to server.properties, what the checker JVM gets, and the identity
# Kafka's ACLs must name.
BROKER_ZK="$ZK_CONNECT"
SECURE_PROPS=""
CHECKER_SECURE=()
if [[ "$SECURE" == mtls ]]; then
    # The ZooKeeper 3.8.4 client inside Kafka 3.9 asks for TLSv1.2 unless told otherwise, and the client
    # port of ZooKeeper 3.9.5 (Netty) enables exactly ssl.protocol, TLSv1.3 by default, as paddock's does:
    # both servers answer Kafka's default with a protocol_version alert (measured), so the brokers and the
    # checker ask for TLSv1.3 (zookeeper.ssl.protocol).
    # Both brokers present ensemble.sh's client certificate (one identity: with zookeeper.set.acl=true each
    # broker must be able to change the znodes the other created), as PKCS12; the CA as a PEM trust store.
    TLS_DIR="$ENSEMBLE_DIR/tls"
    BROKER_ZK="$(bash "$ROOT/scripts/ensemble.sh" connect --dir "$ENSEMBLE_DIR" --secure)"
    SUBJECT="$(openssl x509 -in "$TLS_DIR/client.crt" -noout -subject -nameopt RFC2253 | sed 's/^subject= *//')"
    SECURE_PROPS="zookeeper.ssl.client.enable=true
zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty
zookeeper.ssl.keystore.location=$TLS_DIR/client.p12
zookeeper.ssl.keystore.type=PKCS12
zookeeper.ssl.keystore.password=$(<"$TLS_DIR/password")
zookeeper.ssl.truststore.location=$TLS_DIR/ca.crt
zookeeper.ssl.truststore.type=PEM
zookeeper.ssl.protocol=TLSv1.3
zookeeper.set.acl=true"
    # shellcheck source=/dev/null
    CHECKER_SECURE=(-Dzookeeper.client.secure=true -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty
        -Dzookeeper.ssl.keyStore.location="$TLS_DIR/client.p12" -Dzookeeper.ssl.keyStore.type=PKCS12
        -Dzookeeper.ssl.keyStore.password="$(<"$TLS_DIR/password")"
        -Dzookeeper.ssl.trustStore.location="$TLS_DIR/ca.crt" -Dzookeeper.ssl.trustStore.type=PEM
        -Dzookeeper.ssl.protocol=TLSv1.3
        -Dsecure.members="$(source "$ENSEMBLE_DIR/ensemble.env" && tr ' ' , <<<"$SECURE_PORTS")"
        -Didentity="x509:$SUBJECT" -Dzk.plain="$ZK_CONNECT")
elif [[ "$SECURE" == kerberos ]]; then
    BROKER_ZK="${ZK_CONNECT//127.0.0.1/localhost}"
    SECURE_PROPS="zookeeper.set.acl=true"
    # shellcheck disable=SC2206
    CHECKER_SECURE=($BROKER_JVM_FLAGS -Didentity="sasl:kafka@$REALM" -Dzk.plain="$ZK_CONNECT")
fi

declare -A LISTENER
# dup-0 is a third broker configured with broker.id=0: the checker starts it while broker 0 is registered,
# and its registration multi must fail with NODEEXISTS (Kafka then refuses to start).
write_properties() { # name broker-id
    local name=$1 id=$2
    LISTENER[$name]="127.0.0.1:$(free_port)"
    mkdir -p "$KAFKA_WORK/$name"
    cat >"$KAFKA_WORK/$name/server.properties" <<PROPS
broker.id=$id
listeners=PLAINTEXT://${LISTENER[$name]}
log.dirs=$KAFKA_WORK/$name/data
zookeeper.connect=$BROKER_ZK$CHROOT
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
$SECURE_PROPS
PROPS
}
write_properties broker-0 0
write_properties broker-1 1
write_properties dup-0 0
bash "$HERE/broker.sh" broker-0
bash "$HERE/broker.sh" broker-1

# The checker waits for the registrations itself (its first check); the scenario's own time is printed
# per check. timeout bounds a hung client. It runs in the background so that a signal to this script
# runs the EXIT trap at once, which stops the checker too.
timeout 600 java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Dlog4j.configuration="file:$HERE/checker-log4j.properties" \
    "${CHECKER_SECURE[@]+"${CHECKER_SECURE[@]}"}" -Dzk="$BROKER_ZK" -Dchroot="$CHROOT" -Dwork="$KAFKA_WORK" -Dbroker.script="$HERE/broker.sh" \
    -Dlistener.0="${LISTENER[broker-0]}" -Dlistener.1="${LISTENER[broker-1]}" \
    -Dsession.timeout.ms="$SESSION_MS" -Dmembers="$MEMBER_PORTS" -Densemble.dir="$ENSEMBLE_DIR" \
    -Densemble.script="$ROOT/scripts/ensemble.sh" -Densemble.kind="$TARGET" \
    -cp "$HERE/target/classes:$(cat "$KAFKA_WORK/classpath.txt")" dev.paddock.compat.kafka.KafkaFailover \
    >"$KAFKA_WORK/checker.out" 2>"$KAFKA_WORK/checker.err" </dev/null &
CHECKER_PID=$!
touch "$KAFKA_WORK/checker.out"
tail -n +1 -f --pid="$CHECKER_PID" "$KAFKA_WORK/checker.out" &
TAIL_PID=$!
rc=0
wait "$CHECKER_PID" || rc=$?
CHECKER_PID=""
wait "$TAIL_PID" || true
phase "brokers and checks"

# Kafka retries or shrugs off many ZooKeeper errors, so the brokers' own logs are checked too: against
# Apache ZooKeeper this scenario logs no KeeperException and no expiry, and a lost connection only in the
# logs of the brokers whose session was on the killed member, or of both when that member was the leader
# (the followers then drop their clients until a new leader is elected); the checker writes their ids to
# member-kill.txt. They must reconnect without their session expiring (dup-0's log is not searched: its
# NODEEXISTS is the point of its check).
SESSION_TROUBLE='KeeperException|SessionExpired|[Ss]ession expired|[Ee]xpired session|ZooKeeperClient(Expired|Timeout|AuthFailed)Exception|AuthFailed'
CONNECTION_TROUBLE='ConnectionLoss|Unable to read additional data|EndOfStreamException|Client session timed out|Disconnected|Attempting reconnect except it is a SessionExpiredException'
# Lines about session 0x0 are a connect attempt that gave up before any session existed (the client then
# tries the next member): at a broker's start under heavy load a cold JVM's first TLS handshake has been
# seen to outlast the connect timeout (session timeout / members, 3.3 s). They say nothing about a session
# riding out the kill, and a broker that never connects fails the registration check.
NO_SESSION_YET='session id 0x0([^0-9a-f]|$)|sessionid 0x0([^0-9a-f]|$)|Session 0x0 for server'
on_killed=" $(cat "$KAFKA_WORK/member-kill.txt" 2>/dev/null || true) "
for log in "$KAFKA_WORK"/broker-*.log; do
    id=${log##*/broker-}
    id=${id%.log}
    # A KeeperException line about ConnectionLoss, and ClientCnxn's "Closing socket connection. Attempting
    # reconnect except it is a SessionExpiredException", which it logs at every lost connection, are
    # connection-loss lines.
    if trouble=$(grep -E "$SESSION_TROUBLE" "$log" | grep -v -e ConnectionLoss -e 'Attempting reconnect except it is a SessionExpiredException'); then
        echo "FAIL broker logs free of ZooKeeper errors: broker-$id.log has $(wc -l <<<"$trouble") session error lines, first ones:"
        head -n 10 <<<"$trouble" | cut -c1-400
    elif [[ "$on_killed" != *" $id "* ]] && trouble=$(grep -E "$CONNECTION_TROUBLE" "$log" | grep -v -E "$NO_SESSION_YET"); then
        echo "FAIL broker logs free of ZooKeeper errors: broker-$id.log (not disconnected by the member's kill) has $(wc -l <<<"$trouble") connection-loss lines, first ones:"
        head -n 10 <<<"$trouble" | cut -c1-400
    fi
done | tee -a "$KAFKA_WORK/checker.out"
if ! grep -q '^FAIL broker logs' "$KAFKA_WORK/checker.out"; then
    echo "ok broker logs free of ZooKeeper errors (connection loss only where the member's kill allows it: broker(s)${on_killed% })" |
        tee -a "$KAFKA_WORK/checker.out"
fi

passed=$(grep -c '^ok ' "$KAFKA_WORK/checker.out" || true)
failed=$(grep -c '^FAIL ' "$KAFKA_WORK/checker.out" || true)
if ((rc != 0 && failed == 0)); then
    echo "FAIL checker: exited with status $rc before reporting a failed check"
    failed=$((failed + 1))
fi
if ((failed > 0)); then
    echo "kafka: checker stderr (last 30 lines):" >&2
    tail -n 30 "$KAFKA_WORK/checker.err" >&2 || true
    for n in broker-0 broker-1 dup-0; do
        [[ -f "$KAFKA_WORK/$n.log" ]] || continue
        echo "kafka: $n log, ERROR and ZooKeeper lines (last 15):" >&2
        grep -E '^\[.*( ERROR |KeeperException|ZooKeeperClient)' "$KAFKA_WORK/$n.log" | tail -n 15 >&2 || true
    done
    for log in "$ENSEMBLE_DIR"/m*/server.log; do
        echo "kafka: $TARGET ${log#"$ENSEMBLE_DIR"/} (last 10 lines):" >&2
        tail -n 10 "$log" | sed 's/\x1b\[[0-9;]*m//g' >&2 || true
    done
fi
echo "kafka: total $SECONDS s against $TARGET"
report "$passed" "$failed" 0
((failed == 0 && passed > 0))
