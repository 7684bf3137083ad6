#!/usr/bin/env bash
# The fault suite's hosts and the hands of its nemeses: every action on a member goes through here, so the
# Go driver (and a person debugging a run) can call the same commands.
#
#   hosts.sh setup                 a bridge pdkf-br in the root namespace (10.77.0.254/24) and, per member N,
#                                  a namespace pdkf-nN with veth pdkf-vN <-> eth0 = 10.77.0.N/24, loopback up,
#                                  no default route, an nftables table `inet pdkf` (partitions, egress guard)
#   hosts.sh teardown              stops every member and removes all of it, also leftovers of a crashed run
#                                  (anything named pdkf-*)
#   hosts.sh start N | stop N | kill N | pause N | resume N
#   hosts.sh alive N               prints yes if member N's process runs
#   hosts.sh role N                prints the member's `Mode:` from `srvr` (leader/follower/standalone/...)
#   hosts.sh block N M...          member N drops every packet from the members M (one-way: M -> N)
#   hosts.sh lossy N PCT M...      member N drops PCT% of the packets from members M (nftables numgen)
#   hosts.sh heal [N...]           flushes the partition rules (all members by default)
#   hosts.sh clock N SPEC          writes SPEC ("+30s", "-20s", "+0 x1.5") to member N's faketime file
#   hosts.sh disk N FAULT          FAULT = truncate-log | corrupt-log | corrupt-snapshot | wipe (member stopped)
#   hosts.sh egress N              prints the count of packets member N tried to send off 10.77.0.0/24
#
# With FAULTS_SLOT=S (1-9) every name is pdkfS-* instead of pdkf-* and every address 10.77.S.* instead of
# 10.77.0.*, so that runs in different slots do not touch each other.
#
# Environment (set by run.sh): FAULTS_RUN (the run folder: members in $FAULTS_RUN/nN), FAULTS_NODES,
# FAULTS_TARGET (zookeeper|paddock), PADDOCK_BIN, PADDOCK_SERVE_ARGS (extra `paddock serve` flags), ZK_CP (ZooKeeper's classpath), FAULTS_FAKETIME (1: start
# members under libfaketime so the clock nemesis can move their clocks).
set -euo pipefail

# FAULTS_SLOT (0-9) lets runs go side by side: slot 0 is pdkf-*/10.77.0.0/24, slot S is pdkfS-*/10.77.S.0/24.
SLOT=${FAULTS_SLOT:-0}
[[ "$SLOT" =~ ^[0-9]$ ]] || { echo "hosts.sh: FAULTS_SLOT must be 0-9, not '$SLOT'" >&2; exit 2; }
PREFIX=pdkf
[[ "$SLOT" == 0 ]] || PREFIX=pdkf$SLOT
NET=10.77.$SLOT
BR=$PREFIX-br
RUN=${FAULTS_RUN:-}
NODES=${FAULTS_NODES:-3}
TARGET=${FAULTS_TARGET:-zookeeper}

die() { echo "hosts.sh: $*" >&2; exit 1; }
ns() { echo "$PREFIX-n$1"; }
mdir() { echo "$RUN/n$1"; }
nsx() { local n=$1; shift; ip netns exec "$(ns "$n")" "$@"; }
stamp() { date -u +%H:%M:%S.%3N; }

need_run() { [[ -n "$RUN" && -d "$RUN" ]] || die "FAULTS_RUN is not set to a run folder"; }

cmd_setup() {
    cmd_teardown
    ip link add "$BR" type bridge
    ip addr add "$NET.254/24" dev "$BR"
    ip link set "$BR" up
    local i
    for i in $(seq 1 "$NODES"); do
        ip netns add "$(ns "$i")"
        # IPv4 only: no router solicitations or other IPv6 chatter to count as egress.
        nsx "$i" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
        ip link add "$PREFIX-v$i" type veth peer name eth0 netns "$(ns "$i")"
        ip link set "$PREFIX-v$i" master "$BR" up
        nsx "$i" ip link set lo up
        nsx "$i" ip addr add "$NET.$i/24" dev eth0
        nsx "$i" ip link set eth0 up
        # The partition chains are flushed and refilled by block/lossy/heal; the egress guard stays: a
        # member may talk to loopback and 10.77.0.0/24 only (it has no default route either), counted.
        nsx "$i" nft -f - <<EOF
table inet $PREFIX {
    chain input { type filter hook input priority 0; policy accept; }
    chain output {
        type filter hook output priority 0; policy accept;
        oif "lo" accept
        ip daddr $NET.0/24 accept
        counter name egress drop
    }
    counter egress { }
}
EOF
    done
}

cmd_teardown() {
    local n pidf pid killed=()
    if [[ -n "$RUN" && -d "$RUN" ]]; then
        for pidf in "$RUN"/n*/pid; do
            [[ -f "$pidf" ]] || continue
            pid=$(cat "$pidf")
            kill -CONT "$pid" 2>/dev/null || true
            kill -9 "$pid" 2>/dev/null && killed+=("$pid")
            rm -f "$pidf"
        done
    fi
    for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX-" || true); do
        # Whatever still runs in a leftover namespace (a crashed run's members) goes with it.
        for pid in $(ip netns pids "$n" 2>/dev/null || true); do
            kill -CONT "$pid" 2>/dev/null || true
            kill -9 "$pid" 2>/dev/null && killed+=("$pid")
        done
        ip netns del "$n" 2>/dev/null || true
    done
    for n in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^$PREFIX-" || true); do
        ip link del "$n" 2>/dev/null || true
    done
    # SIGKILL takes effect asynchronously: the sweep spares a process still in /proc, so the members just
    # killed would leave their faketime files behind until the next run. Wait (at most 5 s) for them.
    for pid in "${killed[@]}"; do
        for _ in $(seq 1 50); do [[ -d "/proc/$pid" ]] || break; sleep 0.1; done
    done
    faketime_sweep
}

# libfaketime (preloaded, without FAKETIME_SHARED) makes a shared memory segment and a semaphore per
# process, /dev/shm/faketime_shm_<pid> and /dev/shm/sem.faketime_sem_<pid>, and removes them only at a
# clean exit: every member the nemesis or the teardown kills with SIGKILL leaves its pair behind.
# Removes the pairs whose process is gone (this suite's and any other crashed faketime user's: nothing
# can attach to a dead process's segment).
faketime_sweep() {
    local f pid
    for f in /dev/shm/faketime_shm_* /dev/shm/sem.faketime_sem_*; do
        [[ -e "$f" ]] || continue
        pid="${f##*_}"
        [[ "$pid" =~ ^[0-9]+$ && ! -d "/proc/$pid" ]] && rm -f "$f"
    done
    return 0
}

member_pid() { [[ -f "$(mdir "$1")/pid" ]] && cat "$(mdir "$1")/pid"; }

four() { # member word
    timeout 3 bash -c 'exec 3<>/dev/tcp/'"$NET.$1"'/2181 && printf %s '"$2"' >&3 && cat <&3' 2>/dev/null || true
}

cmd_start() {
    need_run
    local n=$1 d pid
    d="$(mdir "$n")"
    [[ -f "$d/zoo.cfg" ]] || die "no $d/zoo.cfg"
    if pid=$(member_pid "$n") && kill -0 "$pid" 2>/dev/null; then
        return 0
    fi
    local pre=()
    if [[ "${FAULTS_FAKETIME:-0}" == 1 ]]; then
        [[ -f "$d/faketime" ]] || echo "+0" >"$d/faketime"
        # Only the wall clock moves (CLOCK_REALTIME: what a clock step or a skewed NTP does); the offset file
        # is re-read every second. FAKETIME_FORCE_MONOTONIC_FIX=0: without it a JVM hangs in start-up.
        pre=(env LD_PRELOAD="$(faketime_lib)" FAKETIME_TIMESTAMP_FILE="$d/faketime" FAKETIME_CACHE_DURATION=1
            FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_FORCE_MONOTONIC_FIX=0)
    fi
    echo "=== $(stamp) start" >>"$d/member.log"
    case "$TARGET" in
        zookeeper)
            # The same JVM flags as scripts/zookeeper.sh, with QuorumPeerMain for an ensemble member.
            ip netns exec "$(ns "$n")" "${pre[@]}" java -Xmx192m -XX:+UseSerialGC \
                -Dzookeeper.admin.enableServer=false -Dzookeeper.log.dir="$d" \
                -cp "$ZK_CP" org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg" \
                >>"$d/member.log" 2>&1 </dev/null &
            ;;
        paddock)
            # shellcheck disable=SC2086 # PADDOCK_SERVE_ARGS: extra flags, split on spaces
            ip netns exec "$(ns "$n")" "${pre[@]}" "$PADDOCK_BIN" serve --config "$d/zoo.cfg" ${PADDOCK_SERVE_ARGS:-} \
                >>"$d/member.log" 2>&1 </dev/null &
            ;;
        *) die "unknown target $TARGET" ;;
    esac
    echo $! >"$d/pid"
}

faketime_lib() {
    local f
    for f in /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 /usr/lib/*/faketime/libfaketime.so.1; do
        [[ -f "$f" ]] && { echo "$f"; return; }
    done
    die "libfaketime.so.1 not found (apt-get install libfaketime)"
}

cmd_stop() { # n [signal]
    local n=$1 sig=${2:-TERM} pid
    pid=$(member_pid "$n") || return 0
    kill -CONT "$pid" 2>/dev/null || true
    kill -s "$sig" "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$(mdir "$n")/pid"
    echo "=== $(stamp) stopped ($sig)" >>"$(mdir "$n")/member.log"
}

cmd_role() {
    local mode
    mode=$(four "$1" srvr | sed -n 's/^Mode: *//p')
    echo "${mode:-down}"
}

rules() { # n: replaces member n's input chain with the lines on stdin
    local body
    body=$(cat)
    nsx "$1" nft -f - <<EOF
flush chain inet $PREFIX input
table inet $PREFIX {
    chain input {
$body
    }
}
EOF
}

cmd_block() { # n peers...
    local n=$1; shift
    local cur
    cur=$(current_rules "$n")
    { echo "$cur"; for m in "$@"; do echo "        ip saddr $NET.$m drop"; done; } | rules "$n"
}

cmd_lossy() { # n pct peers...
    local n=$1 pct=$2; shift 2
    local cur
    cur=$(current_rules "$n")
    { echo "$cur"; for m in "$@"; do echo "        ip saddr $NET.$m numgen random mod 100 < $pct drop"; done; } | rules "$n"
}

current_rules() { # the drop rules now in member n's input chain
    nsx "$1" nft list chain inet $PREFIX input | grep -E '^\s+ip saddr' || true
}

cmd_heal() {
    local n
    if [[ $# -eq 0 ]]; then set -- $(seq 1 "$NODES"); fi
    for n in "$@"; do rules "$n" </dev/null; done
}

cmd_clock() { # n spec
    need_run
    echo "$2" >"$(mdir "$1")/faketime"
}

# The newest file of a kind in the member's data; per target.
newest() { # dir glob
    find "$1" -maxdepth 1 -name "$2" -type f -printf '%T@ %p\n' 2>/dev/null | sort -n | tail -n 1 | cut -d' ' -f2-
}

cmd_disk() { # n fault
    need_run
    local n=$1 fault=$2 d f
    d="$(mdir "$n")/data"
    if pid=$(member_pid "$n") && kill -0 "$pid" 2>/dev/null; then die "member $n is running; stop it first"; fi
    case "$TARGET/$fault" in
        zookeeper/truncate-log | zookeeper/corrupt-log) f=$(newest "$d/version-2" 'log.*') ;;
        zookeeper/corrupt-snapshot) f=$(newest "$d/version-2" 'snapshot.*') ;;
        # paddock's log is its segments (RocksDB beside them holds only synced checkpoints of the
        # log's metadata, which a power loss keeps).
        paddock/truncate-log) f=$(newest "$d/paddock/raftdb/log" '*.seg') ;;
        paddock/corrupt-log) f=$(newest "$d/paddock/raftdb/log" '*.seg') ;;
        paddock/corrupt-snapshot) f=$(newest "$d/paddock/snapshots" '*') ;;
        */wipe)
            find "$d" -mindepth 1 -maxdepth 1 ! -name myid -exec rm -rf {} +
            echo "wiped $d (kept myid)"
            return 0
            ;;
        *) die "unknown disk fault $fault" ;;
    esac
    [[ -n "$f" ]] || { echo "no file for $fault under $d"; return 0; }
    # ZooKeeper preallocates its logs with zeros: the data ends at the last non-zero byte. A paddock
    # segment may be a pruned one written over, with its old records past the new ones: its data
    # ends where its records do (20-byte headers, the length first; a header of zeros ends them).
    python3 - "$fault" "$f" <<'PY'
import os, struct, sys
fault, paths = sys.argv[1], sys.argv[2:]
def segment_end(data):
  at = 0
  while at + 20 <= len(data) and data[at:at + 20] != bytes(20):
    at += 20 + struct.unpack_from("<I", data, at)[0]
  return min(at, len(data))
for path in paths:
  data = open(path, "rb").read()
  end = segment_end(data) if path.endswith(".seg") else len(data.rstrip(b"\0"))
  if end == 0:
    print(f"{path}: empty, left alone"); continue
  if fault == "truncate-log":
    cut = max(0, end - 37)
    with open(path, "r+b") as f:
        f.truncate(cut)
    print(f"{path}: truncated from {end} to {cut} bytes")
  elif fault == "corrupt-log":
    at = max(0, end - 20)
    with open(path, "r+b") as f:
        f.seek(at); b = f.read(8); f.seek(at); f.write(bytes(x ^ 0xFF for x in b))
    print(f"{path}: flipped 8 bytes at {at} (data ends at {end})")
  else:
    at = end // 2
    with open(path, "r+b") as f:
        f.seek(at); b = f.read(16); f.seek(at); f.write(bytes(x ^ 0xFF for x in b))
    print(f"{path}: flipped 16 bytes at {at} of {end}")
PY
}

cmd_egress() {
    nsx "$1" nft list counter inet $PREFIX egress | sed -n 's/.*packets \([0-9]*\).*/\1/p'
}

main() {
    local cmd=${1:-}
    [[ $# -gt 0 ]] && shift
    case "$cmd" in
        setup) cmd_setup ;;
        teardown) cmd_teardown ;;
        start) cmd_start "$1" ;;
        stop) cmd_stop "$1" ;;
        kill) cmd_stop "$1" KILL ;;
        pause) kill -STOP "$(member_pid "$1")"; echo "=== $(stamp) SIGSTOP" >>"$(mdir "$1")/member.log" ;;
        resume) kill -CONT "$(member_pid "$1")"; echo "=== $(stamp) SIGCONT" >>"$(mdir "$1")/member.log" ;;
        role) cmd_role "$1" ;;
        alive) pid=$(member_pid "$1") && kill -0 "$pid" 2>/dev/null && echo yes || echo no ;;
        block) cmd_block "$@" ;;
        lossy) cmd_lossy "$@" ;;
        heal) cmd_heal "$@" ;;
        clock) cmd_clock "$@" ;;
        disk) cmd_disk "$@" ;;
        egress) cmd_egress "$1" ;;
        *) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
}

main "$@"
