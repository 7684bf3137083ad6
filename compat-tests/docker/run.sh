#!/usr/bin/env bash
# docker: paddock's image and the compose ensemble on a real Docker engine (Debian's docker.io and
# docker-compose, installed here when missing).
#
#   compat-tests/docker/run.sh                                 --target paddock --members 3 (CI)
#   compat-tests/docker/run.sh --members 1                     one standalone member
#   compat-tests/docker/run.sh --target zookeeper --members 3  the same against Apache ZooKeeper 3.9 in an
#                                                              image built the same way: proves the test
#   (--against-zookeeper is --target zookeeper)
#
# With no engine running, it starts its own dockerd (images cached in ~/.cache/paddock/dockerd; no
# default bridge, no iptables or forwarding changes; its socket, pidfile and log in a temp dir) and stops
# it at the end. It builds the base image locally (docker/base-image.sh: debootstrap, cached), then the
# image with the release binary (docker/build-image.sh). Checks, each counted:
#   image        the image runs as a non-root user
#   entrypoint   ZOO_* variables become the expected zoo.cfg and myid; a mounted /conf/zoo.cfg is kept
#   admin        (paddock) the AdminServer answers on member 1's loopback and refuses a container on
#                the network (admin.serverAddress=127.0.0.1 by default)
#   healthy      every member's HEALTHCHECK (ruok) reports healthy
#   logs         (paddock) `docker logs` has the startup line: member id, port, data dirs, no colour codes
#   status       `paddock status` from the client container, over the network's DNS names: all serve,
#                one leader (or standalone)
#   zkcli        zkCli (ZooKeeperMain, on the host) writes on one member, reads the value on each
#   kazoo        kazoo (the repo's .venv, on the host) writes 20 nodes through the ensemble; each member
#                has all 20
#   failover     (3 members) the leader's container is killed: writes continue on the others, a new leader
#   rejoin       (3 members) `docker start` of the old leader: it serves again, as a follower, with all data
#   sigterm      `docker stop`: every member exits 0 within the grace period (paddock only: the JVM exits 143)
#   teardown     `docker compose down -v` (or rm) leaves no container, network or volume
# zkCli and kazoo run on the host against the published ports: the host has the JRE, the jars and the
# venv, and a client image with them could only be built from a registry's JRE/Python images.
# Ends with the row `docker | passed | failed | skipped` (docker@zookeeper for --target zookeeper).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$COMPAT_LIB_DIR/docker"

compat_init docker
TARGET=paddock
MEMBERS=3
while [[ $# -gt 0 ]]; do
    case "$1" in
        --target) TARGET=$2; shift ;;
        --against-zookeeper) TARGET=zookeeper ;;
        --members) MEMBERS=$2; shift ;;
        *) echo "$0: unknown option '$1' (see the header of $0)" >&2; exit 2 ;;
    esac
    shift
done
[[ "$TARGET" == paddock || "$TARGET" == zookeeper ]] || { echo "$0: --target paddock|zookeeper" >&2; exit 2; }
[[ "$MEMBERS" == 1 || "$MEMBERS" == 3 ]] || { echo "$0: --members 1|3" >&2; exit 2; }
[[ "$TARGET" == paddock ]] || COMPAT_SUITE="docker@zookeeper"

PROJECT=paddock-compat
PADDOCK_IMAGE=paddock:compat-test
ZK_IMAGE=paddock-compat-zookeeper:test
SERVER_IMAGE=$PADDOCK_IMAGE
CLIENT_IMAGE=$PADDOCK_IMAGE
[[ "$TARGET" == paddock ]] || SERVER_IMAGE=$ZK_IMAGE
PY="$ROOT/.venv/bin/python"
passed=0 failed=0 skipped=0
T0=$SECONDS
OWN_DOCKERD_PID=""
OWN_DOCKERD_DIR=""
declare -A PORTS=([1]="$(free_port)" [2]="$(free_port)" [3]="$(free_port)")

ok() { passed=$((passed + 1)); echo "docker: ok   $1 ($((SECONDS - T0)) s)"; }
bad() { failed=$((failed + 1)); echo "docker: FAIL $1 ($((SECONDS - T0)) s)" >&2; }
skip() { skipped=$((skipped + 1)); report_skip 1 "$1"; }
step() { echo "docker: -- $1 ($((SECONDS - T0)) s)"; }

compose() {
    CLIENT_IMAGE=$CLIENT_IMAGE PADDOCK_IMAGE=$SERVER_IMAGE ZOO1_PORT=${PORTS[1]} ZOO2_PORT=${PORTS[2]} \
        ZOO3_PORT=${PORTS[3]} docker-compose -p "$PROJECT" -f "$ROOT/docker/compose.yaml" "$@"
}

# Everything this run made, also on failure and Ctrl-C: containers, networks, volumes, then our dockerd.
cleanup() {
    set +eu
    if docker info >/dev/null 2>&1; then
        if [[ "$MEMBERS" == 3 ]]; then
            compose --profile client down -v --remove-orphans >/dev/null 2>&1
        fi
        docker rm -f -v "$PROJECT-zoo1" >/dev/null 2>&1
        docker network rm "$PROJECT-net" >/dev/null 2>&1
    fi
    if [[ -n "$OWN_DOCKERD_PID" ]]; then
        kill "$OWN_DOCKERD_PID" 2>/dev/null
        for _ in $(seq 1 200); do kill -0 "$OWN_DOCKERD_PID" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$OWN_DOCKERD_PID" 2>/dev/null
        echo "docker: stopped the dockerd this run started"
    fi
    [[ -z "$OWN_DOCKERD_DIR" ]] || rm -rf "$OWN_DOCKERD_DIR"
    compat_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the engine ---------------------------------------------------------------------------------------
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v docker-compose >/dev/null || need+=(docker-compose)
command -v debootstrap >/dev/null || need+=(debootstrap)
if ((${#need[@]})); then
    step "installing ${need[*]}"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; } >"$COMPAT_WORK/apt.log" 2>&1 \
        || { tail -n 20 "$COMPAT_WORK/apt.log" >&2; compat_fail "could not install ${need[*]}"; }
fi
step "scripts/install-deps.sh (kazoo venv, ZooKeeper jars for zkCli)"
bash "$ROOT/scripts/install-deps.sh" >"$COMPAT_WORK/install-deps.log" 2>&1 \
    || { tail -n 20 "$COMPAT_WORK/install-deps.log" >&2; compat_fail "scripts/install-deps.sh failed"; }
if ! docker info >/dev/null 2>&1; then
    # A short exec-root: containerd's socket paths must fit in 108 bytes.
    OWN_DOCKERD_DIR="$(mktemp -d /tmp/pdk-dockerd.XXXXXX)"
    export DOCKER_HOST="unix://$OWN_DOCKERD_DIR/docker.sock"
    mkdir -p "$HOME/.cache/paddock/dockerd"
    dockerd --data-root "$HOME/.cache/paddock/dockerd" --exec-root "$OWN_DOCKERD_DIR/exec" \
        --pidfile "$OWN_DOCKERD_DIR/dockerd.pid" -H "$DOCKER_HOST" \
        --bridge=none --iptables=false --ip-masq=false --ip-forward=false \
        >"$OWN_DOCKERD_DIR/dockerd.log" 2>&1 </dev/null &
    OWN_DOCKERD_PID=$!
    for _ in $(seq 1 300); do
        docker info >/dev/null 2>&1 && break
        kill -0 "$OWN_DOCKERD_PID" 2>/dev/null || break
        sleep 0.1
    done
    docker info >/dev/null 2>&1 || { tail -n 20 "$OWN_DOCKERD_DIR/dockerd.log" >&2; compat_fail "dockerd did not start"; }
    step "started dockerd $(docker version -f '{{.Server.Version}}') (pid $OWN_DOCKERD_PID, log $OWN_DOCKERD_DIR/dockerd.log)"
else
    step "using the running Docker engine $(docker version -f '{{.Server.Version}}')"
fi
# A run interrupted before its cleanup may have left its project behind.
docker ps -aq --filter "label=com.docker.compose.project=$PROJECT" | xargs -r docker rm -f -v >/dev/null
docker rm -f -v "$PROJECT-zoo1" >/dev/null 2>&1 || true

# --- the images ---------------------------------------------------------------------------------------
step "base image"
bash "$ROOT/docker/base-image.sh" paddock || compat_fail "docker/base-image.sh failed"
# The suite tests the image and the compose flow, not the optimiser: in the compat suite it takes the
# binary already built for every suite (PADDOCK_BIN, a debug build) instead of a release build, which
# costs minutes on a 2-core machine. PADDOCK_RELEASE_BIN names another binary; with neither, a release
# build is made.
IMAGE_BIN="${PADDOCK_RELEASE_BIN:-${PADDOCK_BIN:-}}"
step "image (binary: ${IMAGE_BIN:-a release build})"
bash "$ROOT/docker/build-image.sh" --base paddock-base:bookworm --tag "$PADDOCK_IMAGE" ${IMAGE_BIN:+--bin "$IMAGE_BIN"} \
    -- --network none || compat_fail "docker/build-image.sh failed"
if [[ "$TARGET" == zookeeper ]]; then
    step "ZooKeeper image"
    bash "$ROOT/docker/base-image.sh" jre || compat_fail "docker/base-image.sh jre failed"
    zkctx="$COMPAT_WORK/zk-image"
    mkdir -p "$zkctx"
    zklib="$(bash "$ROOT/scripts/zookeeper.sh" classpath)"
    cp -r "${zklib%/\*}" "$zkctx/lib"
    cp "$HERE/zookeeper.Dockerfile" "$zkctx/Dockerfile"
    cp "$ROOT/docker/entrypoint.sh" "$ROOT/docker/healthcheck.sh" "$zkctx/"
    docker build -q --network none -t "$ZK_IMAGE" "$zkctx" >/dev/null || compat_fail "the ZooKeeper image does not build"
fi

# --- image and entrypoint -----------------------------------------------------------------------------
if [[ "$(docker run --rm --entrypoint id "$SERVER_IMAGE" -u)" == 1000 ]]; then ok "image: runs as uid 1000"; else bad "image: not uid 1000"; fi

expected_cfg="dataDir=/data
dataLogDir=/datalog
tickTime=1000
initLimit=7
syncLimit=3
autopurge.snapRetainCount=3
autopurge.purgeInterval=0
maxClientCnxns=9
standaloneEnabled=false
admin.enableServer=false
admin.serverAddress=127.0.0.1
metricsProvider.httpHost=0.0.0.0
server.1=a:2888:3888;2181
server.2=b:2888:3888;2181
4lw.commands.whitelist=*
extendedTypesEnabled=true
reconfigEnabled=false
myid=2"
got_cfg="$(docker run --rm -e ZOO_MY_ID=2 -e ZOO_TICK_TIME=1000 -e ZOO_INIT_LIMIT=7 -e ZOO_SYNC_LIMIT=3 \
    -e ZOO_MAX_CLIENT_CNXNS=9 -e ZOO_STANDALONE_ENABLED=false -e ZOO_ADMINSERVER_ENABLED=false \
    -e ZOO_METRICS_HTTP_HOST=0.0.0.0 \
    -e "ZOO_SERVERS=server.1=a:2888:3888;2181 server.2=b:2888:3888;2181" -e 'ZOO_4LW_COMMANDS_WHITELIST=*' \
    -e "ZOO_CFG_EXTRA=extendedTypesEnabled=true reconfigEnabled=false" \
    "$SERVER_IMAGE" bash -c 'cat /conf/zoo.cfg; echo "myid=$(cat /data/myid)"' 2>/dev/null)"
mounted="$COMPAT_WORK/zoo.cfg"
printf 'tickTime=1500\ndataDir=/data\nclientPort=2181\n' >"$mounted"
got_mounted="$(docker run --rm -v "$mounted:/conf/zoo.cfg:ro" -e ZOO_TICK_TIME=1000 "$SERVER_IMAGE" cat /conf/zoo.cfg 2>/dev/null)"
if [[ "$got_cfg" == "$expected_cfg" && "$got_mounted" == "$(cat "$mounted")" ]]; then
    ok "entrypoint: ZOO_* variables make zoo.cfg and myid; a mounted zoo.cfg is kept"
else
    bad "entrypoint: zoo.cfg differs"
    diff <(echo "$expected_cfg") <(echo "$got_cfg") >&2 || true
    diff "$mounted" <(echo "$got_mounted") >&2 || true
fi

# --- the ensemble -------------------------------------------------------------------------------------
CONTAINERS=()
if [[ "$MEMBERS" == 3 ]]; then
    step "compose up (3 members, $SERVER_IMAGE)"
    compose up -d zoo1 zoo2 zoo3 >"$COMPAT_WORK/compose-up.log" 2>&1 \
        || { cat "$COMPAT_WORK/compose-up.log" >&2; compat_fail "docker-compose up failed"; }
    for i in 1 2 3; do CONTAINERS[i]="$(compose ps -q "zoo$i")"; done
else
    step "one member ($SERVER_IMAGE) on the network $PROJECT-net"
    docker network create "$PROJECT-net" >/dev/null
    CONTAINERS[1]="$(docker run -d --name "$PROJECT-zoo1" --network "$PROJECT-net" --network-alias zoo1 \
        --hostname zoo1 -p "127.0.0.1:${PORTS[1]}:2181" -e 'ZOO_4LW_COMMANDS_WHITELIST=*' "$SERVER_IMAGE")"
fi
member_list() { local i out=""; for i in $(seq 1 "$MEMBERS"); do out+="${out:+,}127.0.0.1:${PORTS[$i]}"; done; echo "$out"; }
four() { timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$1"' && printf %s '"$2"' >&3 && cat <&3' 2>/dev/null || true; }
mode_of() { four "$1" srvr | sed -n 's/^Mode: //p'; }
health() { docker inspect -f '{{.State.Health.Status}}' "$1" 2>/dev/null; }
wait_healthy() { # seconds container...
    local deadline=$((SECONDS + $1)) c all
    shift
    while ((SECONDS < deadline)); do
        all=1
        for c in "$@"; do
            [[ "$(health "$c")" == healthy ]] || all=0
            # A member that exited will not become healthy: no point waiting.
            [[ "$(docker inspect -f '{{.State.Running}}' "$c" 2>/dev/null)" == true ]] || return 1
        done
        ((all)) && return 0
        sleep 1
    done
    return 1
}
logs_tail() { local c; for c in "${CONTAINERS[@]}"; do echo "--- $c" >&2; docker logs --tail 15 "$c" >&2 2>&1; done; }

if wait_healthy 90 "${CONTAINERS[@]}"; then
    ok "healthy: every member's ruok HEALTHCHECK passes"
else
    bad "healthy: not every member became healthy"
    logs_tail
fi
# paddock's startup line in `docker logs`: plain text (no colour codes), naming the member and dirs.
if [[ "$TARGET" == paddock ]]; then
    logs_ok=1
    for i in $(seq 1 "$MEMBERS"); do
        first="$(docker logs "${CONTAINERS[$i]}" 2>&1 | grep -m1 'paddock starting' || true)"
        [[ "$first" == *" INFO paddock: paddock starting "*"my_id=$i "*"client_port=2181 "*"data_dir=/data data_log_dir=/datalog"* \
            && "$first" != *$'\e'* ]] || { logs_ok=0; echo "docker: member $i startup line: '$first'" >&2; }
    done
    if ((logs_ok)); then ok "logs: each member's startup line names its id, port and dirs, uncoloured"; else bad "logs"; fi
else
    skip "logs: paddock's startup line (ZooKeeper logs its own way)"
fi

# ZooKeeper answers ruok before it serves; wait for srvr on every member.
for i in $(seq 1 "$MEMBERS"); do
    for _ in $(seq 1 60); do
        [[ "$(four "${PORTS[$i]}" srvr)" == "Zookeeper version:"* ]] && break
        [[ "$(docker inspect -f '{{.State.Running}}' "${CONTAINERS[$i]}")" == true ]] || break
        sleep 1
    done
done

# `paddock status` from the client container, by DNS name.
if [[ "$MEMBERS" == 3 ]]; then
    status_out="$(compose run --rm client 2>"$COMPAT_WORK/client.err")" && status_rc=0 || status_rc=$?
    names=(zoo1:2181 zoo2:2181 zoo3:2181)
else
    status_out="$(docker run --rm --network "$PROJECT-net" --entrypoint paddock "$PADDOCK_IMAGE" status --servers zoo1:2181 2>&1)" \
        && status_rc=0 || status_rc=$?
    names=(zoo1:2181)
fi
echo "$status_out"
leaders="$(awk 'NR > 1 && ($2 == "leader" || $2 == "standalone")' <<<"$status_out" | wc -l)"
serving="$(awk 'NR > 1 && $8 == "yes"' <<<"$status_out" | wc -l)"
first_col="$(awk 'NR > 1 {print $1}' <<<"$status_out" | paste -sd' ')"
if [[ $status_rc -eq 0 && "$leaders" == 1 && "$serving" == "$MEMBERS" && "$first_col" == "${names[*]}" ]]; then
    ok "status: the client container sees ${names[*]} all serving, one leader"
else
    bad "status: exit $status_rc, $leaders leader(s), $serving serving, servers '$first_col'"
    cat "$COMPAT_WORK/client.err" >&2 2>/dev/null || true
fi

# The AdminServer: on the container's loopback only (ZOO_ADMINSERVER_ADDRESS unset). ZooKeeper's
# image here turns it off (-Dzookeeper.admin.enableServer=false), so there is nothing to compare.
if [[ "$TARGET" == paddock ]]; then
    admin_get='exec 3<>/dev/tcp/$0/8080 && printf "GET /commands/ruok HTTP/1.0\r\n\r\n" >&3 && cat <&3'
    inside="$(docker exec "${CONTAINERS[1]}" timeout 3 bash -c "$admin_get" 127.0.0.1 2>/dev/null || true)"
    if [[ "$MEMBERS" == 3 ]]; then
        compose run --rm --entrypoint timeout client 3 bash -c "$admin_get" zoo1 >/dev/null 2>&1 \
            && outside=answered || outside=refused
    else
        docker run --rm --network "$PROJECT-net" --entrypoint timeout "$PADDOCK_IMAGE" 3 bash -c "$admin_get" zoo1 \
            >/dev/null 2>&1 && outside=answered || outside=refused
    fi
    if [[ "$inside" == "HTTP/1.1 200 OK"* && "$outside" == refused ]]; then
        ok "admin: the AdminServer answers on the member's loopback, not on the network"
    else
        bad "admin: inside '${inside%%$'\r'*}', from the network: $outside"
    fi
else
    skip "admin: ZooKeeper's image runs without an AdminServer"
fi

# zkCli on the host: write through member 1, read on every member.
zkcli() { bash "$ROOT/scripts/zookeeper.sh" cli -- -server "$1" "${@:2}" 2>/dev/null; }
zkcli "127.0.0.1:${PORTS[1]}" create /docker-zkcli hello-from-zkcli >"$COMPAT_WORK/zkcli.log" || true
zk_ok=1
for i in $(seq 1 "$MEMBERS"); do
    got="$(zkcli "127.0.0.1:${PORTS[$i]}" get /docker-zkcli | grep -x hello-from-zkcli || true)"
    [[ "$got" == hello-from-zkcli ]] || { zk_ok=0; echo "docker: zkCli on member $i read '$got'" >&2; }
done
if ((zk_ok)); then ok "zkcli: create on member 1, the value read back on each of $MEMBERS"; else bad "zkcli"; fi

# kazoo: 20 nodes through the ensemble string, all 20 on every member.
counts_on_all() { # prefix expected
    local i n ok=1
    for i in $(seq 1 "$MEMBERS"); do
        n="$("$PY" "$HERE/ensemble.py" count "127.0.0.1:${PORTS[$i]}" "$1" 2>>"$COMPAT_WORK/kazoo.err" || echo error)"
        [[ "$n" == "$2" ]] || { ok=0; echo "docker: member $i has '$n' children under $1, not $2" >&2; }
    done
    ((ok))
}
if "$PY" "$HERE/ensemble.py" write "$(member_list)" /docker-kazoo 0 20 >>"$COMPAT_WORK/kazoo.log" 2>>"$COMPAT_WORK/kazoo.err" \
    && counts_on_all /docker-kazoo 20; then
    ok "kazoo: 20 writes through the ensemble, all 20 on each member"
else
    bad "kazoo"
    tail -n 5 "$COMPAT_WORK/kazoo.err" >&2
fi

# --- failover and rejoin (3 members) ------------------------------------------------------------------
if [[ "$MEMBERS" == 3 ]]; then
    leader=""
    for i in 1 2 3; do [[ "$(mode_of "${PORTS[$i]}")" == leader ]] && leader=$i; done
    if [[ -z "$leader" ]]; then
        bad "failover: no member says Mode: leader"
        bad "status after the kill: no leader to kill"
        bad "rejoin: no leader to kill"
    else
        step "killing the leader, zoo$leader"
        docker kill "${CONTAINERS[$leader]}" >/dev/null || true
        others=()
        for i in 1 2 3; do [[ $i == "$leader" ]] || others+=("127.0.0.1:${PORTS[$i]}"); done
        hosts="$(IFS=,; echo "${others[*]}")"
        new_leader=""
        if "$PY" "$HERE/ensemble.py" write "$hosts" /docker-kazoo 20 10 >>"$COMPAT_WORK/kazoo.log" 2>>"$COMPAT_WORK/kazoo.err"; then
            for i in 1 2 3; do [[ $i != "$leader" && "$(mode_of "${PORTS[$i]}")" == leader ]] && new_leader=$i; done
        fi
        if [[ -n "$new_leader" ]]; then
            ok "failover: zoo$leader killed, 10 more writes went through, zoo$new_leader leads"
        else
            bad "failover: writes or a new leader missing after killing zoo$leader"
            tail -n 5 "$COMPAT_WORK/kazoo.err" >&2
        fi
        # The table now: the killed member a row saying so, exit 1; the two others serve, one leads.
        st="$(compose run --rm client 2>>"$COMPAT_WORK/client.err")" && st_rc=0 || st_rc=$?
        echo "$st"
        dead_row="$(awk -v m="zoo$leader:2181" '$1 == m {print $2}' <<<"$st")"
        live="$(awk 'NR > 1 && $8 == "yes"' <<<"$st" | wc -l)"
        lead="$(awk 'NR > 1 && $2 == "leader" {print $1}' <<<"$st")"
        if [[ $st_rc -eq 1 && "$dead_row" == unreachable && "$live" == 2 && "$lead" == "zoo$new_leader:2181" ]]; then
            ok "status: after the kill, zoo$leader unreachable, zoo$new_leader leader, exit 1"
        else
            bad "status after the kill: exit $st_rc, zoo$leader '$dead_row', $live serving, leader '$lead'"
        fi
        step "docker start zoo$leader"
        docker start "${CONTAINERS[$leader]}" >/dev/null || true
        rejoined=0
        if wait_healthy 90 "${CONTAINERS[$leader]}"; then
            for _ in $(seq 1 60); do
                [[ "$(mode_of "${PORTS[$leader]}")" == follower ]] && { rejoined=1; break; }
                sleep 1
            done
        fi
        if ((rejoined)) && counts_on_all /docker-kazoo 30; then
            ok "rejoin: zoo$leader is a follower again and has all 30 nodes"
        else
            bad "rejoin: zoo$leader mode '$(mode_of "${PORTS[$leader]}")'"
            logs_tail
        fi
    fi
else
    skip "failover: needs --members 3"
    skip "status after the leader is killed: needs --members 3"
    skip "rejoin: needs --members 3"
fi

# --- stop and teardown --------------------------------------------------------------------------------
if [[ "$TARGET" == paddock ]]; then
    t=$SECONDS
    docker stop -t 15 "${CONTAINERS[@]}" >/dev/null || true
    codes="$(for c in "${CONTAINERS[@]}"; do docker inspect -f '{{.State.ExitCode}}' "$c"; done | sort -u | paste -sd,)"
    if [[ "$codes" == 0 ]] && ((SECONDS - t < 15)); then
        ok "sigterm: docker stop: every member exited 0 in $((SECONDS - t)) s"
    else
        bad "sigterm: exit codes $codes after $((SECONDS - t)) s"
        logs_tail
    fi
else
    skip "sigterm: ZooKeeper's JVM exits 143 on SIGTERM; the check is for paddock's PID 1"
fi

if [[ "$MEMBERS" == 3 ]]; then
    compose --profile client down -v --remove-orphans >/dev/null 2>&1
else
    docker rm -f -v "$PROJECT-zoo1" >/dev/null
    docker network rm "$PROJECT-net" >/dev/null
fi
left="$(docker ps -aq --filter "label=com.docker.compose.project=$PROJECT"; docker ps -aq --filter "name=$PROJECT";
    docker network ls -q --filter "name=$PROJECT"; docker volume ls -q --filter "name=$PROJECT"; docker volume ls -q --filter dangling=true)"
if [[ -z "$left" ]]; then ok "teardown: no container, network or volume left"; else bad "teardown: left $left"; fi

echo "docker: took $((SECONDS - T0)) s"
report "$passed" "$failed" "$skipped"
[[ $failed -eq 0 ]]
