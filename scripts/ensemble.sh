#!/usr/bin/env bash
# A local ensemble on loopback: N members, each with an ordinary ZooKeeper zoo.cfg and myid.
#
#   scripts/ensemble.sh start N [--dir DIR] [--base-port P] [--zookeeper] [--tls] [--client-tls]
#         N is 3 or 5. Writes DIR/mK/zoo.cfg and DIR/mK/data/myid for each member K, builds the
#         release binary if needed (as scripts/serve.sh does), starts `paddock serve --config` per
#         member (log DIR/mK/server.log, pid DIR/mK/server.pid), waits until every member answers
#         `srvr` with a Mode line and exactly one is the leader, then prints the client connect
#         string (127.0.0.1:p1,127.0.0.1:p2,...) on stdout. Run again on a running ensemble, it
#         starts only the members that are down (a killed member restarts with its data) and
#         prints the connect string again.
#   scripts/ensemble.sh stop [--dir DIR] [--wipe]
#         SIGTERM to every member, SIGKILL after ENSEMBLE_STOP_TIMEOUT seconds (default 10).
#         --wipe also removes DIR. Stopping a stopped ensemble is not an error.
#   scripts/ensemble.sh status [--dir DIR]
#         One line per member: server.K, client address, pid, and its mode (leader, follower,
#         "not serving", or "down"). Exit code 0 when every member serves and one leads, else 1.
#   scripts/ensemble.sh connect [--dir DIR] [--secure]    print the connect string (--secure: of the
#         secure client ports of an ensemble started with --client-tls)
#
# DIR defaults to ./ensemble under the repository. Ports: with --base-port P, member K gets
# clientPort P+K-1, peerPort P+100+K-1, electionPort P+200+K-1; without it, free loopback ports.
# --zookeeper runs Apache ZooKeeper (QuorumPeerMain, jars from scripts/zookeeper.sh) from the same
# kind of zoo.cfg instead of paddock, for side-by-side measurements (bench/compare.sh --ensemble).
# --tls puts the quorum (peer and election links) on TLS, for paddock and --zookeeper alike: on the first
# start in DIR, openssl makes DIR/tls/ca.crt (a self-signed EC P-256 CA) and per member K DIR/tls/mK.pem
# (its certificate with SAN IP:127.0.0.1, EKU serverAuth+clientAuth, then the CA, then its PKCS#8 key),
# and every zoo.cfg gets sslQuorum=true, ssl.quorum.keyStore.location=DIR/tls/mK.pem and
# ssl.quorum.trustStore.location=DIR/tls/ca.crt, both .type=PEM (ZooKeeper 3.9 reads the same files).
# DIR/ensemble.env remembers it: a later start in DIR (a killed member's restart) keeps TLS with or
# without --tls; --tls on a DIR set up in plaintext is refused. Clients still connect in plaintext.
# --client-tls adds a secure client port per member beside the plaintext one (which keeps serving the
# four-letter words and plaintext clients): secureClientPort (free port, or P+300+K-1 with --base-port),
# secureClientPortAddress=127.0.0.1, serverCnxnFactory=...NettyServerCnxnFactory (ZooKeeper's only TLS
# factory), ssl.keyStore.location=DIR/tls/server.pem and ssl.trustStore.location=DIR/tls/ca.crt, both PEM,
# clientAuth need (the default). The same CA then issues DIR/tls/server.pem (SAN IP:127.0.0.1 and
# DNS:localhost, EKU serverAuth: ZooKeeper's Java client may check either name) and DIR/tls/client.pem
# (subject CN=client,O=paddock ensemble.sh, EKU clientAuth), each also as .p12 (password in
# DIR/tls/password); ca.key stays in DIR/tls, so a caller can issue more client certificates.
# Environment: PADDOCK_BIN (use this binary, no build), CARGO_TARGET_DIR (default
# ~/.cache/paddock-target), ENSEMBLE_START_TIMEOUT seconds (default 60), RUST_LOG (default info),
# ZK_HEAP (default 256m), ENSEMBLE_EXTRA_CFG (lines appended to every member's zoo.cfg when it is first
# written), ENSEMBLE_SYSPROPS (KEY=VALUE words, each given to every member at every start: `-D KEY=VALUE`
# to paddock, `-DKEY=VALUE` to ZooKeeper's JVM; e.g. java.security.auth.login.config for SASL; no spaces
# inside a word).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/paddock-target}"

die() { echo "ensemble.sh: error: $*" >&2; exit 2; }
log() { echo "ensemble.sh: $*" >&2; }
usage() { awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "${BASH_SOURCE[0]}" >&2; exit "${1:-2}"; }

# A pid names a live member only if it exists, is not a zombie, and runs this member's config.
alive() {
    local pid="$1" cfg="$2" state
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [[ -r "/proc/$pid/stat" ]] || return 1
    state="$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)" || return 1
    [[ "$state" != Z && "$state" != X ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$cfg"
}

member_pid() { # K: the live pid of member K, or nothing
    local k="$1" pid
    pid="$(cat "$DIR/m$k/server.pid" 2>/dev/null || true)"
    if alive "$pid" "$DIR/m$k/zoo.cfg"; then echo "$pid"; fi
}

# Sends a four-letter word to 127.0.0.1:<port>; prints the reply (nothing when nobody answers).
four_letter() {
    timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$1"' && printf %s '"$2"' >&3 && cat <&3' 2>/dev/null || true
}

mode_of() { # port: leader|follower|observer|standalone, "not serving", or "no answer"
    local reply
    reply="$(four_letter "$1" srvr)"
    if [[ -z "$reply" ]]; then
        echo "no answer"
    elif [[ "$reply" == *"not currently serving"* ]]; then
        echo "not serving"
    else
        sed -n 's/^Mode: //p' <<<"$reply" | head -n1
    fi
}

port_free() {
    python3 -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1",int(sys.argv[1]))); s.close()' "$1" 2>/dev/null
}

free_ports() { # COUNT distinct free loopback ports, one a line (held open together so none repeats)
    python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
EOF
}

load_state() { # reads DIR/ensemble.env: N, KIND, CLIENT_PORTS, TLS, CLIENT_TLS, SECURE_PORTS
    [[ -f "$DIR/ensemble.env" ]] || return 1
    TLS=0 CLIENT_TLS=0 SECURE_PORTS=""
    # shellcheck disable=SC1091
    source "$DIR/ensemble.env"
}

# make_tls N: a CA and one PEM key store per member in DIR/tls (once: DIR/tls/.complete marks a full set).
# Every member listens on 127.0.0.1, so every member's certificate names it (paddock binds a member's id
# to a certificate whose SAN matches the host on its server.N line).
make_tls() {
    local n="$1" t="$DIR/tls" k
    [[ -f "$t/.complete" ]] && return 0
    command -v openssl >/dev/null || die "--tls needs openssl (apt-get install openssl)"
    rm -rf "$t"
    mkdir -p "$t"
    (
        umask 077
        cd "$t"
        openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 -sha256 \
            -subj "/CN=paddock ensemble.sh quorum CA" -keyout ca.key -out ca.crt \
            -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
        for ((k = 1; k <= n; k++)); do
            openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
                -subj "/CN=member-$k" -keyout "m$k.key" -out "m$k.csr" 2>/dev/null
            printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyAgreement" \
                "extendedKeyUsage=serverAuth,clientAuth" "subjectAltName=IP:127.0.0.1" >"m$k.ext"
            openssl x509 -req -in "m$k.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 825 -sha256 \
                -extfile "m$k.ext" -out "m$k.crt" 2>/dev/null
            cat "m$k.crt" ca.crt "m$k.key" >"m$k.pem"
            rm -f "m$k.csr" "m$k.ext"
        done
        # The client port's certificate and a client's (used by --client-tls).
        leaf() { # NAME SUBJECT EXT...
            local name=$1 subj=$2
            shift 2
            openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
                -subj "$subj" -keyout "$name.key" -out "$name.csr" 2>/dev/null
            printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyAgreement" "$@" >"$name.ext"
            openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 825 -sha256 \
                -extfile "$name.ext" -out "$name.crt" 2>/dev/null
            cat "$name.crt" ca.crt "$name.key" >"$name.pem"
            openssl pkcs12 -export -in "$name.crt" -inkey "$name.key" -certfile ca.crt -name "$name" \
                -passout "pass:$(<password)" -out "$name.p12"
            rm -f "$name.csr" "$name.ext"
        }
        echo storepass1 >password
        leaf server "/CN=paddock ensemble.sh client port" "extendedKeyUsage=serverAuth" \
            "subjectAltName=IP:127.0.0.1,DNS:localhost"
        leaf client "/O=paddock ensemble.sh/CN=client" "extendedKeyUsage=clientAuth"
        rm -f ca.srl
    ) || die "openssl could not make the certificates in $t"
    touch "$t/.complete"
    log "made a CA and $n member certificates in $t"
}

tls_keys() { # K: member K's quorum TLS lines for its zoo.cfg
    printf '%s\n' "sslQuorum=true" "ssl.quorum.keyStore.location=$DIR/tls/m$1.pem" "ssl.quorum.keyStore.type=PEM" \
        "ssl.quorum.trustStore.location=$DIR/tls/ca.crt" "ssl.quorum.trustStore.type=PEM"
}

write_configs() { # N BASE_PORT KIND TLS CLIENT_TLS
    local n="$1" base="$2" kind="$3" tls="$4" ctls="$5" k ports=() lines="" cp pp ep sp secure=()
    if [[ -n "$base" ]]; then
        for ((k = 0; k < n; k++)); do
            ports+=($((base + k)) $((base + 100 + k)) $((base + 200 + k)) $((base + 300 + k)))
        done
        for ((k = 0; k < 4 * n; k++)); do
            ((k % 4 == 3 && ctls == 0)) && continue
            p="${ports[$k]}"
            ((p > 0 && p < 65536)) || die "port $p (from --base-port $base) is out of range"
            port_free "$p" || die "port $p (from --base-port $base) is in use"
        done
    else
        mapfile -t ports < <(free_ports $((4 * n)))
    fi
    CLIENT_PORTS="" SECURE_PORTS=""
    for ((k = 1; k <= n; k++)); do
        cp="${ports[$((4 * (k - 1)))]}" pp="${ports[$((4 * (k - 1) + 1))]}" ep="${ports[$((4 * (k - 1) + 2))]}"
        sp="${ports[$((4 * (k - 1) + 3))]}"
        lines+="server.$k=127.0.0.1:$pp:$ep"$'\n'
        CLIENT_PORTS+="${CLIENT_PORTS:+ }$cp"
        secure+=("$sp")
        if ((ctls == 1)); then SECURE_PORTS+="${SECURE_PORTS:+ }$sp"; fi
    done
    mkdir -p "$DIR"
    k=1
    for cp in $CLIENT_PORTS; do
        mkdir -p "$DIR/m$k/data"
        cat >"$DIR/m$k/zoo.cfg" <<EOF
# member $k of a local $n-member ensemble, written by scripts/ensemble.sh
tickTime=2000
initLimit=5
syncLimit=2
dataDir=$DIR/m$k/data
clientPort=$cp
clientPortAddress=127.0.0.1
4lw.commands.whitelist=*
$lines
EOF
        if ((tls == 1)); then tls_keys "$k" >>"$DIR/m$k/zoo.cfg"; fi
        if [[ -n "${ENSEMBLE_EXTRA_CFG:-}" ]]; then printf '%s\n' "$ENSEMBLE_EXTRA_CFG" >>"$DIR/m$k/zoo.cfg"; fi
        if ((ctls == 1)); then
            printf '%s\n' "secureClientPort=${secure[$((k - 1))]}" "secureClientPortAddress=127.0.0.1" \
                "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory" \
                "ssl.keyStore.location=$DIR/tls/server.pem" "ssl.keyStore.type=PEM" \
                "ssl.trustStore.location=$DIR/tls/ca.crt" "ssl.trustStore.type=PEM" >>"$DIR/m$k/zoo.cfg"
        fi
        echo "$k" >"$DIR/m$k/data/myid"
        k=$((k + 1))
    done
    printf 'N=%s\nKIND=%s\nCLIENT_PORTS="%s"\nTLS=%s\nCLIENT_TLS=%s\nSECURE_PORTS="%s"\n' \
        "$n" "$kind" "$CLIENT_PORTS" "$tls" "$ctls" "$SECURE_PORTS" >"$DIR/ensemble.env"
}

connect_string() { # [--secure]
    local out="" p ports="$CLIENT_PORTS"
    if [[ "${1:-}" == --secure ]]; then
        ((CLIENT_TLS == 1)) || die "$DIR was started without --client-tls: no secure client ports"
        ports="$SECURE_PORTS"
    fi
    for p in $ports; do out+="${out:+,}127.0.0.1:$p"; done
    echo "$out"
}

paddock_bin() {
    if [[ -n "${PADDOCK_BIN:-}" ]]; then
        [[ -x "$PADDOCK_BIN" ]] || die "PADDOCK_BIN=$PADDOCK_BIN is not an executable"
        echo "$PADDOCK_BIN"
        return
    fi
    (cd "$ROOT" && bash scripts/install-deps.sh --debian-only >&2 &&
        cargo build --release --locked -p paddock >&2) || die "the release build failed"
    echo "$CARGO_TARGET_DIR/release/paddock"
}

start_member() { # K BIN_OR_CLASSPATH
    local k="$1" what="$2" m="$DIR/m$1" pid p dflags=() jflags=()
    for p in ${ENSEMBLE_SYSPROPS:-}; do dflags+=(-D "$p"); jflags+=("-D$p"); done
    case "$KIND" in
        paddock)
            RUST_LOG="${RUST_LOG:-info}" nohup "$what" serve --config "$m/zoo.cfg" "${dflags[@]+"${dflags[@]}"}" \
                >>"$m/server.log" 2>&1 </dev/null &
            ;;
        zookeeper)
            # shellcheck disable=SC2086
            nohup java -Xmx"${ZK_HEAP:-256m}" -Dzookeeper.admin.enableServer=false \
                -Dzookeeper.log.dir="$m" ${ZK_JVMFLAGS:-} "${jflags[@]+"${jflags[@]}"}" -cp "$what" \
                org.apache.zookeeper.server.quorum.QuorumPeerMain "$m/zoo.cfg" \
                >>"$m/server.log" 2>&1 </dev/null &
            ;;
    esac
    pid=$!
    disown "$pid" 2>/dev/null || true
    echo "$pid" >"$m/server.pid"
    log "member $k ($KIND) started, pid $pid, log $m/server.log"
}

cmd_start() {
    local n="" base="" kind=paddock tls=0 ctls=0 k pid what started=() deadline modes leaders ok p
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --dir) DIR="${2:?--dir needs a directory}"; shift ;;
            --base-port) base="${2:?--base-port needs a number}"; shift ;;
            --zookeeper) kind=zookeeper ;;
            --tls) tls=1 ;;
            --client-tls) ctls=1 ;;
            -h | --help) usage 0 ;;
            -*) die "unknown option $1" ;;
            *) [[ -z "$n" ]] || die "one member count, got '$n' and '$1'"; n="$1" ;;
        esac
        shift
    done
    [[ -n "$n" ]] || die "usage: ensemble.sh start N [--dir DIR] [--base-port P] [--zookeeper] [--tls]"
    [[ "$n" == 3 || "$n" == 5 ]] || die "N must be 3 or 5, got '$n'"
    [[ -z "$base" || "$base" =~ ^[0-9]+$ ]] || die "--base-port must be a number, got '$base'"
    mkdir -p "$DIR"
    DIR="$(cd "$DIR" && pwd)"
    if load_state; then
        [[ "$N" == "$n" ]] || die "$DIR holds a $N-member ensemble; stop it with --wipe, or use another --dir"
        [[ "$KIND" == "$kind" ]] || die "$DIR holds a $KIND ensemble; stop it with --wipe, or use another --dir"
        if [[ -n "$base" && "${CLIENT_PORTS%% *}" != "$base" ]]; then
            die "$DIR was set up with client ports $CLIENT_PORTS, not from --base-port $base; stop it with --wipe first"
        fi
        ((tls == 0 || TLS == 1)) || die "$DIR holds a plaintext ensemble; stop it with --wipe to start it with --tls"
        ((ctls == 0 || CLIENT_TLS == 1)) || die "$DIR holds an ensemble without secure client ports; stop it with --wipe to start it with --client-tls"
    else
        [[ -z "$(ls -A "$DIR" 2>/dev/null)" ]] || die "$DIR is not empty and holds no ensemble.env; use an empty --dir"
        write_configs "$n" "$base" "$kind" "$tls" "$ctls"
        load_state
    fi
    # The stores are made once, before any member starts. (A DIR whose tls/ was removed gets a new CA:
    # members still running keep the old one, so stop the whole ensemble first.)
    if ((TLS == 1 || CLIENT_TLS == 1)); then make_tls "$N"; fi
    if [[ "$KIND" == paddock ]]; then
        what="$(paddock_bin)"
    else
        command -v java >/dev/null || die "java not found (scripts/install-deps.sh --zookeeper)"
        what="$(bash "$ROOT/scripts/zookeeper.sh" classpath)" || die "no ZooKeeper jars (scripts/zookeeper.sh fetch)"
    fi
    k=1
    for p in $CLIENT_PORTS; do
        if [[ -n "$(member_pid "$k")" ]]; then
            log "member $k already running (pid $(member_pid "$k"))"
        else
            port_free "$p" || die "client port $p of member $k is taken by another process"
            start_member "$k" "$what"
            started+=("$k")
        fi
        k=$((k + 1))
    done
    deadline=$((SECONDS + ${ENSEMBLE_START_TIMEOUT:-60}))
    while true; do
        modes=() leaders=0 ok=1 k=1
        for p in $CLIENT_PORTS; do
            if [[ -z "$(member_pid "$k")" ]]; then
                tail -n 20 "$DIR/m$k/server.log" >&2 || true
                for s in "${started[@]+"${started[@]}"}"; do stop_member "$s"; done
                die "member $k exited during start-up (log: $DIR/m$k/server.log); stopped the members this run started"
            fi
            modes+=("$(mode_of "$p")")
            case "${modes[-1]}" in
                leader) leaders=$((leaders + 1)) ;;
                follower | observer) ;;
                *) ok=0 ;;
            esac
            k=$((k + 1))
        done
        ((ok == 1 && leaders == 1)) && break
        if ((SECONDS >= deadline)); then
            for s in "${started[@]+"${started[@]}"}"; do stop_member "$s"; done
            die "no single leader within ${ENSEMBLE_START_TIMEOUT:-60}s (modes: ${modes[*]}); stopped the members this run started (logs in $DIR/m*/server.log)"
        fi
        sleep 0.2
    done
    log "ensemble of $N ($KIND$( ((TLS == 1)) && echo ", quorum TLS")$( ((CLIENT_TLS == 1)) && echo ", secure client ports $SECURE_PORTS")) serving in $DIR; modes: ${modes[*]}"
    connect_string
}

stop_member() { # K: SIGTERM, then SIGKILL after the bound
    local k="$1" pid
    pid="$(member_pid "$k")"
    if [[ -z "$pid" ]]; then
        rm -f "$DIR/m$k/server.pid"
        return
    fi
    kill -TERM "$pid" 2>/dev/null || true
    kill -CONT "$pid" 2>/dev/null || true # a SIGSTOPped member must run to take the TERM
    local deadline=$((SECONDS + ${ENSEMBLE_STOP_TIMEOUT:-10}))
    while [[ -n "$(member_pid "$k")" ]] && ((SECONDS < deadline)); do sleep 0.1; done
    if [[ -n "$(member_pid "$k")" ]]; then
        log "member $k (pid $pid) ignored SIGTERM for ${ENSEMBLE_STOP_TIMEOUT:-10}s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
        while [[ -n "$(member_pid "$k")" ]]; do sleep 0.05; done
    fi
    rm -f "$DIR/m$k/server.pid"
    log "member $k stopped"
}

cmd_stop() {
    local wipe=0 k
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --dir) DIR="${2:?--dir needs a directory}"; shift ;;
            --wipe) wipe=1 ;;
            -h | --help) usage 0 ;;
            *) die "unknown argument $1" ;;
        esac
        shift
    done
    if ! load_state; then
        log "no ensemble in $DIR (no ensemble.env): nothing to stop"
        return 0
    fi
    # Members stop together: SIGTERM to all first, so none waits for another's bound.
    for ((k = 1; k <= N; k++)); do stop_member "$k" & done
    wait
    if ((wipe == 1)); then
        rm -rf "$DIR"
        log "removed $DIR"
    fi
}

cmd_status() {
    local k=1 p pid mode ok=1 leaders=0
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --dir) DIR="${2:?--dir needs a directory}"; shift ;;
            -h | --help) usage 0 ;;
            *) die "unknown argument $1" ;;
        esac
        shift
    done
    load_state || die "no ensemble in $DIR (no ensemble.env)"
    for p in $CLIENT_PORTS; do
        pid="$(member_pid "$k")"
        if [[ -z "$pid" ]]; then
            mode=down pid=-
        else
            mode="$(mode_of "$p")"
        fi
        case "$mode" in
            leader) leaders=$((leaders + 1)) ;;
            follower | observer) ;;
            *) ok=0 ;;
        esac
        echo "server.$k 127.0.0.1:$p pid $pid $mode"
        k=$((k + 1))
    done
    ((ok == 1 && leaders == 1))
}

DIR="${ENSEMBLE_DIR:-$ROOT/ensemble}"
cmd="${1:-}"
[[ $# -gt 0 ]] && shift
case "$cmd" in
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    status) cmd_status "$@" ;;
    connect)
        secure=""
        while [[ $# -gt 0 ]]; do
            case "$1" in
                --dir) DIR="${2:?--dir needs a directory}"; shift ;;
                --secure) secure=--secure ;;
                *) die "unknown argument $1" ;;
            esac
            shift
        done
        load_state || die "no ensemble in $DIR (no ensemble.env)"
        connect_string $secure
        ;;
    -h | --help | help | "") usage 0 ;;
    *) echo "ensemble.sh: error: unknown command '$cmd'" >&2; usage ;;
esac
