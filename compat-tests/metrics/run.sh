#!/usr/bin/env bash
# Side by side: paddock's Prometheus /metrics and AdminServer against Apache ZooKeeper 3.9.5 started with
# PrometheusMetricsProvider and its Jetty AdminServer (the extra jars: ./pom.xml, fetched through mvn).
# Both get the same client activity (zkCli: an ephemeral node and a data watch), then:
#   - every metric in provided.txt must have that TYPE on both servers (a summary: the same quantile
#     labels, and _count and _sum);
#   - every sample in moves.txt must have grown by at least that much on both servers;
#   - every command in commands.txt must give the same JSON shape (field names and JSON types);
#   - an unknown command must give the same JSON on both;
#   - in an ensemble of two participants and an observer of each (same zoo.cfg lines), the leader's
#     `observers` must list the observer and a follower's none, with the same JSON shape.
# Prints ZooKeeper's metric families paddock does not serve (a skip line with the count; the list in
# $COMPAT_WORK/zk-only.txt with KEEP_WORK=1), see README "Metrics and the AdminServer".
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$HERE/../lib.sh"
compat_init metrics
compat_args "$@"
[[ "$TARGET" == paddock ]] || compat_fail "this suite compares paddock with ZooKeeper itself; --against-zookeeper does not apply"

BIN="$(compat_paddock_bin)"
ZK_CP="$(bash "$ROOT/scripts/zookeeper.sh" classpath)"
EXTRA="${ZK_CACHE_ROOT:-$HOME/.cache/paddock}/zookeeper-metrics-admin"
if [[ ! -f "$EXTRA/.complete" ]]; then
    mkdir -p "$EXTRA"
    rm -rf "$EXTRA/lib"
    mvn -q -B -f "$HERE/pom.xml" dependency:copy-dependencies -DoutputDirectory="$EXTRA/lib" \
        >"$EXTRA/mvn.log" 2>&1 || compat_fail "mvn could not fetch the metrics/admin jars (see $EXTRA/mvn.log)"
    touch "$EXTRA/.complete"
fi

write_cfg() { # dir clientPort adminPort metricsPort
    cat >"$1/zoo.cfg" <<CFG
tickTime=2000
clientPort=$2
clientPortAddress=127.0.0.1
dataDir=$1/data
4lw.commands.whitelist=*
maxClientCnxns=0
admin.enableServer=true
admin.serverAddress=127.0.0.1
admin.serverPort=$3
metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider
metricsProvider.httpHost=127.0.0.1
metricsProvider.httpPort=$4
metricsProvider.exportJvmInfo=true
CFG
    mkdir -p "$1/data"
}

ZK_DIR="$COMPAT_WORK/zk"; PD_DIR="$COMPAT_WORK/pd"
mkdir -p "$ZK_DIR" "$PD_DIR"
ZK_PORT=$(free_port); ZK_ADMIN=$(free_port); ZK_METRICS=$(free_port)
PD_PORT=$(free_port); PD_ADMIN=$(free_port); PD_METRICS=$(free_port)
write_cfg "$ZK_DIR" "$ZK_PORT" "$ZK_ADMIN" "$ZK_METRICS"
write_cfg "$PD_DIR" "$PD_PORT" "$PD_ADMIN" "$PD_METRICS"

ZK_PID=""
ZK_ENS_PIDS=()
cleanup() {
    set +e
    [[ -n "$ZK_PID" ]] && kill "$ZK_PID" 2>/dev/null && wait "$ZK_PID" 2>/dev/null
    for pid in "${ZK_ENS_PIDS[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
    compat_cleanup
}
trap cleanup EXIT
java -Xmx256m -Dzookeeper.log.dir="$ZK_DIR" -cp "$ZK_CP:$EXTRA/lib/*" \
    org.apache.zookeeper.server.ZooKeeperServerMain "$ZK_DIR/zoo.cfg" >"$ZK_DIR/zk.log" 2>&1 </dev/null &
ZK_PID=$!
start_paddock pd "$PD_PORT" "$PD_DIR" --config "$PD_DIR/zoo.cfg" || compat_fail "paddock did not start"
for _ in $(seq 1 200); do
    [[ "$(curl -s --max-time 10 "http://127.0.0.1:$ZK_ADMIN/commands/ruok" 2>/dev/null)" == *'"error" : null'* ]] && break
    kill -0 "$ZK_PID" 2>/dev/null || { tail -20 "$ZK_DIR/zk.log" >&2; compat_fail "ZooKeeper exited"; }
    sleep 0.3
done

curl -s --max-time 10 "http://127.0.0.1:$ZK_METRICS/metrics" >"$COMPAT_WORK/zk-metrics-before.txt"
curl -s --max-time 10 "http://127.0.0.1:$PD_METRICS/metrics" >"$COMPAT_WORK/pd-metrics-before.txt"
# The same activity on both: a session with an ephemeral node, five more znodes and a data watch, kept
# open while we look (moves.txt: what it must add to the metrics). zkCli reads the commands as they come;
# the sleep keeps its stdin open, so the session lasts 30 s however slowly a loaded machine starts the JVM.
activity() { # port
    (echo "create -e /e1 x"; for i in 1 2 3 4 5; do echo "create /w$i x"; done; echo "get -w /e1"; sleep 30) |
        timeout 40 bash "$ROOT/scripts/zookeeper.sh" cli -- -server "127.0.0.1:$1" >/dev/null 2>&1 &
}
activity "$ZK_PORT"; activity "$PD_PORT"
wait_watch() { # adminPort
    for _ in $(seq 1 150); do
        [[ "$(curl -s --max-time 10 "http://127.0.0.1:$1/commands/watch_summary")" =~ \"num_total_watches\"\ ?:\ 1 ]] && return 0
        sleep 0.2
    done
    return 1
}
wait_watch "$ZK_ADMIN" || compat_fail "zkCli's watch did not show on ZooKeeper"
wait_watch "$PD_ADMIN" || compat_fail "zkCli's watch did not show on paddock"

curl -s --max-time 10 "http://127.0.0.1:$ZK_METRICS/metrics" >"$COMPAT_WORK/zk-metrics.txt"
curl -s --max-time 10 "http://127.0.0.1:$PD_METRICS/metrics" >"$COMPAT_WORK/pd-metrics.txt"
while read -r cmd; do
    [[ -z "$cmd" || "$cmd" == \#* ]] && continue
    curl -s --max-time 10 "http://127.0.0.1:$ZK_ADMIN/commands/$cmd" >"$COMPAT_WORK/zk-$cmd.json"
    curl -s --max-time 10 "http://127.0.0.1:$PD_ADMIN/commands/$cmd" >"$COMPAT_WORK/pd-$cmd.json"
done < <(grep -v '^#' "$HERE/commands.txt"; echo no_such_command)
{ kill "$ZK_PID" && wait "$ZK_PID"; } 2>/dev/null || true
ZK_PID=""
stop_paddock pd

# The AdminServer's `observers` in an ensemble: two participants and an observer of each, from the same
# zoo.cfg lines; the leader's answer and a follower's (compare.py: same JSON shape, the observer listed).
ens_cfg() { # dir id servers clientPort adminPort
    mkdir -p "$1/data"
    echo "$2" >"$1/data/myid"
    printf 'tickTime=200\ninitLimit=20\nsyncLimit=10\ndataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\nadmin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=%s\n%s\n' \
        "$1/data" "$4" "$5" "$3" >"$1/zoo.cfg"
    [[ $2 == 3 ]] && echo "peerType=observer" >>"$1/zoo.cfg"
    return 0
}
ens_servers() {
    local s="" i
    for i in 1 2 3; do
        s+="server.$i=127.0.0.1:$(free_port):$(free_port)$([[ $i == 3 ]] && echo :observer)"$'\n'
    done
    printf '%s' "$s"
}
ens_leader() { # side adminPorts...: the admin port of the participant that says it leads
    local side=$1 port
    shift
    for _ in $(seq 1 300); do
        for port in "$@"; do
            [[ "$(curl -s --max-time 5 "http://127.0.0.1:$port/commands/leader")" =~ \"is_leader\"\ ?:\ true ]] && { echo "$port"; return 0; }
        done
        sleep 0.2
    done
    echo "$COMPAT_SUITE: no $side ensemble leader" >&2
    return 1
}
ens_observers() { # prefix leaderAdmin followerAdmin: waits for the observer on the leader, saves both answers
    for _ in $(seq 1 300); do
        curl -s --max-time 5 "http://127.0.0.1:$2/commands/observers" >"$COMPAT_WORK/$1-ens-observers-leader.json"
        [[ "$(cat "$COMPAT_WORK/$1-ens-observers-leader.json")" =~ \"synced_observers\"\ ?:\ 1 ]] && break
        sleep 0.2
    done
    curl -s --max-time 5 "http://127.0.0.1:$3/commands/observers" >"$COMPAT_WORK/$1-ens-observers-follower.json"
}
ZK_SERVERS="$(ens_servers)"; PD_SERVERS="$(ens_servers)"
ZK_ENS_ADMIN=(); PD_ENS_ADMIN=()
for i in 1 2 3; do
    ZK_ENS_ADMIN+=("$(free_port)"); PD_ENS_ADMIN+=("$(free_port)")
    ens_cfg "$COMPAT_WORK/zkens$i" "$i" "$ZK_SERVERS" "$(free_port)" "${ZK_ENS_ADMIN[i - 1]}"
    java -Xmx128m -Dzookeeper.log.dir="$COMPAT_WORK/zkens$i" -cp "$ZK_CP:$EXTRA/lib/*" \
        org.apache.zookeeper.server.quorum.QuorumPeerMain "$COMPAT_WORK/zkens$i/zoo.cfg" \
        >"$COMPAT_WORK/zkens$i/zk.log" 2>&1 </dev/null &
    ZK_ENS_PIDS+=($!)
    ens_cfg "$COMPAT_WORK/pdens$i" "$i" "$PD_SERVERS" "$(free_port)" "${PD_ENS_ADMIN[i - 1]}"
    "$BIN" serve --config "$COMPAT_WORK/pdens$i/zoo.cfg" >>"$COMPAT_WORK/pdens$i.log" 2>&1 </dev/null &
    PADDOCK_PIDS[pdens$i]=$!
done
ZK_LEAD="$(ens_leader ZooKeeper "${ZK_ENS_ADMIN[0]}" "${ZK_ENS_ADMIN[1]}")" || compat_fail "the ZooKeeper ensemble elected no leader"
PD_LEAD="$(ens_leader paddock "${PD_ENS_ADMIN[0]}" "${PD_ENS_ADMIN[1]}")" || compat_fail "the paddock ensemble elected no leader"
ZK_FOLLOW=${ZK_ENS_ADMIN[0]}; [[ $ZK_FOLLOW == "$ZK_LEAD" ]] && ZK_FOLLOW=${ZK_ENS_ADMIN[1]}
PD_FOLLOW=${PD_ENS_ADMIN[0]}; [[ $PD_FOLLOW == "$PD_LEAD" ]] && PD_FOLLOW=${PD_ENS_ADMIN[1]}
ens_observers zk "$ZK_LEAD" "$ZK_FOLLOW"
ens_observers pd "$PD_LEAD" "$PD_FOLLOW"

python3 "$HERE/compare.py" "$HERE/provided.txt" "$HERE/commands.txt" "$HERE/moves.txt" "$COMPAT_WORK" | tee "$COMPAT_WORK/compare.txt"
read -r _ passed _ failed < <(tail -1 "$COMPAT_WORK/compare.txt")

# What ZooKeeper serves and paddock does not (informational; README explains each group).
grep '^# TYPE' "$COMPAT_WORK/zk-metrics.txt" | awk '{print $3}' | sort >"$COMPAT_WORK/zk-names.txt"
grep '^# TYPE' "$COMPAT_WORK/pd-metrics.txt" | awk '{print $3}' | sort >"$COMPAT_WORK/pd-names.txt"
comm -23 "$COMPAT_WORK/zk-names.txt" "$COMPAT_WORK/pd-names.txt" >"$COMPAT_WORK/zk-only.txt"
report_skip 0 "informational: $(wc -l <"$COMPAT_WORK/zk-only.txt") ZooKeeper metric families have no paddock equivalent (README lists them)"
report "$passed" "$failed" 0
[[ $failed -eq 0 ]]
