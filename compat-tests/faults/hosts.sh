#!/usr/bin/env bash
# The fault suite's hosts and the hands of its nemeses: every action on a member goes through here, so the
# Go driver (and a person debugging a run) can call the same commands.
#
#   hosts.sh setup                 a bridge pdkf-br in the root namespace (10.77.0.254/24) and, per member N,
#                                  a namespace pdkf-nN with veth pdkf-vN <-> eth0 = 10.77.0.N/24, loopback up,
#                                  no default route, an nftables table `inet pdkf` (partitions, egress guard)
#   hosts.sh teardown              stops every member and removes all of it, also leftovers of a crashed run
#                                  (anything named pdkf-*)
#   hosts.sh start N [ARMED] | stop N | kill N | pause N | resume N   (ARMED: a fault armed at the start, as `arm`)
#   hosts.sh alive N               prints yes if member N's process runs
#   hosts.sh role N                prints the member's `Mode:` from `srvr` (leader/follower/standalone/...)
#   hosts.sh block N M...          member N drops every packet from the members M (one-way: M -> N)
#   hosts.sh lossy N PCT M...      member N drops PCT% of the packets from members M (nftables numgen)
#   hosts.sh heal [N...]           flushes the partition rules (all members by default)
#   hosts.sh clock N SPEC          writes SPEC ("+30s", "-20s", "+0 x1.5") to member N's faketime file
#   hosts.sh disk N FAULT          FAULT = truncate-log | corrupt-log | corrupt-snapshot | wipe (member stopped)
#   hosts.sh exit N                how member N's last process ended: its exit status (137: kill -9), or `running`
#   hosts.sh fill N | unfill N     fills member N's file system (filler files) / removes the fillers
#   hosts.sh arm N WHAT            arms a fault in member N's shim: cut, torn-write, torn-sync, eio:KIND
#   hosts.sh fired N               prints what the armed fault hit (empty: nothing yet)
#   hosts.sh powerloss N           replaces member N's data with what its shim kept as durable (stopped)
#   hosts.sh repair N              `paddock repair --data-dir` on member N's data: a dry run (paddock only)
#   hosts.sh egress N              prints the count of packets member N tried to send off 10.77.0.0/24
#
# Disks: with FAULTS_DISK_MB=M, setup puts each member's data dir on an ext4 file system of M MB of its
# own (a sparse file nN/$PREFIX-disk.img on a loop device, mounted on nN/data), which `fill` fills; the
# teardown copies the data back into nN/data and removes the mount, the loop device and the image.
# With FAULTS_SHIM=SO every member runs under that LD_PRELOAD shim (server/tests/shim/powerloss.c, built
# by run.sh): it keeps in nN/shadow what a power loss would leave, and `arm` makes it cut the power or
# fail a call with EIO. A start first copies the data dir into a fresh shadow: what a killed member left
# is on the disk (only the power takes what was not made durable).
#
# With FAULTS_SLOT=S (1-9) every name is pdkfS-* instead of pdkf-* and every address 10.77.S.* instead of
# 10.77.0.*, so that runs in different slots do not touch each other.
#
# Environment (set by run.sh): FAULTS_RUN (the run folder: members in $FAULTS_RUN/nN), FAULTS_NODES,
# FAULTS_TARGET (zookeeper|paddock), PADDOCK_BIN, PADDOCK_SERVE_ARGS (extra `paddock serve` flags), ZK_CP (ZooKeeper's classpath), FAULTS_FAKETIME (1: start
# members under libfaketime so the clock nemesis can move their clocks), FAULTS_DISK_MB and FAULTS_SHIM (above).
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
    if [[ "${FAULTS_DISK_MB:-0}" != 0 ]]; then
        need_run
        for i in $(seq 1 "$NODES"); do disk_setup "$i"; done
    fi
}

# Member n's data dir on an ext4 file system of its own (no blocks reserved for root: the members run as
# root, and a full disk must be full for them too). What the data dir held is moved onto it.
disk_setup() {
    local n=$1 d img
    d="$(mdir "$n")"
    img="$d/$PREFIX-disk.img"
    mkdir -p "$d/data"
    rm -f "$img"
    truncate -s "${FAULTS_DISK_MB}M" "$img"
    mkfs.ext4 -q -F -m 0 -E lazy_itable_init=1,lazy_journal_init=1 "$img" || die "mkfs.ext4 $img failed"
    rm -rf "$d/data.pre"
    mv "$d/data" "$d/data.pre"
    mkdir "$d/data"
    mount -o loop "$img" "$d/data" || { rmdir "$d/data"; mv "$d/data.pre" "$d/data"; die "could not mount $img"; }
    rmdir "$d/data/lost+found" 2>/dev/null || true
    cp -a "$d/data.pre/." "$d/data/"
    rm -rf "$d/data.pre"
}

# Every loop device of this slot's images (also a crashed run's): its data copied back to the mount
# point's path, then unmounted and detached, and the image removed.
disk_teardown() {
    local dev back mnt
    while read -r dev back; do
        [[ -n "$dev" ]] || continue
        back=${back% (deleted)}
        [[ "$back" == */"$PREFIX-disk.img" ]] || continue
        for mnt in $(findmnt -rn -o TARGET -S "$dev" 2>/dev/null || true); do
            rm -f "$mnt"/filler-*
            rm -rf "$mnt.out"
            mkdir -p "$mnt.out"
            cp -a "$mnt/." "$mnt.out/" 2>/dev/null || true
            for _ in $(seq 1 50); do umount "$mnt" 2>/dev/null && break; sleep 0.1; done
            if ! mountpoint -q "$mnt"; then
                rm -rf "$mnt"
                mv "$mnt.out" "$mnt"
            else
                rm -rf "$mnt.out"
                echo "hosts.sh: could not unmount $mnt" >&2
            fi
        done
        for _ in $(seq 1 50); do
            losetup -j "$back" 2>/dev/null | grep -q . || break
            losetup -d "$dev" 2>/dev/null || true
            sleep 0.1
        done
        rm -f "$back"
    done < <(losetup -l -n -O NAME,BACK-FILE 2>/dev/null || true)
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
    disk_teardown
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

cmd_start() { # n [armed]: with the shim, ARMED (as for `arm`) is armed before the member starts
    need_run
    local n=$1 armed=${2:-} d pid
    d="$(mdir "$n")"
    [[ -f "$d/zoo.cfg" ]] || die "no $d/zoo.cfg"
    if pid=$(member_pid "$n") && kill -0 "$pid" 2>/dev/null; then
        return 0
    fi
    local pre=(env) preload=()
    if [[ "${FAULTS_FAKETIME:-0}" == 1 ]]; then
        [[ -f "$d/faketime" ]] || echo "+0" >"$d/faketime"
        # Only the wall clock moves (CLOCK_REALTIME: what a clock step or a skewed NTP does); the offset file
        # is re-read every second. FAKETIME_FORCE_MONOTONIC_FIX=0: without it a JVM hangs in start-up.
        preload+=("$(faketime_lib)")
        pre+=(FAKETIME_TIMESTAMP_FILE="$d/faketime" FAKETIME_CACHE_DURATION=1
            FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_FORCE_MONOTONIC_FIX=0)
    fi
    if [[ -n "${FAULTS_SHIM:-}" ]]; then
        # The shadow starts as a copy of the data dir: what a killed member left is on the disk.
        rm -rf "$d/shadow" "$d/control" "$d/control.taken" "$d/control.fired"
        shadow_seed "$d/data" "$d/shadow"
        [[ -z "$armed" ]] || echo "$armed" >"$d/control"
        preload+=("$FAULTS_SHIM")
        pre+=(SHIM_ROOT="$d/data" SHIM_SHADOW="$d/shadow" SHIM_CONTROL="$d/control"
            SHIM_SEED="$((n * 7919 + $(date +%s) % 100000))")
    fi
    [[ ${#preload[@]} -gt 0 ]] && pre+=(LD_PRELOAD="${preload[*]}")
    local cmd
    case "$TARGET" in
        zookeeper)
            # The same JVM flags as scripts/zookeeper.sh, with QuorumPeerMain for an ensemble member.
            cmd=(java -Xmx192m -XX:+UseSerialGC -Dzookeeper.admin.enableServer=false -Dzookeeper.log.dir="$d"
                -cp "$ZK_CP" org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg")
            ;;
        paddock)
            # shellcheck disable=SC2206 # PADDOCK_SERVE_ARGS: extra flags, split on spaces
            cmd=("$PADDOCK_BIN" serve --config "$d/zoo.cfg" ${PADDOCK_SERVE_ARGS:-})
            ;;
        *) die "unknown target $TARGET" ;;
    esac
    rm -f "$d/exit" "$d/pid"
    echo "=== $(stamp) start" >>"$d/member.log"
    # A waiting shell records how the member ended (nN/exit: its status, 137 for kill -9). `ip netns
    # exec` and `env` exec, so the pid is the member's own (pause, kill and the teardown signal it).
    (
        set +e
        ip netns exec "$(ns "$n")" "${pre[@]}" "${cmd[@]}" >>"$d/member.log" 2>&1 </dev/null &
        echo $! >"$d/pid.tmp"
        mv "$d/pid.tmp" "$d/pid"
        wait $!
        rc=$?
        echo "=== $(stamp) exited with status $rc" >>"$d/member.log"
        echo $rc >"$d/exit"
    ) >/dev/null 2>&1 </dev/null &
    for _ in $(seq 1 100); do [[ -f "$d/pid" ]] && break; sleep 0.02; done
}

# Copies a data dir into a shim's shadow (powerloss.c's layout: inodes/<ino> with a file's bytes,
# sparse, dirs/<ino> with a directory's entries).
shadow_seed() { # data shadow
    python3 - "$1" "$2" <<'PY'
import os, stat, sys
data, shadow = sys.argv[1:3]
os.makedirs(shadow + "/inodes"); os.makedirs(shadow + "/dirs")
def copy(src, dst):
    with open(src, "rb") as f, open(dst, "wb") as o:
        size = os.fstat(f.fileno()).st_size
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            if b.count(0) != len(b):
                o.seek(f.tell() - len(b)); o.write(b)
        o.truncate(size)
def walk(d):
    lines = []
    for e in os.scandir(d):
        st = e.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            lines.append(f"{e.name}\t{st.st_ino}\td\n"); walk(e.path)
        elif stat.S_ISREG(st.st_mode) and not e.name.startswith("filler-"):
            lines.append(f"{e.name}\t{st.st_ino}\tf\n"); copy(e.path, f"{shadow}/inodes/{st.st_ino}")
    with open(f"{shadow}/dirs/{os.stat(d).st_ino}", "w") as o:
        o.writelines(lines)
walk(data)
PY
}

# What a power loss left: member n's data dir rebuilt from its shadow (as server/tests/power_loss.rs
# `materialize` does).
cmd_powerloss() {
    need_run
    local n=$1 d
    d="$(mdir "$n")"
    if pid=$(member_pid "$n") && kill -0 "$pid" 2>/dev/null; then die "member $n is running; stop it first"; fi
    [[ -f "$d/shadow/root" ]] || die "member $n ran without the shim: no shadow"
    find "$d/data" -mindepth 1 -maxdepth 1 ! -name 'filler-*' -exec rm -rf {} +
    python3 - "$d/shadow" "$d/data" <<'PY'
import os, sys
shadow, dest = sys.argv[1:3]
files = 0
def build(ino, to):
    global files
    os.makedirs(to, exist_ok=True)
    try:
        listing = open(f"{shadow}/dirs/{ino}").read().splitlines()
    except FileNotFoundError:
        return
    for line in listing:
        name, ino2, kind = line.split("\t")
        if kind == "d":
            build(ino2, os.path.join(to, name))
            continue
        files += 1
        src = f"{shadow}/inodes/{ino2}"
        with open(os.path.join(to, name), "wb") as o:
            if os.path.exists(src):
                with open(src, "rb") as f:
                    size = os.fstat(f.fileno()).st_size
                    while True:
                        b = f.read(1 << 20)
                        if not b:
                            break
                        if b.count(0) != len(b):
                            o.seek(f.tell() - len(b)); o.write(b)
                    o.truncate(size)
build(open(f"{shadow}/root").read().strip(), dest)
print(f"data rebuilt from what was durable ({files} files)")
PY
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
        # log's metadata). The segment written last is the highest-numbered one that holds records
        # (a start begins a new segment, empty until the first write reaches it).
        paddock/truncate-log | paddock/corrupt-log)
            f=$(find "$d/paddock/raftdb/log" -maxdepth 1 -name '*.seg' -type f 2>/dev/null | sort -r | tr '\n' ' ') ;;
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
    # segment (consensus/src/segments.rs) is allocated whole: in format 2 a header block, then 512-byte
    # sectors of 500 bytes of records, a stamp and a CRC; records are `len u32 | seq u64 | 2 x crc32`
    # and a payload, a header of zeros after the last. Its data ends where its last record does (a
    # spare written over holds older records past that). Format 1 (no header block): records straight
    # in the file. The fault goes to the newest segment that holds a record.
    # shellcheck disable=SC2086 # $f: the candidate segments, newest first
    python3 - "$fault" $f <<'PY'
import os, struct, sys
fault, paths = sys.argv[1], sys.argv[2:]
MAGIC = b"pdklog\0\x02"
def records_end(body):
  at = 0
  while at + 20 <= len(body) and body[at:at + 20] != bytes(20):
    at += 20 + struct.unpack_from("<I", body, at)[0]
  return min(at, len(body))
def data_end(path, data):
  # The file offset where the last record ends (0: no record).
  if not path.endswith(".seg"):
    return len(data.rstrip(b"\0")), "log"
  if data[:8] != MAGIC:
    return records_end(data), "segment (format 1)"
  body = b"".join(data[at:at + 500] for at in range(4096, len(data) - 511, 512))
  end = records_end(body)
  return (0 if end == 0 else 4096 + end // 500 * 512 + end % 500), "segment (format 2)"
done = False
for path in paths:
  data = open(path, "rb").read()
  end, what = data_end(path, data)
  if end == 0:
    continue
  done = True
  name = os.path.basename(path)
  if fault == "truncate-log":
    cut = max(0, end - 37)
    with open(path, "r+b") as f:
        f.truncate(cut)
    print(f"{name} ({what}): cut from {len(data)} to {cut} bytes (its last record ends at {end})")
  elif fault == "corrupt-log":
    at = max(0, end - 20)
    with open(path, "r+b") as f:
        f.seek(at); b = f.read(8); f.seek(at); f.write(bytes(x ^ 0xFF for x in b))
    print(f"{name} ({what}): flipped 8 bytes at {at} (its last record ends at {end})")
  else:
    at = end // 2
    with open(path, "r+b") as f:
        f.seek(at); b = f.read(16); f.seek(at); f.write(bytes(x ^ 0xFF for x in b))
    print(f"{name}: flipped 16 bytes at {at} of {end}")
  break
if not done:
  print("no file with data for " + fault + ": left alone")
PY
}

cmd_fill() { # n: leaves no free block on member n's file system
    local d free
    d="$(mdir "$1")/data"
    mountpoint -q "$d" || die "member $1's data dir is not on a file system of its own (FAULTS_DISK_MB)"
    free=$(df --output=avail -B1 "$d" | tail -n 1 | tr -d ' ')
    [[ "$free" -gt 65536 ]] && fallocate -l "$((free - 65536))" "$d/filler-1" 2>/dev/null
    # What fallocate left, block by block.
    dd if=/dev/zero of="$d/filler-2" bs=4096 2>/dev/null || true
    echo "filled $d: $(df --output=avail -B1 "$d" | tail -n 1 | tr -d ' ') bytes free"
}

cmd_unfill() {
    local d
    d="$(mdir "$1")/data"
    rm -f "$d"/filler-*
    echo "freed $d: $(df --output=avail -h "$d" | tail -n 1 | tr -d ' ') free"
}

cmd_arm() { # n what
    local d
    d="$(mdir "$1")"
    [[ -n "${FAULTS_SHIM:-}" ]] || die "the members run without the shim (FAULTS_SHIM)"
    rm -f "$d/control.fired" "$d/control.taken"
    echo "$2" >"$d/control.tmp"
    mv "$d/control.tmp" "$d/control"
}

cmd_repair() {
    [[ "$TARGET" == paddock ]] || { echo "no repair tool for $TARGET"; return 0; }
    local out rc=0
    out=$("$PADDOCK_BIN" repair --data-dir "$(mdir "$1")/data" 2>&1) || rc=$?
    # Its verdict and what it says of a majority, on one line.
    echo "exit $rc: $(echo "$out" | grep -E '^(verdict|a majority):' | tr '\n' ' ' | cut -c 1-700)"
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
        start) cmd_start "$@" ;;
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
        exit) if [[ -f "$(mdir "$1")/exit" ]]; then cat "$(mdir "$1")/exit"; else echo running; fi ;;
        fill) cmd_fill "$1" ;;
        unfill) cmd_unfill "$1" ;;
        arm) cmd_arm "$@" ;;
        fired) cat "$(mdir "$1")/control.fired" 2>/dev/null || true ;;
        powerloss) cmd_powerloss "$1" ;;
        repair) cmd_repair "$1" ;;
        egress) cmd_egress "$1" ;;
        *) sed -n '2,39p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
}

main "$@"
