#!/usr/bin/env bash
# The Jepsen-style fault suite (issue 9): a 3- or 5-member ensemble, each member in its own network
# namespace (10.77.0.N on a bridge), go-zookeeper workloads with checkers, and a seeded nemesis schedule.
#
#   compat-tests/faults/run.sh --target paddock|zookeeper --nodes 3|5 --time SECONDS \
#       --nemesis LIST|all --workload LIST|all --seed N [--each] [--out DIR] [--slot S] [--quorum-tls]
#   compat-tests/faults/run.sh --ci [--against-zookeeper]   the short run (3 members, every nemesis kind in
#                                                           turn, quorum TLS, about 5 minutes)
#   compat-tests/faults/run.sh --ci --plaintext             the same with a plaintext quorum
#   compat-tests/faults/run.sh [--against-zookeeper]        the same, as compat-tests/run.sh calls it
#
# Nemeses (kinds, or the groups partition, kill, pause, clock, disk, client-pause; see README.md):
#   partition-halves partition-leader partition-bridge partition-oneway lossy kill-one kill-minority
#   kill-all pause-member pause-leader clock-jump clock-skew disk-truncate-log disk-corrupt-log
#   disk-corrupt-snapshot disk-wipe disk-lose-unsynced disk-torn-write disk-full disk-eio client-pause
# Workloads: register order lock ids eph ack watch.
#
# --hold D, --quiet D (Go durations, default 4s and 3s): how long a fault lasts, and the calm after it.
# --slot S (0-9, default 0) puts the run's hosts at 10.77.S.0/24 with names pdkfS-*, so that runs in
# different slots can go side by side (one run per slot at a time).
# --quorum-tls / --plaintext: the members talk to each other over TLS (sslQuorum=true, PEM key and trust
# stores in the run folder's certs/, made by compat-tests/security/certs.sh for the members' addresses,
# hostname verification on) or in plaintext. Default: TLS in a CI run, plaintext otherwise. The table's
# second line says which (`quorum: TLS`).
#
# Each run writes to its own folder (default /tmp/paddock-faults/<time>-<target>-n<N>-s<seed>): the
# history (history.jsonl), the nemesis timeline (timeline.jsonl), every member's log (nN/member.log), the
# verdict (verdict.json) and the table (table.txt, also printed). A CI run (no arguments, or --ci) that
# passes removes its folder when it ends, members' data included (about 250 MB), so that the test command
# leaves nothing behind; KEEP_WORK=1 keeps it, and a run that fails always keeps it. The checkers' own
# tests (go test) run first and count as checks. The last line is the row
# `faults | passed | failed | skipped`, where a check is a checker's verdict or a go test
# (compat-tests/lib.sh's contract). Exit status non-zero on any violation. Needs root (network
# namespaces, nftables); installs nftables, libfaketime and iproute2 with apt-get when missing.
#
# The disk nemeses disk-lose-unsynced, disk-torn-write and disk-eio run every member under an LD_PRELOAD
# shim (server/tests/shim/powerloss.c, built here with cc); disk-full puts each member's data dir on an
# ext4 file system of FAULTS_DISK_MB (512) MB of its own on a loop device. Both only when such a kind is
# selected; everything is removed at exit, on failure and on Ctrl-C.
#
# Env: PADDOCK_BIN (default: a debug build in CARGO_TARGET_DIR), PADDOCK_SERVE_ARGS (extra serve flags),
#      ZK_VERSION (scripts/zookeeper.sh), FAULTS_OUT (where run folders go), FAULTS_CI_TIME, KEEP_WORK,
#      FAULTS_DISK_MB.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$COMPAT_LIB_DIR/faults"

TARGET=paddock NODES=3 TIME=120 NEMESIS=all WORKLOAD=all SEED=1 EACH=0 CI=0 OUT="" HOLD=4s QUIET=3s SLOT=0 TLS=""
[[ $# -eq 0 ]] && CI=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --target) TARGET=$2; shift ;;
        --against-zookeeper) TARGET=zookeeper ;;
        --nodes) NODES=$2; shift ;;
        --time) TIME=$2; shift ;;
        --nemesis) NEMESIS=$2; shift ;;
        --workload) WORKLOAD=$2; shift ;;
        --seed) SEED=$2; shift ;;
        --each) EACH=1 ;;
        --ci) CI=1 ;;
        --out) OUT=$2; shift ;;
        --slot) SLOT=$2; shift ;;
        --hold) HOLD=$2; shift ;;
        --quiet) QUIET=$2; shift ;;
        --quorum-tls) TLS=1 ;;
        --plaintext) TLS=0 ;;
        -h | --help) sed -n '2,43p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "faults/run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
SUITE=faults
[[ "$TARGET" == zookeeper ]] && SUITE=faults@zookeeper
compat_init "$SUITE"
case "$TARGET" in paddock | zookeeper) ;; *) compat_fail "--target must be paddock or zookeeper, not '$TARGET'" ;; esac
[[ "$NODES" =~ ^[0-9]+$ && "$NODES" -ge 1 && "$NODES" -le 9 ]] || compat_fail "--nodes must be 1..9, not '$NODES'"
[[ "$TIME" =~ ^[0-9]+$ ]] || compat_fail "--time must be a number of seconds, not '$TIME'"
[[ "$SEED" =~ ^-?[0-9]+$ ]] || compat_fail "--seed must be a number, not '$SEED'"
[[ "$SLOT" =~ ^[0-9]$ ]] || compat_fail "--slot must be 0..9, not '$SLOT'"
NET=10.77.$SLOT
if [[ $CI == 1 ]]; then
    # Every nemesis kind in turn (21 kinds, most 7-12 s a cycle with the shorter holds, the disk ones up
    # to 20 s): the driver ends no pass of --each before every kind ran once; with start-up and the
    # final checks about 5 minutes on 2 cores.
    NODES=3 TIME=${FAULTS_CI_TIME:-190} NEMESIS=all WORKLOAD=all EACH=1 HOLD=3s QUIET=2s
fi
# Quorum TLS: on in a CI run, off in others, unless --quorum-tls or --plaintext says.
[[ -n "$TLS" ]] || TLS=$CI
QUORUM=plaintext
[[ $TLS == 1 ]] && QUORUM=TLS

# Root, or at least CAP_NET_ADMIN (bit 12 of the effective set), for namespaces and nftables.
cap=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
if ! (( (0x$cap >> 12) & 1 )); then
    compat_fail "needs root or CAP_NET_ADMIN (network namespaces, veth, nftables); run it as root"
fi

# What it needs, installed when missing (Debian).
missing=()
command -v nft >/dev/null || missing+=(nftables)
command -v ip >/dev/null || missing+=(iproute2)
ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || missing+=(libfaketime faketime)
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "faults: installing ${missing[*]}" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >&2 \
        || compat_fail "could not install ${missing[*]}"
fi
command -v go >/dev/null || compat_fail "no 'go' on PATH"

# Which disk nemeses are selected: the shim's (power, EIO) and the full disk's need more set up.
SHIM_KINDS=0 DISK_KINDS=0
for k in ${NEMESIS//,/ }; do
    case "$k" in
        all | disk) SHIM_KINDS=1 DISK_KINDS=1 ;;
        disk-lose-unsynced | disk-torn-write | disk-eio) SHIM_KINDS=1 ;;
        disk-full) DISK_KINDS=1 ;;
    esac
done

# One run per slot at a time: a slot's namespaces and addresses have fixed names.
LOCK=/run/paddock-faults.lock
[[ "$SLOT" == 0 ]] || LOCK=/run/paddock-faults-$SLOT.lock
exec 9>"$LOCK"
flock -n 9 || compat_fail "another fault run holds $LOCK (use another --slot to run beside it)"

RUN="${OUT:-${FAULTS_OUT:-/tmp/paddock-faults}/$(date -u +%Y%m%dT%H%M%S)-$TARGET-n$NODES-s$SEED}"
mkdir -p "$RUN"
RUN="$(cd "$RUN" && pwd)"
export FAULTS_RUN="$RUN" FAULTS_NODES="$NODES" FAULTS_TARGET="$TARGET" FAULTS_FAKETIME=1 FAULTS_SLOT="$SLOT" NO_COLOR=1
DISK_MB=${FAULTS_DISK_MB:-512}
export FAULTS_DISK_MB=0 FAULTS_SHIM=""

DRIVER=""
PASSED=0
cleanup() {
    set +e
    if [[ -n "$DRIVER" ]] && kill -0 "$DRIVER" 2>/dev/null; then
        kill -TERM "$DRIVER" 2>/dev/null
        for _ in $(seq 1 30); do kill -0 "$DRIVER" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$DRIVER" 2>/dev/null
    fi
    bash "$HERE/hosts.sh" teardown >/dev/null 2>&1
    if [[ $CI == 1 && $PASSED == 1 && -z "${KEEP_WORK:-}" ]]; then
        rm -rf "$RUN"
        # The default parent too, once no run is left in it.
        [[ -z "$OUT" && -z "${FAULTS_OUT:-}" ]] && rmdir "$(dirname "$RUN")" 2>/dev/null
        echo "faults: removed the run folder (the run passed; KEEP_WORK=1 keeps it)" >&2
    fi
    compat_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "faults: run folder $RUN"
# The checkers' own tests: each feeds a checker a broken history it must catch.
gotest_pass=0 gotest_fail=0
(cd "$HERE" && go test -count=1 -json . >"$RUN/gotest.jsonl" 2>&1) || true
gotest_pass=$(grep -c '"Action":"pass","Package":"[^"]*","Test":' "$RUN/gotest.jsonl" || true)
gotest_fail=$(grep -c '"Action":"fail","Package":"[^"]*","Test":' "$RUN/gotest.jsonl" || true)
grep -q '"Action":"pass","Package":"paddock/compat-tests/faults","Elapsed' "$RUN/gotest.jsonl" \
    || { [[ $gotest_fail -gt 0 ]] || gotest_fail=1; }
echo "faults: checker tests: $gotest_pass passed, $gotest_fail failed"
(cd "$HERE" && go build -o "$RUN/faults" .) || compat_fail "the driver does not build"

# The power-loss shim of server/tests/power_loss.rs, for every member (disk-lose-unsynced,
# disk-torn-write, disk-eio), and a file system per member (disk-full).
if [[ $SHIM_KINDS == 1 ]]; then
    if command -v cc >/dev/null && cc -shared -fPIC -O1 -Wall -Wno-format-truncation -o "$RUN/powerloss.so" \
        "$ROOT/server/tests/shim/powerloss.c" -ldl -lpthread; then
        FAULTS_SHIM="$RUN/powerloss.so"
        echo "faults: the members run under the power-loss shim ($FAULTS_SHIM)"
    else
        echo "faults: no C compiler or the shim does not build: disk-lose-unsynced, disk-torn-write and disk-eio left out" >&2
    fi
fi
if [[ $DISK_KINDS == 1 ]]; then
    if command -v mkfs.ext4 >/dev/null && command -v losetup >/dev/null && [[ -e /dev/loop-control ]]; then
        FAULTS_DISK_MB=$DISK_MB
        echo "faults: each member's data dir on an ext4 file system of $FAULTS_DISK_MB MB (loop device)"
    else
        echo "faults: no mkfs.ext4, losetup or loop devices: disk-full left out" >&2
    fi
fi

case "$TARGET" in
    zookeeper)
        bash "$ROOT/scripts/zookeeper.sh" fetch >/dev/null || compat_fail "no ZooKeeper jars"
        ZK_CP="$(bash "$ROOT/scripts/zookeeper.sh" classpath)"
        export ZK_CP
        echo "faults: Apache ZooKeeper $(bash "$ROOT/scripts/zookeeper.sh" version)"
        ;;
    paddock)
        PADDOCK_BIN="$(compat_paddock_bin)" || compat_fail "could not build paddock"
        [[ -x "$PADDOCK_BIN" ]] || compat_fail "no paddock binary at $PADDOCK_BIN"
        export PADDOCK_BIN
        echo "faults: paddock $PADDOCK_BIN"
        ;;
esac

# Quorum TLS: a CA and a certificate per member (SAN IP:NET.N, EKU serverAuth+clientAuth), as PEM key
# stores, and the CA as a PEM trust store, in RUN/certs: outside the data dirs, so that a member restarted
# or wiped by a nemesis comes back with the same certificate.
if [[ $TLS == 1 ]]; then
    addrs=()
    for i in $(seq 1 "$NODES"); do addrs+=("$NET.$i"); done
    bash "$COMPAT_LIB_DIR/security/certs.sh" "$RUN/certs" "${addrs[@]}" || compat_fail "could not make the certificates"
    echo "faults: quorum TLS (certificates in $RUN/certs)"
else
    echo "faults: quorum plaintext"
fi

# The members' configuration: plain ZooKeeper zoo.cfg, the same for both targets.
for i in $(seq 1 "$NODES"); do
    mkdir -p "$RUN/n$i/data"
    echo "$i" >"$RUN/n$i/data/myid"
    {
        echo "# written by compat-tests/faults/run.sh: member $i of $NODES"
        echo "tickTime=1000"
        echo "initLimit=10"
        echo "syncLimit=2"
        echo "dataDir=$RUN/n$i/data"
        echo "4lw.commands.whitelist=*"
        echo "admin.enableServer=false"
        echo "maxClientCnxns=0"
        echo "minSessionTimeout=2000"
        echo "maxSessionTimeout=20000"
        for j in $(seq 1 "$NODES"); do echo "server.$j=$NET.$j:2888:3888;2181"; done
        if [[ $TLS == 1 ]]; then
            echo "sslQuorum=true"
            echo "ssl.quorum.keyStore.location=$RUN/certs/m$i.pem"
            echo "ssl.quorum.keyStore.type=PEM"
            echo "ssl.quorum.trustStore.location=$RUN/certs/trust-ca1.pem"
            echo "ssl.quorum.trustStore.type=PEM"
            echo "ssl.quorum.hostnameVerification=true"
        fi
    } >"$RUN/n$i/zoo.cfg"
done

bash "$HERE/hosts.sh" setup || compat_fail "could not set up the network namespaces"
for i in $(seq 1 "$NODES"); do bash "$HERE/hosts.sh" start "$i"; done
# A member that exits at start-up (a config it refuses, say) fails the run at once, with its log.
sleep 3
for i in $(seq 1 "$NODES"); do
    if [[ "$(bash "$HERE/hosts.sh" alive "$i")" != yes ]]; then
        echo "faults: member $i exited at start-up; the end of $RUN/n$i/member.log:" >&2
        { grep -i -m 5 -E '^(error|exception)|ERROR' "$RUN/n$i/member.log" || tail -n 15 "$RUN/n$i/member.log"; } >&2
        compat_fail "member $i of the $TARGET ensemble did not start"
    fi
done

args=(--nodes "$NODES" --time "${TIME}s" --nemesis "$NEMESIS" --workload "$WORKLOAD" --seed "$SEED"
    --dir "$RUN" --hosts "$HERE/hosts.sh" --target "$TARGET" --hold "$HOLD" --quiet "$QUIET" --net "$NET"
    --quorum "$QUORUM")
[[ $EACH == 1 ]] && args+=(--each)
[[ -n "$FAULTS_SHIM" ]] && args+=(--shim)
[[ "$FAULTS_DISK_MB" != 0 ]] && args+=(--disk)
# In the background and waited for, so that Ctrl-C (or a TERM) runs the traps at once.
set +e
"$RUN/faults" "${args[@]}" 2> >(tee "$RUN/driver.log" >&2) > >(tee "$RUN/driver.out") &
DRIVER=$!
wait "$DRIVER"
rc=$?
DRIVER=""
sleep 0.2 # let tee finish
set -e
read -r _ cpass cfail < <(grep '^CHECKS ' "$RUN/driver.out" || echo "CHECKS 0 1")
if [[ $rc -ne 0 && $cfail -eq 0 ]]; then
    echo "faults: the driver exited $rc without a verdict (see $RUN/driver.log)" >&2
    cfail=1
fi
echo "faults: run folder $RUN"
[[ $rc -eq 0 && $gotest_fail -eq 0 && $cfail -eq 0 ]] && PASSED=1
report $((cpass + gotest_pass)) $((cfail + gotest_fail)) 0
[[ $PASSED == 1 ]]
