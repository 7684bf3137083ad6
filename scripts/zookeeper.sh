#!/usr/bin/env bash
# Apache ZooKeeper 3.9 as a reference server and client for paddock's tests and benchmarks.
#
#   scripts/zookeeper.sh fetch                   download the jars (once) into the cache
#   scripts/zookeeper.sh start <port> <datadir>  start a standalone server, wait until it serves, print its PID
#   scripts/zookeeper.sh stop <datadir>          stop the server started with that datadir
#   scripts/zookeeper.sh cli -- <zkCli args>     run zkCli (org.apache.zookeeper.ZooKeeperMain)
#   scripts/zookeeper.sh classpath               print the classpath (for other harnesses)
#   scripts/zookeeper.sh version                 print the ZooKeeper version in use
#
# Environment: ZK_VERSION (default 3.9.5, falling back to 3.9.4 then 3.9.3 when a version's jars do not
# resolve), ZK_CACHE (default $HOME/.cache/paddock/zookeeper-<version>), ZK_HEAP (default 256m),
# ZK_START_TIMEOUT seconds (default 60), ZK_JVMFLAGS (extra JVM flags for the server), ZK_EXTRA_CFG (lines
# appended to the server's zoo.cfg, e.g. secureClientPort and the ssl.* stores of bench/compare.sh --tls).
# The jars come from Maven Central through mvn, because Debian ships only 3.8.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
POM_DIR="$SCRIPT_DIR/zookeeper-pom"
CACHE_ROOT="${ZK_CACHE_ROOT:-$HOME/.cache/paddock}"
DEFAULT_VERSIONS=(3.9.5 3.9.4 3.9.3)

die() { echo "zookeeper.sh: error: $*" >&2; exit 1; }
log() { echo "zookeeper.sh: $*" >&2; }

cache_dir_for() { echo "${ZK_CACHE:-$CACHE_ROOT/zookeeper-$1}"; }

# A cache is complete when mvn finished (marker written last), so an interrupted download is redone.
have_version() { [[ -f "$(cache_dir_for "$1")/.complete" ]]; }

fetch_version() {
    local ver="$1" dir tmp
    dir="$(cache_dir_for "$ver")"
    have_version "$ver" && return 0
    command -v mvn >/dev/null || die "mvn not found (apt-get install maven)"
    command -v java >/dev/null || die "java not found (apt-get install openjdk-17-jre-headless)"
    log "fetching Apache ZooKeeper $ver jars into $dir/lib"
    mkdir -p "$dir"
    tmp="$(mktemp -d "$dir/lib.tmp.XXXXXX")"
    if ! mvn -q -B -f "$POM_DIR/pom.xml" -Dzk.version="$ver" dependency:copy-dependencies \
        -DoutputDirectory="$tmp" >"$dir/mvn.log" 2>&1; then
        rm -rf "$tmp"
        log "mvn could not resolve ZooKeeper $ver (see $dir/mvn.log)"
        return 1
    fi
    rm -rf "${dir:?}/lib"
    mv "$tmp" "$dir/lib"
    echo "$ver" >"$dir/.complete"
}

# Picks the version to use: ZK_VERSION if set (no fallback), else the first default that resolves.
resolve_version() {
    if [[ -n "${ZK_VERSION:-}" ]]; then
        fetch_version "$ZK_VERSION" || die "ZooKeeper $ZK_VERSION is not available from Maven"
        echo "$ZK_VERSION"
        return
    fi
    local v
    for v in "${DEFAULT_VERSIONS[@]}"; do
        if have_version "$v"; then echo "$v"; return; fi
    done
    for v in "${DEFAULT_VERSIONS[@]}"; do
        if fetch_version "$v"; then echo "$v"; return; fi
    done
    die "none of ${DEFAULT_VERSIONS[*]} could be fetched from Maven Central"
}

classpath() { echo "$(cache_dir_for "$1")/lib/*"; }

# Sends a four-letter word to 127.0.0.1:<port> and prints the reply; bash's /dev/tcp avoids needing nc.
four_letter() {
    local port="$1" word="$2"
    timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$port"' && printf %s '"$word"' >&3 && cat <&3' 2>/dev/null || true
}

cmd_start() {
    [[ $# -eq 2 ]] || die "usage: zookeeper.sh start <port> <datadir>"
    local port="$1" datadir="$2" ver cp pidfile pid deadline
    [[ "$port" =~ ^[0-9]+$ ]] || die "port must be a number, got '$port'"
    command -v java >/dev/null || die "java not found (apt-get install openjdk-17-jre-headless)"
    ver="$(resolve_version)"
    cp="$(classpath "$ver")"
    mkdir -p "$datadir"
    datadir="$(cd "$datadir" && pwd)"
    pidfile="$datadir/zk.pid"
    if [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
        die "a ZooKeeper is already running for $datadir (pid $(cat "$pidfile")); stop it first"
    fi
    if [[ "$(four_letter "$port" ruok)" == imok ]]; then
        die "port $port already answers ruok: another server is listening there"
    fi
    cat >"$datadir/zoo.cfg" <<EOF
# written by scripts/zookeeper.sh: standalone reference server for paddock's tests
tickTime=2000
clientPort=$port
clientPortAddress=127.0.0.1
dataDir=$datadir/zk-data
4lw.commands.whitelist=*
admin.enableServer=false
maxClientCnxns=0
${ZK_EXTRA_CFG:-}
EOF
    mkdir -p "$datadir/zk-data"
    # extendedTypesEnabled turns on TTL nodes; forceSync stays at its default (fsync on) so benchmark
    # numbers compare like with like.
    # shellcheck disable=SC2086
    nohup java -Xmx"${ZK_HEAP:-256m}" \
        -Dzookeeper.extendedTypesEnabled=true \
        -Dzookeeper.admin.enableServer=false \
        -Dzookeeper.log.dir="$datadir" \
        ${ZK_JVMFLAGS:-} \
        -cp "$cp" org.apache.zookeeper.server.ZooKeeperServerMain "$datadir/zoo.cfg" \
        >"$datadir/zk.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$pidfile"
    deadline=$((SECONDS + ${ZK_START_TIMEOUT:-60}))
    # Not `ruok`: ZooKeeper answers imok before its request processors are up, and refuses sessions
    # until then. `srvr` says "not currently serving requests" in that window.
    until [[ "$(four_letter "$port" srvr)" == "Zookeeper version:"* ]]; do
        if ! kill -0 "$pid" 2>/dev/null; then
            rm -f "$pidfile"
            tail -n 30 "$datadir/zk.log" >&2 || true
            die "ZooKeeper $ver exited during start-up (log: $datadir/zk.log)"
        fi
        if ((SECONDS >= deadline)); then
            kill "$pid" 2>/dev/null || true
            rm -f "$pidfile"
            tail -n 30 "$datadir/zk.log" >&2 || true
            die "ZooKeeper $ver did not serve on 127.0.0.1:$port within ${ZK_START_TIMEOUT:-60}s"
        fi
        sleep 0.3
    done
    log "ZooKeeper $ver up on 127.0.0.1:$port (pid $pid, log $datadir/zk.log)"
    echo "$pid"
}

cmd_stop() {
    [[ $# -eq 1 ]] || die "usage: zookeeper.sh stop <datadir>"
    local pidfile="$1/zk.pid" pid
    [[ -f "$pidfile" ]] || die "no $pidfile: nothing started with datadir $1"
    pid="$(cat "$pidfile")"
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "pid $pid ignored SIGTERM for 10s; sending SIGKILL"
            kill -9 "$pid" 2>/dev/null || true
        fi
    else
        log "pid $pid was not running"
    fi
    rm -f "$pidfile"
}

cmd_cli() {
    [[ "${1:-}" == "--" ]] && shift
    local ver
    command -v java >/dev/null || die "java not found (apt-get install openjdk-17-jre-headless)"
    ver="$(resolve_version)"
    # Keep zkCli's own logging quiet so that its stdout is just the command's result.
    exec java -Xmx128m -Dorg.slf4j.simpleLogger.defaultLogLevel="${ZK_CLI_LOG_LEVEL:-warn}" \
        -Dzookeeper.extendedTypesEnabled=true \
        -cp "$(classpath "$ver")" org.apache.zookeeper.ZooKeeperMain "$@"
}

main() {
    local cmd="${1:-}"
    [[ $# -gt 0 ]] && shift
    case "$cmd" in
        fetch)
            local ver
            ver="$(resolve_version)"
            echo "$(cache_dir_for "$ver")/lib (ZooKeeper $ver)"
            ;;
        start) cmd_start "$@" ;;
        stop) cmd_stop "$@" ;;
        cli) cmd_cli "$@" ;;
        classpath) classpath "$(resolve_version)" ;;
        version) resolve_version ;;
        *)
            sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
            [[ -z "$cmd" || "$cmd" == -h || "$cmd" == --help || "$cmd" == help ]] && exit 0
            die "unknown command '$cmd'"
            ;;
    esac
}

main "$@"
