#!/usr/bin/env bash
# Quorum security: TLS and SASL between ensemble members, a rolling upgrade to TLS, certificate rotation,
# start-up refusals of security keys that are not implemented, and data-dir modes. Three members on
# 127.0.0.1, 127.0.0.2 and 127.0.0.3, each with its own certificate (certs.sh, made at run time), read
# from the same zoo.cfg files and stores by paddock and by Apache ZooKeeper 3.9. README.md lists the cases.
#
#   compat-tests/security/run.sh                        against paddock (PADDOCK_BIN, or a debug build)
#   compat-tests/security/run.sh --against-zookeeper    against Apache ZooKeeper 3.9 (QuorumPeerMain, the jars
#                                                       of scripts/zookeeper.sh): every case ZooKeeper supports
#   compat-tests/security/run.sh [...] -- GROUP...      only these groups: pem pkcs12 sasl rolling failclosed client
#                                                       tools admin
#
# One line per case: `PASS name`, `FAIL name: why`, or (against ZooKeeper) `STRICTER name: paddock refuses,
# ZooKeeper accepts` where ZooKeeper lets in a peer paddock must refuse (asserted: it counts as passed).
# Then the row `security | passed | failed | skipped` (compat-tests/lib.sh). At most one ensemble runs at a
# time; every process started is stopped on exit. KEEP_WORK=1 keeps the work dir (server logs, stores).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$HERE/../lib.sh"
compat_init security
compat_args "$@"
GROUPS_WANTED=("${PASS_ARGS[@]}")
((${#GROUPS_WANTED[@]})) || GROUPS_WANTED=(pem pkcs12 sasl rolling failclosed client tools admin)
for g in "${GROUPS_WANTED[@]}"; do
    [[ " pem pkcs12 sasl rolling failclosed client tools admin " == *" $g "* ]] || { echo "run.sh: unknown group '$g'" >&2; exit 2; }
done

declare -A MPID=()  # running member key (ensemble/name) -> pid
sec_cleanup() {
    local rc=$? key
    for key in "${!MPID[@]}"; do stop_member "$key"; done
    set +e # else (exit rc) would end the trap before compat_cleanup
    (exit "$rc")
    compat_cleanup
}
trap sec_cleanup EXIT

bash "$ROOT/scripts/install-deps.sh" >&2 || compat_fail "scripts/install-deps.sh failed"
PY="$ROOT/.venv/bin/python"
if [[ "$TARGET" == zookeeper ]]; then
    command -v java >/dev/null || compat_fail "java not found (apt-get install openjdk-17-jre-headless)"
    ZK_CP="$(bash "$ROOT/scripts/zookeeper.sh" classpath)" || compat_fail "no ZooKeeper jars (scripts/zookeeper.sh fetch)"
else
    BIN="$(compat_paddock_bin)" || compat_fail "could not build paddock"
fi
# zkCli needs ZooKeeper's jars against either server.
ZK_CLI_OK=1
bash "$ROOT/scripts/zookeeper.sh" fetch >/dev/null 2>&1 || ZK_CLI_OK=0

CERTS="$COMPAT_WORK/certs"
bash "$HERE/certs.sh" "$CERTS" || compat_fail "certs.sh failed"
STOREPASS="$(<"$CERTS/password")"
# The servers are started with the usual umask, so that modes the server does not set itself show.
umask 022

SUITE_START=$SECONDS
PASSED=0 FAILED=0 SKIPPED=0
declare -A SKIPS=() # reason -> count
pass() { echo "PASS $1"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL $1: $2"; FAILED=$((FAILED + 1)); }
stricter() { echo "STRICTER $1: paddock refuses, ZooKeeper accepts${2:+ ($2)}"; PASSED=$((PASSED + 1)); }
# zkbug NAME WHY: against ZooKeeper, a case where ZooKeeper 3.9.5 was measured to refuse what it should accept
# (a known ZooKeeper bug); asserted, so it counts as passed.
zkbug() { echo "ZKBUG $1: $2"; PASSED=$((PASSED + 1)); }
skip() { echo "SKIP $1: $2"; SKIPPED=$((SKIPPED + 1)); SKIPS[$2]=$((${SKIPS[$2]:-0} + 1)); }
note() { echo "  $*"; }
want() { [[ " ${GROUPS_WANTED[*]} " == *" $1 "* ]]; }

# --- members ---------------------------------------------------------------------------------------------
# An ensemble E has three members; member i listens on 127.0.0.i (client, peer and election ports). Every
# zoo.cfg of E (members, impostors) carries the same server lines, so paddock derives the same cluster id.
declare -A CPORT=() PPORT=() EPORT=() SERVERS=()

new_ensemble() { # name
    local e=$1 i ports
    mapfile -t ports < <(python3 - <<'EOF'
import socket
socks = []
for _ in range(9):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print("\n".join(str(s.getsockname()[1]) for s in socks))
EOF
)
    SERVERS[$e]=""
    for i in 1 2 3; do
        CPORT[$e:$i]=${ports[$((3 * i - 3))]}
        PPORT[$e:$i]=${ports[$((3 * i - 2))]}
        EPORT[$e:$i]=${ports[$((3 * i - 1))]}
        SERVERS[$e]+="server.$i=127.0.0.$i:${PPORT[$e:$i]}:${EPORT[$e:$i]}"$'\n'
    done
    mkdir -p "$COMPAT_WORK/$e"
}

client_of() { echo "127.0.0.$2:${CPORT[$1:$2]}"; } # ensemble i

# write_member ENSEMBLE I DIR EXTRA: DIR/zoo.cfg for member I of ENSEMBLE with EXTRA lines; an empty
# DIR/data with myid unless it exists.
write_member() {
    local e=$1 i=$2 dir=$3 extra=$4
    mkdir -p "$dir/data"
    [[ -f "$dir/data/myid" ]] || echo "$i" >"$dir/data/myid"
    cat >"$dir/zoo.cfg" <<EOF
tickTime=2000
initLimit=10
syncLimit=2
dataDir=$dir/data
clientPort=${CPORT[$e:$i]}
clientPortAddress=127.0.0.$i
4lw.commands.whitelist=*
admin.enableServer=false
$extra
${SERVERS[$e]}
EOF
}

# start_member KEY DIR [-Dk=v...]: starts a server on DIR/zoo.cfg (log DIR/server.log). The -D flags go to
# paddock's command line or to the JVM: the same words for both.
start_member() {
    local key=$1 dir=$2
    shift 2
    if [[ "$TARGET" == zookeeper ]]; then
        java -Xmx192m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dzookeeper.admin.enableServer=false \
            -Dzookeeper.log.dir="$dir" "$@" -cp "$ZK_CP" org.apache.zookeeper.server.quorum.QuorumPeerMain \
            "$dir/zoo.cfg" >>"$dir/server.log" 2>&1 </dev/null &
    else
        RUST_LOG="${RUST_LOG:-info}" "$BIN" serve --config "$dir/zoo.cfg" "$@" >>"$dir/server.log" 2>&1 </dev/null &
    fi
    MPID[$key]=$!
}

stop_member() { # key
    local pid=${MPID[$1]:-}
    [[ -n "$pid" ]] || return 0
    unset "MPID[$1]"
    {
        kill "$pid" || true
        for _ in $(seq 1 100); do kill -0 "$pid" || break; sleep 0.1; done
        kill -9 "$pid" || true
        wait "$pid" || true
    } 2>/dev/null
}

running() { [[ -n "${MPID[$1]:-}" ]] && kill -0 "${MPID[$1]}" 2>/dev/null; }

srvr() { # host:port
    timeout 2 bash -c 'exec 3<>/dev/tcp/'"${1%:*}"'/'"${1##*:}"' && printf srvr >&3 && cat <&3' 2>/dev/null || true
}
mode_of() { srvr "$1" | sed -n 's/^Mode: //p'; }
epoch_of() { # host:port: the high 32 bits of srvr's Zxid
    local z
    z="$(srvr "$1" | sed -n 's/^Zxid: //p')"
    [[ -n "$z" ]] && echo $((z >> 32))
}

# wait_serving ENSEMBLE SECONDS I...: until each member I says leader or follower.
wait_serving() {
    local e=$1 deadline=$((SECONDS + $2)) i m
    shift 2
    for i in "$@"; do
        until m="$(mode_of "$(client_of "$e" "$i")")"; [[ "$m" == leader || "$m" == follower ]]; do
            ((SECONDS < deadline)) || return 1
            sleep 0.2
        done
    done
}

leader_of() { # ensemble: the member that says leader
    local i
    for i in 1 2 3; do
        [[ "$(mode_of "$(client_of "$1" "$i")")" == leader ]] && { echo "$i"; return 0; }
    done
    return 1
}

# start_ensemble ENSEMBLE EXTRA_FN [-D...]: members 1-3 with the lines `EXTRA_FN i` prints; waits 90 s.
start_ensemble() {
    local e=$1 fn=$2 i
    shift 2
    for i in 1 2 3; do
        write_member "$e" "$i" "$COMPAT_WORK/$e/m$i" "$("$fn" "$i")"
        start_member "$e/m$i" "$COMPAT_WORK/$e/m$i" "$@"
    done
    wait_serving "$e" 90 1 2 3
}

stop_ensemble() { # ensemble
    local key
    for key in "${!MPID[@]}"; do [[ "$key" == "$1/"* ]] && stop_member "$key"; done
    return 0
}

log_tail() { # dir: the last server log lines, indented (for a FAIL's context)
    tail -n "${2:-8}" "$1/server.log" 2>/dev/null | sed 's/^/    | /' || true
}

# --- clients ---------------------------------------------------------------------------------------------
kz() { "$PY" "$HERE/kz.py" "$@"; }

serving_via() { # ensemble I...: writes through each member and reads every write back through each
    local e=$1 i hps=()
    shift
    for i in "$@"; do hps+=("$(client_of "$e" "$i")"); done
    kz serving "${hps[@]}"
}

new_marker() { echo "MARK$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"; }
has_marker() { grep -rqF --binary-files=text "$2" "$1"; } # dir marker

# --- stores ----------------------------------------------------------------------------------------------
pem_keys() { # keystore truststore: the quorum TLS lines with PEM stores
    printf '%s\n' "sslQuorum=true" "ssl.quorum.keyStore.location=$1" "ssl.quorum.keyStore.type=PEM" \
        "ssl.quorum.trustStore.location=$2" "ssl.quorum.trustStore.type=PEM" \
        "ssl.quorum.hostnameVerification=true" "ssl.quorum.clientAuth=need"
}
p12_keys() { # keystore truststore
    printf '%s\n' "sslQuorum=true" "ssl.quorum.keyStore.location=$1" "ssl.quorum.keyStore.type=PKCS12" \
        "ssl.quorum.keyStore.password=$STOREPASS" "ssl.quorum.trustStore.location=$2" \
        "ssl.quorum.trustStore.type=PKCS12" "ssl.quorum.trustStore.password=$STOREPASS"
}
pem_member() { pem_keys "$CERTS/m$1.pem" "$CERTS/trust-ca1.pem"; }

# The port a member's TLS listener is on: paddock's peers talk on the peer port only; ZooKeeper's election
# port is bound by every member, its peer (quorum) port by the leader only.
tls_port_of() { # ensemble i
    if [[ "$TARGET" == zookeeper ]]; then echo "127.0.0.$2:${EPORT[$1:$2]}"; else echo "127.0.0.$2:${PPORT[$1:$2]}"; fi
}

# tls_handshake ENSEMBLE I CERT CA [VERSION]: a TLS handshake at member I's TLS port presenting CERT (a
# certs.sh name) and verifying the member's certificate against CA; prints the protocol or "refused: why".
tls_handshake() {
    "$PY" "$HERE/probe.py" tls-version --port "$(tls_port_of "$1" "$2")" --cert "$CERTS/$3.crt" \
        --key "$CERTS/$3.key" --ca "$CERTS/$4.crt" --version "${5:-any}" || true
}
speaks_tls() { # ensemble cert ca: every member completes that handshake (else prints which did not)
    local i v
    for i in 1 2 3; do
        v="$(tls_handshake "$1" "$i" "$2" "$3")"
        [[ "$v" == TLS* ]] || { echo "member $i: $v"; return 1; }
    done
}
trust_rotated() { # ensemble: every member refuses a CA1 client certificate and accepts a CA2 one
    local i
    for i in 1 2 3; do
        [[ "$(tls_handshake "$1" "$i" m2 ca2)" == refused* && "$(tls_handshake "$1" "$i" m2-ca2 ca2)" == TLS* ]] || return 1
    done
}

# --- a refused (or, by ZooKeeper, accepted) peer -------------------------------------------------------
# impostor NAME ENSEMBLE I ZK_EXPECT EXTRA [-D...]: member I is stopped; a server with EXTRA as its
# security lines takes its place (its address, its id) with an empty data dir, after a znode holding a
# fresh marker was written. After 20 s: the other two still serve (writes through both, read back), the
# impostor does not say leader or follower, and no file under its data dir holds the marker.
# ZK_EXPECT=accepted: ZooKeeper lets this impostor in; asserted (it follows, and holds the marker).
# How long an impostor gets to join: four times what the positive control (a real member with an empty
# data dir) took to join and hold the marker, at least 8 s and at most 20 s (20 s before the control ran).
CONTROL_JOIN_S=""
impostor_wait() {
    local w=20
    if [[ -n "$CONTROL_JOIN_S" ]]; then
        w=$((CONTROL_JOIN_S * 4))
        ((w >= 8)) || w=8
        ((w <= 20)) || w=20
    fi
    echo "$w"
}
impostor() {
    local name=$1 e=$2 i=$3 zk_expect=$4 extra=$5 mark dir mode others=() j why="" srv found=0 alive
    shift 5
    for j in 1 2 3; do [[ $j == "$i" ]] || others+=("$j"); done
    mark="$(new_marker)"
    if ! why="$(kz put "$(client_of "$e" "${others[0]}")" "/sec/marker-$name" "$mark")"; then
        fail "$name" "could not write the marker before starting the impostor: $why"
        return
    fi
    why=""
    stop_member "$e/m$i"
    dir="$COMPAT_WORK/$e/$name"
    rm -rf "$dir"
    write_member "$e" "$i" "$dir" "$extra"
    start_member "$e/impostor-$name" "$dir" "$@"
    sleep "$(impostor_wait)"
    mode="$(mode_of "$(client_of "$e" "$i")")"
    alive=yes
    running "$e/impostor-$name" || alive="no (it exited)"
    srv="$(serving_via "$e" "${others[@]}")" || why="the ensemble stopped serving: $srv"
    has_marker "$dir/data" "$mark" && found=1
    stop_member "$e/impostor-$name"
    note "$name: impostor mode '${mode:-none}', running $alive, marker in its data dir: $( ((found)) && echo yes || echo no)"
    if [[ "$TARGET" == zookeeper && "$zk_expect" == accepted ]]; then
        if [[ -z "$why" && "$mode" == follower && $found == 1 ]]; then
            stricter "$name" "ZooKeeper 3.9 lets it follow and sends it the tree"
        else
            fail "$name" "ZooKeeper 3.9.5 was measured to accept this peer; now: mode '${mode:-none}', marker found: $found${why:+; $why}"
        fi
        return
    fi
    if [[ -n "$why" ]]; then
        fail "$name" "$why"
        for j in "${others[@]}"; do note "m$j:"; log_tail "$COMPAT_WORK/$e/m$j" 6; done
    elif [[ "$mode" == leader || "$mode" == follower ]]; then
        fail "$name" "the impostor was let in: it serves as $mode"
    elif ((found)); then
        fail "$name" "the impostor's data dir holds the tree (the marker is in it)"
    elif [[ -n "$CONTROL_WHY" ]]; then
        fail "$name" "refused, but $CONTROL_WHY"
    else
        pass "$name"
    fi
}
# Set when a group's positive control for the impostor checks failed: their refusals then count as FAIL.
CONTROL_WHY=""

# --- group pem: a TLS ensemble with PEM stores, its clients, strangers and impostors --------------------
group_pem() {
    local e=pem i mark t0 ok why leader got fp="" cid="" stranger_ports tag out name
    new_ensemble "$e"
    if ! start_ensemble "$e" pem_member; then
        fail tls-ensemble-pem "the three members did not all serve within 90 s"
        for i in 1 2 3; do note "m$i:"; log_tail "$COMPAT_WORK/$e/m$i" 6; done
        stop_ensemble "$e"
        return
    fi
    if ! why="$(serving_via "$e" 1 2 3)"; then
        fail tls-ensemble-pem "$why"
    elif ! why="$(speaks_tls "$e" m2 ca1)"; then
        fail tls-ensemble-pem "the ensemble serves, but not over TLS: $why"
    else
        pass tls-ensemble-pem
    fi

    # zkCli (ZooKeeper's own client) through each member: the client port stays plaintext.
    if ((ZK_CLI_OK)); then
        ok=1 why=""
        tag="$(new_marker)"
        for i in 1 2 3; do
            out="$(printf 'create /sec/zkcli-%s-%s %s\nget /sec/zkcli-%s-%s\nquit\n' "$tag" "$i" "cli$i" "$tag" "$i" |
                timeout 60 bash "$ROOT/scripts/zookeeper.sh" cli -- -server "$(client_of "$e" "$i")" 2>&1)" || true
            if ! grep -qx "cli$i" <<<"$out"; then
                ok=0 why="member $i: zkCli did not read back what it created: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
                break
            fi
        done
        if ((ok)); then pass zkcli-through-each-member; else fail zkcli-through-each-member "$why"; fi
    else
        skip zkcli-through-each-member "ZooKeeper's jars could not be fetched (scripts/zookeeper.sh fetch)"
    fi

    # A stranger at the peer ports, with a member's certificate as the positive control.
    leader="$(leader_of "$e" || echo 1)"
    stranger_ports=""
    for i in 1 2 3; do stranger_ports+="${stranger_ports:+,}$i@127.0.0.$i:${PPORT[$e:$i]},$i@127.0.0.$i:${EPORT[$e:$i]}"; done
    if [[ "$TARGET" == zookeeper ]]; then
        got="$("$PY" "$HERE/probe.py" member --target zookeeper --port "127.0.0.1:${EPORT[$e:1]}" \
            --cert "$CERTS/m1.crt" --key "$CERTS/m1.key" --ca "$CERTS/ca1.crt" --expect-id "$leader")" && ok=1 || ok=0
    else
        cid="$(sed -n 's/^cluster_id=//p' "$COMPAT_WORK/$e/m1/data/paddock/cluster" 2>/dev/null || true)"
        got="$("$PY" "$HERE/probe.py" member --port "127.0.0.2:${PPORT[$e:2]}" --expect-id 2 \
            --cert "$CERTS/m1.crt" --key "$CERTS/m1.key" --ca "$CERTS/ca1.crt")" && ok=1 || ok=0
        fp="$(sed -n 's/.*fingerprint=//p' <<<"$got")"
    fi
    grep -v '^cluster_id=' <<<"$got" || true
    out="$("$PY" "$HERE/probe.py" stranger --target "$TARGET" --ports "$stranger_ports" \
        ${cid:+--cluster-id "$cid"} ${fp:+--fingerprint "$fp"} --member-id 1 --member-id 2 --member-id 3)" &&
        why="" || why="a stranger learned something (LEAK lines above)"
    echo "$out"
    if [[ "$TARGET" == paddock && -z "$cid" ]]; then
        fail stranger-probe "no cluster id in $e/m1/data/paddock/cluster to look for"
    elif ((!ok)); then
        fail stranger-probe "the positive control failed: a member's certificate got no answer that names the cluster, so the stranger's silence proves nothing${why:+; also: $why}"
    elif [[ -n "$why" ]]; then
        fail stranger-probe "$why"
    else
        pass stranger-probe
    fi

    # The accepting side's own check, whatever the connecting process does: over TLS, links claiming to
    # be member 3 are opened to member 1 with each certificate. Member 3's own is the positive control.
    local cert want_pd want_zk res control=""
    for cert in m3:accepted:accepted m2:refused:accepted client:refused:accepted m3-caX:refused:refused \
        m3-expired:refused:refused; do
        IFS=: read -r cert want_pd want_zk <<<"$cert"
        res="$("$PY" "$HERE/probe.py" claim --target "$TARGET" --port "$(tls_port_of "$e" 1)" --claim 3 --to 1 \
            --cert "$CERTS/$cert.crt" --key "$CERTS/$cert.key" --ca "$CERTS/ca1.crt" \
            ${cid:+--cluster-id "$cid"} ${fp:+--fingerprint "$fp"})" || true
        name="claims-id3-with-$cert-cert"
        [[ $cert == m3 ]] && name="claims-id3-with-its-own-cert"
        if [[ $cert == m3 && "$res" != accepted* ]]; then
            control="the positive control claims-id3-with-its-own-cert failed, so a refusal proves nothing"
        fi
        if [[ $cert != m3 && -n "$control" ]]; then
            fail "$name" "$res, but $control"
        elif [[ "$TARGET" == zookeeper && "$want_zk" != "$want_pd" ]]; then
            if [[ "$res" == accepted* ]]; then stricter "$name" "ZooKeeper 3.9 accepts the link: $res"; else fail "$name" "ZooKeeper 3.9.5 was measured to accept this link; now: $res"; fi
        elif [[ "$res" == "$want_pd"* ]]; then
            pass "$name"
        else
            fail "$name" "want $want_pd, got $res"
        fi
    done

    # Positive control of every impostor check: the real member 3, data dir emptied, joins and receives
    # the tree (the marker shows up under its data dir): so the data dir of a member that joined holds it.
    mark="$(new_marker)"
    if why="$(kz put "$(client_of "$e" 1)" /sec/marker-rejoin "$mark")"; then
        stop_member "$e/m3"
        rm -rf "$COMPAT_WORK/$e/m3/data"
        write_member "$e" 3 "$COMPAT_WORK/$e/m3" "$(pem_member 3)"
        t0=$SECONDS
        start_member "$e/m3" "$COMPAT_WORK/$e/m3"
        ok=0
        if wait_serving "$e" 60 3; then
            for _ in $(seq 1 40); do
                has_marker "$COMPAT_WORK/$e/m3/data" "$mark" && { ok=1; break; }
                sleep 0.5
            done
        fi
        if ((ok)); then
            CONTROL_JOIN_S=$((SECONDS - t0))
            note "member-rejoins-empty: joined and held the marker $CONTROL_JOIN_S s after its start; impostors get $(impostor_wait) s"
            pass member-rejoins-empty
        else
            fail member-rejoins-empty "the real member 3 with an empty data dir did not join and receive the tree within 80 s"
            log_tail "$COMPAT_WORK/$e/m3"
            CONTROL_WHY="the positive control member-rejoins-empty failed, so a refusal proves nothing"
        fi
    else
        fail member-rejoins-empty "could not write the marker: $why"
        CONTROL_WHY="the positive control member-rejoins-empty failed, so a refusal proves nothing"
    fi

    impostor impostor-plaintext "$e" 3 refused ""
    impostor impostor-other-ca "$e" 3 refused "$(pem_keys "$CERTS/m3-caX.pem" "$CERTS/trust-ca1+caX.pem")"
    impostor impostor-expired-cert "$e" 3 refused "$(pem_keys "$CERTS/m3-expired.pem" "$CERTS/trust-ca1.pem")"
    impostor impostor-member2-cert-as-3 "$e" 3 accepted "$(pem_keys "$CERTS/m2.pem" "$CERTS/trust-ca1.pem")"
    impostor impostor-client-cert "$e" 3 "$ZK_CLIENT_CERT" "$(pem_keys "$CERTS/client.pem" "$CERTS/trust-ca1.pem")"

    stop_ensemble "$e"
    file_modes "$e"
}
# What ZooKeeper 3.9.5 does with a CA-signed client certificate (EKU clientAuth only, no SAN) as member 3.
ZK_CLIENT_CERT=accepted

# --- file modes (paddock only) ---------------------------------------------------------------------------
file_modes() { # ensemble: after the members ran under umask 022
    local e=$1 bad="" other="" i p m
    if [[ "$TARGET" == zookeeper ]]; then
        skip data-dir-modes "paddock only: ZooKeeper leaves its files to the umask"
        return
    fi
    for i in 1 2; do
        while IFS=' ' read -r m p; do
            case "$p" in
                */data/myid) other+=" $m:${p#"$COMPAT_WORK/"}" ;; # written by the suite, not the server
                # RocksDB's own files, directly in its directory: created by the library.
                */raftdb/CURRENT | */raftdb/IDENTITY | */raftdb/LOCK | */raftdb/LOG* | */raftdb/MANIFEST-* | \
                    */raftdb/OPTIONS-* | */raftdb/[0-9]*.log | */raftdb/[0-9]*.sst | */raftdb/[0-9]*.blob)
                    [[ "$m" == 600 ]] || other+=" $m:${p##*/}" ;;
                *) if [[ -d "$p" && "$m" != 700 ]] || [[ -f "$p" && "$m" != 600 ]]; then bad+=" $m:${p#"$COMPAT_WORK/"}"; fi ;;
            esac
        done < <(find "$COMPAT_WORK/$e/m$i/data" -mindepth 1 -printf '%m %p\n')
    done
    [[ -z "$other" ]] || note "data-dir-modes: not judged (RocksDB's own files, myid):$(tr ' ' '\n' <<<"$other" | sort -u | head -n 12 | tr '\n' ' ')"
    if [[ -z "$bad" ]]; then
        pass data-dir-modes
    else
        fail data-dir-modes "under umask 022, want directories 0700 and files 0600; got$(head -c 600 <<<"$bad")"
    fi
}

# --- group pkcs12: PKCS12 stores, protocol keys, rotation without restart -------------------------------
p12_member() { # i: keystore.p12 and truststore.p12 in the member's own dir, replaced during rotation
    local d="$COMPAT_WORK/p12/m$1"
    mkdir -p "$d"
    [[ -f "$d/keystore.p12" ]] || cp "$CERTS/m$1.p12" "$d/keystore.p12"
    [[ -f "$d/truststore.p12" ]] || cp "$CERTS/trust-ca1+ca2.p12" "$d/truststore.p12"
    p12_keys "$d/keystore.p12" "$d/truststore.p12"
    printf '%s\n' "sslQuorumReloadCertFiles=true" "ssl.quorum.protocol=TLSv1.2" "ssl.quorum.enabledProtocols=TLSv1.2" \
        "ssl.quorum.ciphersuites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
}

replace_file() { # src dst: atomically, by rename
    cp "$1" "$2.new"
    mv -f "$2.new" "$2"
}

group_pkcs12() {
    local e=p12 i why="" tls_ok=0 v13 v12 leader0 epoch0 epoch1 f1="" f2="" ok1=0 ok2=0 got t0 reload_s="" trust_s=""
    local stop_file="$COMPAT_WORK/p12/watch.stop" watcher
    new_ensemble "$e"
    if ! start_ensemble "$e" p12_member; then
        fail tls-ensemble-pkcs12 "the three members did not all serve within 90 s"
        for i in 1 2 3; do note "m$i:"; log_tail "$COMPAT_WORK/$e/m$i" 6; done
        stop_ensemble "$e"
        return
    fi
    if ! why="$(serving_via "$e" 1 2 3)"; then
        fail tls-ensemble-pkcs12 "$why"
    elif ! why="$(speaks_tls "$e" m2 ca1)"; then
        fail tls-ensemble-pkcs12 "the ensemble serves, but not over TLS: $why"
    else
        tls_ok=1
        pass tls-ensemble-pkcs12
    fi

    # ssl.quorum.protocol/enabledProtocols/ciphersuites: TLS 1.2 only, so a TLS 1.3 client (with a member's
    # certificate) is refused and a TLS 1.2 one is not.
    v13="$(tls_handshake "$e" 1 m2 ca1 TLSv1.3)"
    v12="$(tls_handshake "$e" 1 m2 ca1 TLSv1.2)"
    if [[ "$v13" == refused* && "$v12" == TLSv1.2 ]]; then
        pass tls-protocol-keys
    else
        fail tls-protocol-keys "with ssl.quorum.enabledProtocols=TLSv1.2: a TLS 1.3 client got '$v13' (want refused), a TLS 1.2 client '$v12' (want TLSv1.2)"
    fi

    # Rotation with sslQuorumReloadCertFiles=true. The leader is watched every 50 ms from here on.
    leader0="$(leader_of "$e")" || leader0=""
    epoch0="$(epoch_of "$(client_of "$e" "${leader0:-1}")")"
    for i in 1 2 3; do
        [[ $i == "$leader0" ]] && continue
        if [[ -z "$f1" ]]; then f1=$i; else f2=$i; fi
    done
    rm -f "$stop_file"
    "$PY" "$HERE/load.py" run --writers 0 --connect "$(client_of "$e" 1),$(client_of "$e" 2),$(client_of "$e" 3)" \
        --out "$COMPAT_WORK/p12/watch.json" --stop-file "$stop_file" &
    watcher=$!
    # 1. Every key store file is replaced by its CA2 twin: without a restart, each member's new links
    #    present the CA2 certificate (a client trusting CA2 only completes the handshake).
    for i in 1 2 3; do replace_file "$CERTS/m$i-ca2.p12" "$COMPAT_WORK/p12/m$i/keystore.p12"; done
    t0=$SECONDS
    until speaks_tls "$e" m2-ca2 ca2 >/dev/null; do
        ((SECONDS - t0 < 15)) || break
        sleep 0.5
    done
    speaks_tls "$e" m2-ca2 ca2 >/dev/null && reload_s=$((SECONDS - t0))
    # 2. A follower restarted now presents its CA2 certificate; the others verify it with the two-CA stores.
    stop_member "$e/m$f1"
    start_member "$e/m$f1" "$COMPAT_WORK/$e/m$f1"
    wait_serving "$e" 60 "$f1" && ok1=1
    # 3. CA1 leaves every trust store: a client certificate from CA1 is refused, one from CA2 accepted.
    for i in 1 2 3; do replace_file "$CERTS/trust-ca2.p12" "$COMPAT_WORK/p12/m$i/truststore.p12"; done
    t0=$SECONDS
    until trust_rotated "$e"; do
        ((SECONDS - t0 < 15)) || break
        sleep 0.5
    done
    trust_rotated "$e" && trust_s=$((SECONDS - t0))
    # 4. The other follower, restarted, trusts CA2 only: its links work only because the leader presents
    #    its CA2 certificate on new links.
    stop_member "$e/m$f2"
    start_member "$e/m$f2" "$COMPAT_WORK/$e/m$f2"
    wait_serving "$e" 60 "$f2" && ok2=1
    sleep 1
    touch "$stop_file"
    wait "$watcher" || true
    epoch1="$(epoch_of "$(client_of "$e" "${leader0:-1}")")"

    if [[ -n "$reload_s" ]]; then
        note "rotation-reloads-key-store: every member presented its CA2 certificate ${reload_s} s after the files were replaced"
        pass rotation-reloads-key-store
    else
        fail rotation-reloads-key-store "15 s after its key store file was replaced, a member still does not present the new (CA2) certificate: $(speaks_tls "$e" m2-ca2 ca2)"
    fi
    if [[ -n "$trust_s" ]]; then
        note "rotation-reloads-trust-store: CA1 refused, CA2 accepted by every member ${trust_s} s after the files were replaced"
        pass rotation-reloads-trust-store
    else
        fail rotation-reloads-trust-store "15 s after CA1 left the trust store files, a member still accepts a CA1 client certificate or refuses a CA2 one"
    fi
    if ((ok1 && ok2)) && why="$(serving_via "$e" 1 2 3)"; then
        pass rotation-restarted-members-rejoin
    else
        fail rotation-restarted-members-rejoin "member $f1 (CA2 key store, two-CA trust) rejoined: $ok1; member $f2 (CA2 key store, CA2-only trust) rejoined: $ok2${why:+; $why}"
        log_tail "$COMPAT_WORK/$e/m$f2"
    fi
    got="$("$PY" - "$COMPAT_WORK/p12/watch.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(" ".join(r["leaders"]), "|", " ".join(map(str, r["gaps_ms"])))
EOF
)"
    note "rotation: leaders seen in turn: ${got%%|*}| intervals without a leader (ms):${got#*|}; zxid epoch $epoch0 -> $epoch1"
    if ((!tls_ok)); then
        fail rotation-open-links-stay-up "means nothing without quorum TLS (tls-ensemble-pkcs12 failed)"
    elif [[ -n "$leader0" && "${got%% |*}" == "127.0.0.$leader0:${CPORT[$e:$leader0]}" && "${got#*| }" == "" && "$epoch0" == "$epoch1" ]]; then
        pass rotation-open-links-stay-up
    else
        fail rotation-open-links-stay-up "the leader changed or was missing during the rotation (want member ${leader0:-?} throughout, no interval without a leader, the same epoch)"
    fi
    # A member that still presents its CA1 certificate is now refused by every trust store.
    ((ok1 && ok2)) || CONTROL_WHY="restarted members did not rejoin either (rotation-restarted-members-rejoin)"
    impostor rotation-ca1-cert-refused "$e" "$f1" refused \
        "$(p12_keys "$CERTS/m$f1.p12" "$CERTS/trust-ca1+ca2.p12")"
    stop_ensemble "$e"
}

# --- group sasl: quorum SASL (DIGEST-MD5, JAAS sections QuorumServer and QuorumLearner) ------------------
# ZooKeeper 3.9 runs in FIPS mode unless told otherwise (zookeeper.fips-mode, default true), and in FIPS
# mode its quorum learner refuses DIGEST-MD5, the mechanism of DigestLoginModule: fips-mode=false (a zoo.cfg
# key ZooKeeper turns into that property) makes quorum SASL work there. It asks for less, so paddock may
# ignore it.
sasl_keys() {
    printf '%s\n' "fips-mode=false" "quorum.auth.enableSasl=true" "quorum.auth.learnerRequireSasl=true" \
        "quorum.auth.serverRequireSasl=true" "quorum.auth.learner.saslLoginContext=QuorumLearner" \
        "quorum.auth.server.saslLoginContext=QuorumServer"
}

jaas() { # file learner-password
    cat >"$1" <<EOF
QuorumServer {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_test="secret";
};
QuorumLearner {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="test"
    password="$2";
};
EOF
}

group_sasl() {
    local e=sasl i why mark out cid=""
    new_ensemble "$e"
    jaas "$COMPAT_WORK/$e/jaas.conf" secret
    jaas "$COMPAT_WORK/$e/jaas-wrong.conf" wrong
    if ! start_ensemble "$e" sasl_keys "-Djava.security.auth.login.config=$COMPAT_WORK/$e/jaas.conf"; then
        fail sasl-ensemble "the three members did not all serve within 90 s"
        for i in 1 2 3; do note "m$i:"; log_tail "$COMPAT_WORK/$e/m$i" 6; done
        stop_ensemble "$e"
        return
    fi
    if why="$(serving_via "$e" 1 2 3)"; then pass sasl-ensemble; else fail sasl-ensemble "$why"; fi

    # Without TLS the peer port is plaintext, but a peer that has not authenticated learns nothing.
    local ports=""
    for i in 1 2 3; do ports+="${ports:+,}$i@127.0.0.$i:${PPORT[$e:$i]},$i@127.0.0.$i:${EPORT[$e:$i]}"; done
    [[ "$TARGET" == paddock ]] && cid="$(sed -n 's/^cluster_id=//p' "$COMPAT_WORK/$e/m1/data/paddock/cluster" 2>/dev/null || true)"
    if out="$("$PY" "$HERE/probe.py" stranger --target "$TARGET" --ports "$ports" ${cid:+--cluster-id "$cid"} \
        --member-id 1 --member-id 2 --member-id 3)"; then
        why=""
    else
        why="a stranger learned something (LEAK lines above)"
    fi
    echo "$out"
    if [[ "$TARGET" == paddock && -z "$cid" ]]; then
        fail stranger-probe-sasl "no cluster id in $e/m1/data/paddock/cluster to look for"
    elif [[ -n "$why" ]]; then
        fail stranger-probe-sasl "$why"
    else
        pass stranger-probe-sasl
    fi

    # The marker check's positive control here: a member's data dir holds a marker written through it.
    mark="$(new_marker)"
    kz put "$(client_of "$e" 1)" /sec/marker-sasl-control "$mark" >/dev/null || true
    sleep 1
    if ! has_marker "$COMPAT_WORK/$e/m2/data" "$mark"; then
        fail sasl-wrong-password "the positive control failed: member 2's data dir does not hold a marker written through member 1"
    else
        impostor sasl-wrong-password "$e" 3 refused "$(sasl_keys)" "-Djava.security.auth.login.config=$COMPAT_WORK/$e/jaas-wrong.conf"
    fi
    stop_ensemble "$e"
}

# --- group rolling: plaintext -> portUnification -> sslQuorum -> TLS only, under load --------------------
roll_stage=0
roll_member() { # i: the member's lines for the current stage
    case $roll_stage in
        0) ;;
        1) printf '%s\n' "portUnification=true" "ssl.quorum.keyStore.location=$CERTS/m$1.pem" \
            "ssl.quorum.keyStore.type=PEM" "ssl.quorum.trustStore.location=$CERTS/trust-ca1.pem" \
            "ssl.quorum.trustStore.type=PEM" ;;
        2) printf '%s\n' "portUnification=true"; pem_member "$1" ;;
        3) pem_member "$1" ;;
    esac
}

group_rolling() {
    local e=roll i why stage stop_file="$COMPAT_WORK/roll/load.stop" load ok=1 connect max_gap t0
    new_ensemble "$e"
    roll_stage=0
    if ! start_ensemble "$e" roll_member; then
        fail rolling-upgrade "the plaintext ensemble did not serve within 90 s"
        stop_ensemble "$e"
        return
    fi
    connect="$(client_of "$e" 1),$(client_of "$e" 2),$(client_of "$e" 3)"
    # The end state must be TLS only; the same stranger's probe at the plaintext start is its positive
    # control (a plaintext ensemble answers it: paddock with its hello, ZooKeeper with its vote).
    local ports="" cid="" leak0 leak3
    for i in 1 2 3; do ports+="${ports:+,}$i@127.0.0.$i:${PPORT[$e:$i]},$i@127.0.0.$i:${EPORT[$e:$i]}"; done
    [[ "$TARGET" == paddock ]] && cid="$(sed -n 's/^cluster_id=//p' "$COMPAT_WORK/$e/m1/data/paddock/cluster" 2>/dev/null || true)"
    roll_stranger() {
        "$PY" "$HERE/probe.py" stranger --target "$TARGET" --ports "$ports" ${cid:+--cluster-id "$cid"} \
            --member-id 1 --member-id 2 --member-id 3 >"$COMPAT_WORK/$e/stranger-$1.txt" && echo no || echo yes
    }
    leak0="$(roll_stranger plaintext)"
    # One failover: ZooKeeper's followers give up on a leader after syncLimit ticks, and so do paddock's
    # (its election timeout is syncLimit x tickTime, randomised up to a quarter more: 5 s here).
    if [[ "$TARGET" == zookeeper ]]; then max_gap=$((2 * 2000 * 2)); else max_gap=$((2 * 2000 * 2 * 5 / 4)); fi
    "$PY" "$HERE/load.py" run --connect "$connect" --out "$COMPAT_WORK/roll/load.json" --stop-file "$stop_file" &
    load=$!
    sleep 3
    t0=$SECONDS
    for stage in 1 2 3; do
        roll_stage=$stage
        for i in 1 2 3; do
            stop_member "$e/m$i"
            write_member "$e" "$i" "$COMPAT_WORK/$e/m$i" "$(roll_member "$i")"
            start_member "$e/m$i" "$COMPAT_WORK/$e/m$i"
            if ! wait_serving "$e" 60 1 2 3; then
                ok=0 why="after member $i restarted at stage $stage, the ensemble did not serve within 60 s"
                break 2
            fi
            sleep 1
        done
    done
    note "rolling-upgrade: 9 restarts in $((SECONDS - t0)) s"
    leak3="$(roll_stranger tls-only)"
    sleep 2
    touch "$stop_file"
    wait "$load" || true
    if ((ok)) && why="$("$PY" "$HERE/load.py" verify --members "$connect" --result "$COMPAT_WORK/roll/load.json" --max-gap-ms "$max_gap")"; then
        echo "$why"
        pass rolling-upgrade
    else
        echo "$why"
        fail rolling-upgrade "acknowledged creates lost, a leaderless interval over ${max_gap} ms, or a stage that did not serve (above)"
        for i in 1 2 3; do note "m$i:"; log_tail "$COMPAT_WORK/$e/m$i" 4; done
    fi
    if [[ "$leak0" == yes && "$leak3" == no ]]; then
        pass rolling-upgrade-ends-tls-only
    elif [[ "$leak0" != yes ]]; then
        fail rolling-upgrade-ends-tls-only "the positive control failed: a stranger learned nothing from the plaintext ensemble either$([[ "$TARGET" == paddock && -z "$cid" ]] && echo " (no cluster id in m1's data dir)")"
    else
        grep LEAK "$COMPAT_WORK/$e/stranger-tls-only.txt" | head -n 4
        fail rolling-upgrade-ends-tls-only "after the last stage (sslQuorum=true, portUnification=false) a plaintext or certificate-less peer still learns something"
    fi
    stop_ensemble "$e"
}

# --- group failclosed: keys that ask for protection paddock does not give (paddock only) -----------------
fc_name() { if [[ "$1" == JKS ]]; then echo "fail-closed ssl.quorum.keyStore.type=JKS"; else echo "fail-closed $1"; fi; }
group_failclosed() {
    local cases=(
        "secureClientPort=2281|secureClientPort"
        "ssl.quorum.crl=true|ssl.quorum.crl"
        "ssl.quorum.ocsp=true|ssl.quorum.ocsp"
        "authProvider.1=com.example.Unknown|authProvider.1"
        "DigestAuthenticationProvider.digestAlg=SHA3-256|DigestAuthenticationProvider.digestAlg"
        "DigestAuthenticationProvider.enabled=false|DigestAuthenticationProvider.enabled"
        "ssl.quorum.clientAuth=none|ssl.quorum.clientAuth"
        "ssl.quorum.clientAuth=want|ssl.quorum.clientAuth"
        "ssl.quorum.context.supplier.class=x.Y|ssl.quorum.context.supplier.class"
        "JKS|ssl.quorum.keyStore"
    )
    local n=${#cases[@]} k line key dir rc name extra pids=() e
    if [[ "$TARGET" == zookeeper ]]; then
        for ((k = 0; k < n; k++)); do skip "$(fc_name "${cases[k]%%|*}")" "paddock only: ZooKeeper implements these keys"; done
        skip fail-closed-harmless-key-starts "paddock only: ZooKeeper implements these keys"
        return
    fi
    # All at once, each with its own ports: a server that accepts the key runs until the 10 s timeout.
    for ((k = 0; k <= n; k++)); do
        e="fc$k"
        new_ensemble "$e"
        dir="$COMPAT_WORK/$e/m1"
        if ((k == n)); then
            extra="ssl.quorum.handshakeDetectionTimeoutMillis=5000"
        elif [[ "${cases[k]%%|*}" == JKS ]]; then
            extra="$(pem_member 1 | grep -v '^ssl.quorum.keyStore')"$'\n'"ssl.quorum.keyStore.location=$CERTS/m1.jks"$'\n'"ssl.quorum.keyStore.type=JKS"$'\n'"ssl.quorum.keyStore.password=$STOREPASS"
        else
            extra="$(pem_member 1)"$'\n'"${cases[k]%%|*}"
        fi
        write_member "$e" 1 "$dir" "$extra"
        (
            set +e
            RUST_LOG=info timeout 10 "$BIN" serve --config "$dir/zoo.cfg" >"$dir/stdout" 2>"$dir/stderr" </dev/null
            echo $? >"$dir/rc"
        ) &
        pids+=($!)
    done
    wait "${pids[@]}" 2>/dev/null || true
    for ((k = 0; k < n; k++)); do
        dir="$COMPAT_WORK/fc$k/m1"
        line="${cases[k]%%|*}" key="${cases[k]##*|}"
        name="$(fc_name "$line")"
        rc="$(cat "$dir/rc" 2>/dev/null || echo '?')"
        if [[ "$rc" == 124 ]]; then
            fail "$name" "still running after 10 s: the key was accepted"
        elif [[ "$rc" == 0 ]]; then
            fail "$name" "exited 0"
        elif ! grep -qF "$key" "$dir/stderr"; then
            fail "$name" "exited $rc, but stderr does not name $key: $(tail -n 1 "$dir/stderr" | cut -c1-200)"
        elif [[ "$line" == JKS ]] && ! grep -q keytool "$dir/stderr"; then
            fail "$name" "exited $rc naming $key, but the message does not give the keytool conversion command"
        else
            pass "$name"
        fi
    done
    rc="$(cat "$COMPAT_WORK/fc$n/m1/rc" 2>/dev/null || echo '?')"
    # The positive control: the same member config with a harmless key runs (alone, it waits for its
    # peers) until the timeout stops it.
    if [[ "$rc" == 124 ]]; then
        pass fail-closed-harmless-key-starts
    else
        fail fail-closed-harmless-key-starts "ssl.quorum.handshakeDetectionTimeoutMillis=5000 and the same TLS keys: exited $rc within 10 s: $(grep -m1 -i error "$COMPAT_WORK/fc$n/m1/stderr" | cut -c1-200)"
    fi
}

# --- group client: the client port's TLS and x509 identities, one standalone server ---------------------
# The server listens on 127.0.0.1: clientPort (plaintext), secureClientPort (TLS) and the AdminServer; its key
# store is `server` (ca1; SAN IP:127.0.0.1 and DNS:localhost), its trust store ca1's; X509AuthenticationProvider.superUser is zk-admin.
# Every client runs against both targets from the same files; the Java clients (ZooKeeper 3.9.5's client,
# zkCli, Curator 5.9) come from compat-tests/java's Maven dependencies.
ALICE='CN=alice smith,OU=dev,O=Example\, Inc.,C=DE'
ADMIN='CN=zk-admin,O=paddock tests'

# client_cfg DIR EXTRA: a standalone zoo.cfg on the ports of ensemble `cl` (client, secure = its peer port,
# admin = its election port), the stores in DIR (server.pem, trust.pem: replaced during rotation).
client_cfg() {
    local dir=$1
    mkdir -p "$dir/data"
    [[ -f "$dir/server.pem" ]] || cp "$CERTS/server.pem" "$dir/server.pem"
    [[ -f "$dir/trust.pem" ]] || cp "$CERTS/trust-ca1.pem" "$dir/trust.pem"
    cat >"$dir/zoo.cfg" <<EOF
tickTime=2000
dataDir=$dir/data
clientPort=${CPORT[cl:1]}
clientPortAddress=127.0.0.1
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
4lw.commands.whitelist=*
admin.enableServer=true
admin.serverAddress=127.0.0.1
admin.serverPort=${EPORT[cl:1]}
ssl.keyStore.location=$dir/server.pem
ssl.keyStore.type=PEM
ssl.trustStore.location=$dir/trust.pem
ssl.trustStore.type=PEM
X509AuthenticationProvider.superUser=$ADMIN
$2
EOF
}

# client_server NAME EXTRA [ARG...]: stops the group's server, starts one on a fresh dir with EXTRA (and the
# -D ARGs); waits for srvr.
client_server() {
    local name=$1 dir="$COMPAT_WORK/cl/$1" deadline
    stop_member cl/server
    rm -rf "$dir"
    client_cfg "$dir" "$2"
    start_member cl/server "$dir" "${@:3}"
    deadline=$((SECONDS + 60))
    until [[ "$(mode_of "127.0.0.1:${CPORT[cl:1]}")" == standalone ]]; do
        ((SECONDS < deadline)) && running cl/server || { note "$name: the server did not serve:"; log_tail "$dir"; return 1; }
        sleep 0.3
    done
}


tlskz() { "$PY" "$HERE/tlskz.py" "$@" || true; } # the output is judged, not the status

# java_tls NAME MODE ARGS...: TlsClients (ZooKeeper's Java client, Curator) over TLS as NAME (its PEM key
# store; NAME.p12 with PKCS12 stores for `curator`) at the secure port.
java_tls() {
    local name=$1 mode=$2 stores
    shift 2
    if [[ "$mode" == curator ]]; then
        stores=(-Dzookeeper.ssl.keyStore.location="$CERTS/$name.p12" -Dzookeeper.ssl.keyStore.type=PKCS12
            -Dzookeeper.ssl.keyStore.password="$STOREPASS" -Dzookeeper.ssl.trustStore.location="$CERTS/trust-ca1.p12"
            -Dzookeeper.ssl.trustStore.type=PKCS12 -Dzookeeper.ssl.trustStore.password="$STOREPASS")
    else
        stores=(-Dzookeeper.ssl.keyStore.location="$CERTS/$name.pem" -Dzookeeper.ssl.keyStore.type=PEM
            -Dzookeeper.ssl.trustStore.location="$CERTS/trust-ca1.pem" -Dzookeeper.ssl.trustStore.type=PEM)
    fi
    timeout 60 java -Xmx128m -XX:TieredStopAtLevel=1 -Dorg.slf4j.simpleLogger.defaultLogLevel=error \
        -Dzookeeper.client.secure=true -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty \
        "${stores[@]}" -cp "$JAVA_CLASSES:$JAVA_CP" TlsClients "$mode" "127.0.0.1:$SECURE" "$@" 2>/dev/null || true
}

# expect NAME WANT GOT [CONTEXT]: passes when GOT is WANT.
expect() {
    if [[ "$3" == "$2" ]]; then pass "$1"; else fail "$1" "want '$2', got '$(tr '\n' '|' <<<"$3")'${4:+ ($4)}"; fi
}

group_client() {
    local e=cl out got want ok why t0 dir stop load i
    new_ensemble "$e"
    # The Java clients: ZooKeeper 3.9.5's client and Curator 5.9 from compat-tests/java's dependencies.
    JAVA_CP="" JAVA_CLASSES="$COMPAT_WORK/cl/java"
    mkdir -p "$JAVA_CLASSES"
    if command -v mvn >/dev/null && mvn -q -f "$ROOT/compat-tests/java/pom.xml" dependency:build-classpath \
        -Dmdep.outputFile="$COMPAT_WORK/cl/java-cp.txt" -Dmdep.includeScope=test >/dev/null 2>&1; then
        JAVA_CP="$(<"$COMPAT_WORK/cl/java-cp.txt")"
        javac -d "$JAVA_CLASSES" -cp "$JAVA_CP" "$HERE/TlsClients.java" 2>"$COMPAT_WORK/cl/javac.txt" || JAVA_CP=""
    fi
    # The AdminServer needs Jetty, which scripts/zookeeper.sh's jars leave out: the metrics suite's jars.
    zk_admin_jars
    local gotls="$COMPAT_WORK/cl/gotls"
    (cd "$HERE/gotls" && GOFLAGS=-mod=mod go build -o "$gotls" .) >/dev/null 2>&1 || gotls=""

    # 1. A secure port beside the plaintext one, clientAuth need (the default).
    if ! client_server main "secureClientPort=${PPORT[$e:1]}
secureClientPortAddress=127.0.0.1"; then
        fail client-tls-starts "the server with secureClientPort did not serve within 60 s"
        stop_member cl/server
        return
    fi
    SECURE=${PPORT[$e:1]}
    local plain="127.0.0.1:${CPORT[$e:1]}" secure="127.0.0.1:$SECURE"
    got="$("$PY" "$HERE/probe.py" tls-version --port "$secure" --cert "$CERTS/alice.crt" --key "$CERTS/alice.key" --ca "$CERTS/ca1.crt" --version any || true)"
    expect client-tls-starts TLSv1.3 "$got"

    # whoAmI through ZooKeeper's Java client over Netty TLS: the subject as X500Principal.getName() writes
    # it, super for the x509 super user.
    if [[ -n "$JAVA_CP" ]]; then
        expect client-java-whoami "$(printf 'ip:127.0.0.1\nx509:%s' "$ALICE")" "$(java_tls alice whoami)"
        expect client-java-whoami-super "$(printf 'ip:127.0.0.1\nsuper:\nx509:%s' "$ADMIN")" "$(java_tls zk-admin whoami)"
        got="$(java_tls alice own /tls-java-alice)"
        got+=" $(java_tls bob read /tls-java-alice) $(java_tls zk-admin read /tls-java-alice)"
        got+=" $(tlskz read "$plain" "$CERTS" - /tls-java-alice)"
        expect client-java-x509-acl "mine NOAUTH ok NoAuthError" "$got" "owner, bob, zk-admin, plaintext"
        expect client-curator-tls "curator locked" "$(java_tls alice curator /tls-curator/node)"
        out="$(printf 'whoami\ncreate /tls-zkcli cli\nget /tls-zkcli\nquit\n' | timeout 60 java -Xmx128m \
            -Dorg.slf4j.simpleLogger.defaultLogLevel=error -Dzookeeper.client.secure=true \
            -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty \
            -Dzookeeper.ssl.keyStore.location="$CERTS/alice.pem" -Dzookeeper.ssl.keyStore.type=PEM \
            -Dzookeeper.ssl.trustStore.location="$CERTS/trust-ca1.pem" -Dzookeeper.ssl.trustStore.type=PEM \
            -cp "$JAVA_CP" org.apache.zookeeper.ZooKeeperMain -server "$secure" 2>/dev/null)" || true
        if grep -qxF "x509: $ALICE" <<<"$out" && grep -qx cli <<<"$out"; then
            pass client-zkcli-tls
        else
            fail client-zkcli-tls "zkCli's whoami lacks 'x509: $ALICE' or get did not read back: $(tail -n 6 <<<"$out" | tr '\n' '|')"
        fi
    else
        for i in client-java-whoami client-java-whoami-super client-java-x509-acl client-curator-tls client-zkcli-tls; do
            skip "$i" "compat-tests/java's Maven dependencies (ZooKeeper 3.9.5's client, Curator 5.9) could not be resolved"
        done
    fi

    # kazoo (Python's ssl) and go-zookeeper (a TLS dialer) with the same x509 ACL.
    got="$(tlskz own "$secure" "$CERTS" alice /tls-kazoo-alice "$ALICE")"
    got+=" $(tlskz read "$secure" "$CERTS" bob /tls-kazoo-alice) $(tlskz read "$secure" "$CERTS" alice /tls-kazoo-alice)"
    expect client-kazoo-tls "mine NoAuthError ok" "$got" "owner, bob, owner again"
    if [[ -n "$gotls" ]]; then
        got="$("$gotls" "$secure" "$CERTS/alice.crt" "$CERTS/alice.key" "$CERTS/ca1.crt" /tls-go-alice "$ALICE" || true)"
        got+=" $(tlskz read "$secure" "$CERTS" bob /tls-go-alice) $(tlskz read "$secure" "$CERTS" alice /tls-go-alice)"
        expect client-go-tls "go ok NoAuthError ok" "$got" "go as owner, kazoo as bob, kazoo as owner"
    else
        skip client-go-tls "the go-zookeeper program did not build (go, module cache)"
    fi
    # The C client: TLS exists only in a build with OpenSSL (zookeeper_init_ssl).
    local clib=/usr/lib/x86_64-linux-gnu/libzookeeper_mt.so.2
    if [[ ! -e "$clib" ]]; then
        skip client-c-ssl "libzookeeper-mt2 is not installed (compat-tests/c-client/run.sh installs it)"
    elif nm -D "$clib" 2>/dev/null | grep -q ' T zookeeper_init_ssl$'; then
        skip client-c-ssl "the C client was built with SSL, but this suite has no C program for it yet"
    else
        skip client-c-ssl "Debian 12's libzookeeper-mt2 3.8.0 is built without OpenSSL (no zookeeper_init_ssl)"
    fi

    # Refusals at the secure port with clientAuth=need: no certificate, another CA's; the plaintext port
    # unchanged.
    got="$(tlskz session "$secure" "$CERTS" none | tail -n 1 | cut -d: -f1) $(tlskz session "$secure" "$CERTS" client-caX | tail -n 1 | cut -d: -f1)"
    expect client-need-refuses "KazooTimeoutError KazooTimeoutError" "$got" "no certificate, another CA's"
    expect client-plaintext-port-unchanged session "$(tlskz session "$plain" "$CERTS" -)"

    # The four-letter words per port, mntr and the AdminServer, with one plaintext and one TLS session open.
    out="$(tlskz ports "$plain" "$secure" "127.0.0.1:${EPORT[$e:1]}" "$CERTS" 2>&1)" || true
    want="cons_plain_sessions=1
cons_tls_sessions=1
conf_secureClientPort=$SECURE
mntr_non_mtls_local_positive=True
mntr_non_mtls_remote=0
srvr_Connections: 3
admin_connections=1
admin_secure_connections=1"
    expect client-4lw-admin-per-port "$want" "$out"

    # Rotation under load, no restart: 4 TLS writers (alice, trusting ca1 and ca2 for the server) keep
    # writing while (a) the key store becomes m1's ca2 certificate: a new client trusting ca2 only
    # connects; (b) the trust store becomes ca1 + ca1b, two CAs with one subject: a client from ca1b
    # connects, and (c) one from ca1 still does. Every acknowledged write must be there at the end.
    dir="$COMPAT_WORK/cl/main" stop="$COMPAT_WORK/cl/load.stop"
    rm -f "$stop"
    tlskz load "$secure" "$CERTS" alice trust-ca1+ca2.pem "$COMPAT_WORK/cl/load.json" "$stop" >/dev/null 2>&1 &
    load=$!
    sleep 3
    replace_file "$CERTS/server-ca2.pem" "$dir/server.pem"
    t0=$SECONDS ok=0
    while ((SECONDS - t0 < 15)); do
        [[ "$("$PY" "$HERE/probe.py" tls-version --port "$secure" --cert "$CERTS/alice.crt" --key "$CERTS/alice.key" \
            --ca "$CERTS/ca2.crt" --version any 2>&1)" == TLS* ]] && { ok=1; break; }
        sleep 0.2
    done
    if ((ok)); then note "rotation-key-store-under-load: the ca2 certificate presented $((SECONDS - t0)) s after the swap"; pass rotation-key-store-under-load
    else fail rotation-key-store-under-load "15 s after the key store was replaced, a client trusting ca2 only still cannot connect"; fi
    replace_file "$CERTS/trust-ca1+ca1b.pem" "$dir/trust.pem"
    t0=$SECONDS ok=0
    while ((SECONDS - t0 < 15)); do
        [[ "$(tlskz session "$secure" "$CERTS" alice-ca1b trust-ca1+ca2.pem 2>&1)" == session ]] && { ok=1; break; }
        sleep 0.5
    done
    got="new-ca=$ok old-ca=$([[ "$(tlskz session "$secure" "$CERTS" alice trust-ca1+ca2.pem 2>&1)" == session ]] && echo 1 || echo 0)"
    if [[ "$TARGET" == zookeeper && "$got" == "new-ca=0 old-ca=0" ]]; then
        zkbug rotation-two-cas-one-subject "after the trust store gained ca1b (ca1's subject, another key) without a restart, ZooKeeper 3.9.5 refuses clients of both CAs: its PEM trust store keeps one CA per subject (ZOOKEEPER-4992), and its X509AuthenticationProvider checks again with the trust store it loaded at start"
    else
        expect rotation-two-cas-one-subject "new-ca=1 old-ca=1" "$got" "clients of ca1b and ca1 after the trust store holds both"
    fi
    touch "$stop"
    wait "$load" || true
    if why="$("$PY" "$HERE/tlskz.py" verify "$plain" "$CERTS" "$COMPAT_WORK/cl/load.json" 2>&1)"; then
        note "rotation-writers-unaffected: $why"
        pass rotation-writers-unaffected
    else
        fail rotation-writers-unaffected "$why"
    fi

    # 2. ssl.clientHostnameVerification: the client certificate must name the client's address. ZooKeeper
    #    3.9.5 in its default fips-mode refuses every client then ("Endpoint Identification Algorithm HTTPS
    #    is not supported on the server side"), so the file sets fips-mode=false, which paddock ignores.
    if client_server hostname "secureClientPort=$SECURE
secureClientPortAddress=127.0.0.1
ssl.clientHostnameVerification=true
fips-mode=false"; then
        got="$(tlskz session "$secure" "$CERTS" client-ip) $(tlskz session "$secure" "$CERTS" alice | tail -n 1 | cut -d: -f1)"
        expect client-hostname-verification "session KazooTimeoutError" "$got" "SAN IP:127.0.0.1, no SAN"
    else
        fail client-hostname-verification "the server did not start"
    fi

    # 3. client.portUnification with clientAuth=want: plaintext and TLS clients on one port at once. Without
    #    secureClientPort or an authProvider line, ZooKeeper 3.9.5 registers the x509 provider too late and
    #    closes every TLS client that presents a certificate ("X509 Auth provider not found: x509").
    if client_server unified "client.portUnification=true
ssl.clientAuth=want"; then
        got="$(tlskz mixed "$plain" "$CERTS" | tail -n 1 | cut -d: -f1) $(tlskz session "$plain" "$CERTS" none)"
        got+=" $(four_letter_word "$plain" ruok)"
        if [[ "$TARGET" == zookeeper && "$got" == "KazooTimeoutError session imok" ]]; then
            zkbug client-unified-port "ZooKeeper 3.9.5 serves plaintext and certificate-less TLS clients on the unified port, but closes the TLS client with a certificate: X509 Auth provider not found: x509"
        else
            expect client-unified-port "both session imok" "$got" "mixed, TLS without a certificate (want), ruok"
        fi
    else
        fail client-unified-port "the server did not start"
    fi

    # 4. enforce.auth.schemes=x509 on the unified port (with the provider line, which both need for that
    #    key without a secure port): a plaintext client is refused its first request.
    if client_server enforce "client.portUnification=true
ssl.clientAuth=want
authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider
enforce.auth.enabled=true
enforce.auth.schemes=x509"; then
        got="$(tlskz read "$plain" "$CERTS" alice /) $(tlskz read "$plain" "$CERTS" - / | tail -n 1 | cut -d: -f1)"
        expect client-enforce-x509 "ok SessionClosedRequireSaslError" "$got" "TLS with a certificate, plaintext"
    else
        fail client-enforce-x509 "the server did not start"
    fi
    stop_member cl/server
}

# --- tools: paddock lock, elect and status with TLS and credentials ---------------------------------------
# This tree's `paddock lock`, `paddock elect` and `paddock status` against the server under test: a
# standalone one with a secure port (ssl.clientAuth=need) and a JAAS Server section for DIGEST-MD5. With an
# identity, the tools' nodes and the lock's path are auth::cdrwa plus --acl, so another identity cannot
# delete the holder's node and take the lock (the fix for security finding F9).
TOOL=""
HOLDER=""
# tool_hold OUT STOP ARG...: `paddock ARG... -- CMD` in the background; CMD prints `held TOKEN` and waits for
# the file STOP. Returns once `held` is printed (1 if not within 20 s).
tool_hold() {
    local out=$1 stop=$2 deadline
    shift 2
    rm -f "$stop"
    "$TOOL" "$@" -- sh -c 'echo "held ${PADDOCK_LOCK_TOKEN:-$PADDOCK_LEADER_TOKEN}"; while [ ! -e "$0" ]; do sleep 0.1; done' \
        "$stop" >"$out" 2>&1 </dev/null &
    HOLDER=$!
    deadline=$((SECONDS + 20))
    until grep -qE '^held [0-9]+$' "$out"; do
        ((SECONDS < deadline)) && kill -0 "$HOLDER" 2>/dev/null || { note "holder: $(tr '\n' '|' <"$out")"; return 1; }
        sleep 0.2
    done
}
RELEASED=""
tool_release() { # STOP: releases the holder; its exit status in RELEASED (not in a subshell: wait needs the parent)
    RELEASED=0
    touch "$1"
    wait "$HOLDER" || RELEASED=$?
}
digest_id() { printf '%s:%s' "$1" "$(printf '%s:%s' "$1" "$2" | openssl dgst -sha1 -binary | base64)"; } # user password

group_tools() {
    local e=cl dir="$COMPAT_WORK/tools" got stop secure plain rc tls alice_id
    new_ensemble "$e"
    TOOL="$(compat_paddock_bin)" || { fail tools-build "could not build paddock"; return; }
    mkdir -p "$dir"
    printf '%s\n' 'Server {' '    org.apache.zookeeper.server.auth.DigestLoginModule required' \
        '    user_carol="carol-password";' '};' >"$dir/jaas.conf"
    if ! client_server tools "secureClientPort=${PPORT[$e:1]}
secureClientPortAddress=127.0.0.1
authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider" \
        "-Djava.security.auth.login.config=$dir/jaas.conf"; then
        fail tools-server-starts "the server did not serve within 60 s"
        return
    fi
    secure="127.0.0.1:${PPORT[$e:1]}" plain="127.0.0.1:${CPORT[$e:1]}"
    tls=(--tls-ca "$CERTS/ca1.crt")

    # 1. lock over TLS with a client certificate: the node and the lock's path are x509:<alice>:cdrwa; bob's
    #    certificate can neither delete the holder's node nor queue (NoAuth on create).
    stop="$dir/stop-tls"
    if tool_hold "$dir/tls.out" "$stop" lock --servers "$secure" "${tls[@]}" --tls-cert "$CERTS/alice.crt" \
        --tls-key "$CERTS/alice.key" /tools/tls; then
        got="$(tlskz tool "$secure" "$CERTS" alice - acl /tools/tls)"
        got+=" $(tlskz tool "$secure" "$CERTS" bob - delete /tools/tls)"
        rc=0
        "$TOOL" lock --servers "$secure" "${tls[@]}" --tls-cert "$CERTS/bob.crt" --tls-key "$CERTS/bob.key" \
            --timeout 2s /tools/tls -- true >"$dir/tls-bob.out" 2>&1 || rc=$?
        got+=" bob-lock=$rc/$(grep -c 'not authorized' "$dir/tls-bob.out")"
        tool_release "$stop"
        got+=" holder=$RELEASED"
        expect tools-lock-tls-client-cert "x509:$ALICE:31|x509:$ALICE:31 NoAuthError bob-lock=1/1 holder=0" "$got" \
            "ACLs of the path and the node, bob deletes, bob locks, the holder's exit"
    else
        fail tools-lock-tls-client-cert "paddock lock over TLS as alice did not get the lock"
    fi

    # 2. Refusals before anything is made: no certificate at a clientAuth=need port; --acl without an identity.
    rc=0
    timeout 60 "$TOOL" lock --servers "$secure" "${tls[@]}" --session-timeout 4s /tools/none -- true >"$dir/none.out" 2>&1 || rc=$?
    got="no-cert=$rc/$(grep -c 'cannot connect' "$dir/none.out")"
    rc=0
    "$TOOL" lock --servers "$plain" --acl world:anyone:r /tools/none -- true >"$dir/acl.out" 2>&1 || rc=$?
    got+=" acl-anonymous=$rc/$(grep -c 'needs an identity' "$dir/acl.out")"
    expect tools-refusals "no-cert=1/1 acl-anonymous=1/1" "$got"

    # 3. lock with digest credentials (--auth) and --acl world:anyone:r: bob and an anonymous client cannot
    #    delete the holder's node; anyone can list the contenders.
    alice_id="$(digest_id alice alice-password)"
    stop="$dir/stop-digest"
    if tool_hold "$dir/digest.out" "$stop" lock --servers "$plain" --auth digest:alice:alice-password \
        --acl world:anyone:r /tools/digest; then
        got="$(tlskz tool "$plain" "$CERTS" - alice:alice-password acl /tools/digest)"
        got+=" $(tlskz tool "$plain" "$CERTS" - bob:bob-password delete /tools/digest)"
        got+=" $(tlskz tool "$plain" "$CERTS" - - delete /tools/digest)"
        got+=" $(tlskz tool "$plain" "$CERTS" - - children /tools/digest)"
        tool_release "$stop"
        got+=" holder=$RELEASED"
        expect tools-lock-digest-creator-only \
            "digest:$alice_id:31,world:anyone:1|digest:$alice_id:31,world:anyone:1 NoAuthError NoAuthError 1 holder=0" "$got" \
            "ACLs as alice, bob deletes, anonymous deletes, anonymous lists, the holder's exit"
    else
        fail tools-lock-digest-creator-only "paddock lock --auth digest did not get the lock"
    fi

    # 4. elect with the credentials from the environment (PADDOCK_AUTH): bob cannot delete the leader's node,
    #    an anonymous --listen cannot see the election.
    stop="$dir/stop-elect"
    if PADDOCK_AUTH=digest:alice:alice-password tool_hold "$dir/elect.out" "$stop" elect --servers "$plain" \
        --proposal alice /tools/elect; then
        got="$(tlskz tool "$plain" "$CERTS" - bob:bob-password delete /tools/elect)"
        rc=0
        timeout 20 "$TOOL" elect --servers "$plain" --listen /tools/elect >"$dir/listen.out" 2>&1 || rc=$?
        got+=" listen=$rc/$(grep -c 'not authorized' "$dir/listen.out")"
        tool_release "$stop"
        got+=" leader=$RELEASED"
        expect tools-elect-digest-creator-only "NoAuthError listen=1/1 leader=0" "$got"
    else
        fail tools-elect-digest-creator-only "paddock elect with PADDOCK_AUTH did not lead"
    fi

    # 5. lock with a SASL DIGEST-MD5 login (--sasl): the nodes are sasl:carol:cdrwa (plus world:anyone:r, so
    #    an anonymous client may read the ACLs); bob cannot delete the holder's node. A wrong password fails.
    stop="$dir/stop-sasl"
    if tool_hold "$dir/sasl.out" "$stop" lock --servers "$plain" --sasl digest-md5:carol:carol-password \
        --acl world:anyone:r /tools/sasl; then
        got="$(tlskz tool "$plain" "$CERTS" - - acl /tools/sasl)"
        got+=" $(tlskz tool "$plain" "$CERTS" - bob:bob-password delete /tools/sasl)"
        tool_release "$stop"
        got+=" holder=$RELEASED"
        expect tools-lock-sasl-creator-only \
            "sasl:carol:31,world:anyone:1|sasl:carol:31,world:anyone:1 NoAuthError holder=0" "$got"
    else
        fail tools-lock-sasl-creator-only "paddock lock --sasl digest-md5 did not get the lock"
    fi
    rc=0
    timeout 60 "$TOOL" lock --servers "$plain" --sasl digest-md5:carol:wrong --session-timeout 4s /tools/sasl -- true \
        >"$dir/sasl-wrong.out" 2>&1 || rc=$?
    expect tools-sasl-wrong-password "1/1" "$rc/$(grep -c 'cannot connect' "$dir/sasl-wrong.out")"

    # 6. status over TLS with a client certificate; without one the server refuses the handshake.
    rc=0
    got="$("$TOOL" status --servers "$secure" "${tls[@]}" --tls-cert "$CERTS/alice.crt" --tls-key "$CERTS/alice.key" \
        2>&1 | awk 'NR == 2 { print $2 }')" || true
    "$TOOL" status --servers "$secure" "${tls[@]}" >"$dir/status.out" 2>&1 || rc=$?
    got+=" no-cert=$rc/$(awk 'NR == 2 { print $2 }' "$dir/status.out")"
    expect tools-status-tls "standalone no-cert=1/unreachable" "$got"
    stop_member cl/server
}

# --- admin: the AdminServer over HTTPS ---------------------------------------------------------------------
# admin.forceHttps, admin.portUnification and admin.needClientAuth with the ssl.quorum.* stores (member 1's
# certificate, SAN IP:127.0.0.1; trust store ca1), asked with curl, against a standalone server from the same
# zoo.cfg. ZooKeeper's AdminServer needs Jetty, taken from the metrics suite's jars (zk_admin_jars).
zk_admin_jars() {
    [[ "$TARGET" == zookeeper && "$ZK_CP" != *metrics-admin* ]] || return 0
    local extra="${ZK_CACHE_ROOT:-$HOME/.cache/paddock}/zookeeper-metrics-admin"
    if [[ ! -f "$extra/.complete" ]]; then
        mkdir -p "$extra"
        mvn -q -B -f "$ROOT/compat-tests/metrics/pom.xml" dependency:copy-dependencies \
            -DoutputDirectory="$extra/lib" >"$extra/mvn.log" 2>&1 && touch "$extra/.complete"
    fi
    [[ -f "$extra/.complete" ]] && ZK_CP="$ZK_CP:$extra/lib/*"
}

# admin_get SCHEME [CURL ARG...]: GET <scheme>://127.0.0.1:<admin port>/commands/ruok; prints the HTTP
# status (000: no HTTP reply) and `sts=1` when the reply carries Strict-Transport-Security.
admin_get() {
    local scheme=$1 out code
    shift
    out="$(curl -s -D - -o /dev/null --max-time 10 --cacert "$CERTS/ca1.crt" "$@" \
        "$scheme://127.0.0.1:${EPORT[cl:1]}/commands/${ADMIN_COMMAND:-ruok}" 2>/dev/null)" || true
    code="$(sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' <<<"$out")"
    printf '%s' "${code:-000}"
    grep -qi '^strict-transport-security: max-age=86400; includesubdomains' <<<"$out" && printf ' sts=1'
    return 0
}

group_admin() {
    local e=cl got alice keys
    new_ensemble "$e"
    zk_admin_jars
    alice=(--cert "$CERTS/alice.crt" --key "$CERTS/alice.key")
    keys="ssl.quorum.keyStore.location=$CERTS/m1.pem
ssl.quorum.keyStore.type=PEM
ssl.quorum.trustStore.location=$CERTS/trust-ca1.pem
ssl.quorum.trustStore.type=PEM"

    # 1. forceHttps and needClientAuth: plain HTTP gets no reply, HTTPS without a certificate neither; with
    #    alice's certificate (ca1) ruok answers 200 with HSTS, snapshot without credentials 401, and with
    #    `Authorization: x509` (the x509 provider on: alice's certificate is her credential) 200.
    if client_server admin-force "$keys
authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider
admin.forceHttps=true
admin.needClientAuth=true"; then
        got="http=$(admin_get http) https-no-cert=$(admin_get https) https-cert=$(admin_get https "${alice[@]}")"
        got+=" snapshot=$(ADMIN_COMMAND=snapshot admin_get https "${alice[@]}")"
        sleep 0.5 # one snapshot per admin.rateLimiterIntervalInMS (300 ms)
        got+=" snapshot-x509=$(ADMIN_COMMAND=snapshot admin_get https "${alice[@]}" -H 'Authorization: x509')"
        got+=" other-ca=$(admin_get https --cert "$CERTS/client-caX.crt" --key "$CERTS/client-caX.key")"
        expect admin-force-https-need-client-auth \
            "http=000 https-no-cert=000 https-cert=200 sts=1 snapshot=401 sts=1 snapshot-x509=200 sts=1 other-ca=000" "$got"
    else
        fail admin-force-https-need-client-auth "the server did not start"
    fi

    # 2. portUnification alone: HTTP and HTTPS (no certificate asked for) on one port; HSTS only over TLS;
    #    `Authorization: x509` over plain HTTP has no certificate behind it: 401.
    if client_server admin-unified "$keys
authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider
admin.portUnification=true"; then
        got="http=$(admin_get http) https=$(admin_get https) https-cert=$(admin_get https "${alice[@]}")"
        got+=" snapshot-x509-plain=$(ADMIN_COMMAND=snapshot admin_get http -H 'Authorization: x509')"
        expect admin-unified-port "http=200 https=200 sts=1 https-cert=200 sts=1 snapshot-x509-plain=401" "$got"
    else
        fail admin-unified-port "the server did not start"
    fi

    # 3. forceHttps alone: HTTPS without a certificate is served, plain HTTP is not.
    if client_server admin-force-only "$keys
admin.forceHttps=true"; then
        got="http=$(admin_get http) https=$(admin_get https)"
        expect admin-force-https "http=000 https=200 sts=1" "$got"
    else
        fail admin-force-https "the server did not start"
    fi

    # 4. Settings the AdminServer cannot honour: needClientAuth on plain HTTP, and forceHttps without a key
    #    store. paddock refuses to start, naming the key; ZooKeeper starts, serving plain HTTP in the first
    #    case and no AdminServer at all in the second.
    local name cfg want_log zk_want
    for name in admin-need-client-auth-plain admin-force-https-no-key-store; do
        if [[ "$name" == admin-need-client-auth-plain ]]; then
            cfg="$keys
admin.needClientAuth=true" want_log="admin.needClientAuth=true asks for client certificates" zk_want="http=200"
        else
            cfg="admin.forceHttps=true" want_log="admin.forceHttps=true needs ssl.quorum.keyStore.location"
            zk_want="http=000 https=000"
        fi
        if [[ "$TARGET" == zookeeper ]]; then
            if client_server "$name" "$cfg"; then
                got="http=$(admin_get http)"
                [[ "$name" == admin-need-client-auth-plain ]] || got+=" https=$(admin_get https)"
                if [[ "$got" == "$zk_want" ]]; then
                    stricter "$name" "ZooKeeper serves: $got"
                else
                    fail "$name" "want '$zk_want' from ZooKeeper, got '$got'"
                fi
            else
                fail "$name" "ZooKeeper did not start"
            fi
        elif client_server "$name" "$cfg" >/dev/null 2>&1; then
            fail "$name" "paddock started"
        elif grep -qF "$want_log" "$COMPAT_WORK/cl/$name/server.log"; then
            pass "$name"
        else
            fail "$name" "paddock refused, but its log lacks '$want_log': $(tail -n 3 "$COMPAT_WORK/cl/$name/server.log" | tr '\n' '|')"
        fi
    done
    stop_member cl/server
}

four_letter_word() { # host:port word
    timeout 5 bash -c 'exec 3<>/dev/tcp/'"${1%:*}"'/'"${1##*:}"' && printf '"$2"' >&3 && cat <&3' 2>/dev/null || true
}

# --- run ---------------------------------------------------------------------------------------------------
for g in pem pkcs12 sasl rolling failclosed client tools admin; do
    want "$g" || continue
    t=$SECONDS
    CONTROL_WHY=""
    "group_$g"
    echo "security: group $g took $((SECONDS - t)) s"
done
echo "security: $TARGET run took $((SECONDS - SUITE_START)) s"
for reason in "${!SKIPS[@]}"; do report_skip "${SKIPS[$reason]}" "$reason"; done
report "$PASSED" "$FAILED" "$SKIPPED"
((FAILED == 0 && PASSED > 0))
