#!/bin/bash
# The image's entrypoint: turns the official `zookeeper` image's variables into $ZOO_CONF_DIR/zoo.cfg
# (only when no zoo.cfg is there, so a mounted /conf/zoo.cfg wins), writes $ZOO_DATA_DIR/myid from
# ZOO_MY_ID (only when missing), runs /docker-entrypoint.d/ hooks (*.sh executed, *.envsh sourced),
# then execs the command (its own messages go to stderr), so the server is PID 1 and gets docker's SIGTERM itself.
set -euo pipefail

conf_dir="${ZOO_CONF_DIR:-/conf}"
data_dir="${ZOO_DATA_DIR:-/data}"
cfg="$conf_dir/zoo.cfg"

for hook in $(find /docker-entrypoint.d/ -mindepth 1 -maxdepth 1 -type f 2>/dev/null | sort -V); do
    case "$hook" in
        *.envsh) if [[ -x "$hook" ]]; then echo "entrypoint: sourcing $hook" >&2; . "$hook"; fi ;;
        *.sh) if [[ -x "$hook" ]]; then echo "entrypoint: running $hook" >&2; "$hook"; fi ;;
        *) echo "entrypoint: ignoring $hook" >&2 ;;
    esac
done

if [[ ! -f "$cfg" ]]; then
    {
        echo "dataDir=$data_dir"
        echo "dataLogDir=${ZOO_DATA_LOG_DIR:-/datalog}"
        echo "tickTime=${ZOO_TICK_TIME:-2000}"
        echo "initLimit=${ZOO_INIT_LIMIT:-5}"
        echo "syncLimit=${ZOO_SYNC_LIMIT:-2}"
        echo "autopurge.snapRetainCount=${ZOO_AUTOPURGE_SNAPRETAINCOUNT:-3}"
        echo "autopurge.purgeInterval=${ZOO_AUTOPURGE_PURGEINTERVAL:-0}"
        echo "maxClientCnxns=${ZOO_MAX_CLIENT_CNXNS:-60}"
        echo "standaloneEnabled=${ZOO_STANDALONE_ENABLED:-true}"
        echo "admin.enableServer=${ZOO_ADMINSERVER_ENABLED:-true}"
        # The AdminServer and the Prometheus endpoint answer anyone who reaches them, without auth
        # (initial_configuration, dump, connections): container loopback only, unless asked.
        echo "admin.serverAddress=${ZOO_ADMINSERVER_ADDRESS:-127.0.0.1}"
        echo "metricsProvider.httpHost=${ZOO_METRICS_HTTP_HOST:-127.0.0.1}"
        # Space-separated server.N=host:peerPort:electionPort;clientPort entries, one per line.
        for server in ${ZOO_SERVERS:-server.1=localhost:2888:3888;2181}; do
            echo "$server"
        done
        if [[ -n "${ZOO_4LW_COMMANDS_WHITELIST:-}" ]]; then
            echo "4lw.commands.whitelist=$ZOO_4LW_COMMANDS_WHITELIST"
        fi
        # Space-separated key=value entries added as they are.
        for entry in ${ZOO_CFG_EXTRA:-}; do
            echo "$entry"
        done
    } >"$cfg"
    echo "entrypoint: wrote $cfg" >&2
fi

if [[ ! -f "$data_dir/myid" ]]; then
    echo "${ZOO_MY_ID:-1}" >"$data_dir/myid"
fi

exec "$@"
