#!/usr/bin/env bash
# ZooKeeper 3.9.5 to paddock and back (issue 40). A real ZooKeeper is written by kazoo
# (zk_writer.py: ACLs, multis that commit and fail, containers, TTL nodes, create2, sequentials,
# a value near 1 MiB and a multi above it, sessions left open with their ephemerals) with a
# small snapCount, stopped cleanly, written again, and killed with kill -9: its logs span several
# snapshots. Then, each case a test:
#   zk-restart          ZooKeeper's own restart on a copy of the files, dumped node by node
#   import              paddock import reads them, the digest matches, and it writes the data dir
#   import-equal        paddock serving the import: every node, stat and ACL equal to the restart
#   sessions-resume     each session left open resumes on paddock with its id and ZooKeeper's
#                       password, its ephemerals there; closing it deletes them
#   zxids-continue      a new write's zxid is above every imported one; a sequential continues
#   export-datadir      paddock export of the stopped server, as version-2/snapshot.<zxid> of a
#                       fresh ZooKeeper: ZooKeeper serves the same tree, its digest check quiet
#   admin-snapshot      GET /commands/snapshot (digest auth) from a running paddock: 401 without
#                       credentials, the headers, and ZooKeeper loads the body with the same tree
#   zk-restore          the same body POSTed to a fresh ZooKeeper's own /commands/restore: the
#                       same tree (skipped if Jetty's jars, which its AdminServer needs, cannot be
#                       fetched)
#   ensemble            member 1 of a 3-member paddock ensemble imports (--config), the others
#                       are prepared empty to join (import --join); all three start at once; the
#                       tree read through member 3 equals the restart
#   ensemble-restore    paddock backup from that ensemble, more writes, a session opened after
#                       it; paddock restore with a kazoo client connected to each member: all
#                       three reconnect to their sessions, with their ephemerals, the tree the
#                       backup's, the later session expired, a watch fired, and no client's
#                       zxid (its lastZxidSeen) ever goes backwards: the restore's is above all
#   restore-damaged     paddock restore of a damaged or truncated backup: exit 1, a clear
#                       message, the ensemble's zxid and tree unchanged
#   follow-pitr         paddock backup --follow DIR from the ensemble, started before the
#                       restore above, restarted mid-way, the leader stopped before the last
#                       writes: restore --to-zxid of DIR at three points (each after writes of
#                       every kind) into a standalone paddock equals the ensemble's tree dumped
#                       at that point, node by node, stat by stat
#   follow-zookeeper    ZooKeeper 3.9.5 started on a copy of DIR serves the same tree
#   pitr-zxid           paddock restore --to-zxid Z of ZooKeeper's files into a standalone
#                       paddock against ZooKeeper's own restart on a copy cut right after Z
#   pitr-time           --to-time T (the time of Z's transaction) gives the same snapshot
#   damaged-*           a bad Adler32 mid-log, a log missing between snapshot and tail, an ACL
#                       index absent from the cache, a snapshot of another dbid: exit 1, a clear
#                       message, nothing written
#   torn-tail           a log cut inside its last record imports, the torn record dropped
#   cutover             cutover.sh: the live cut-over of a 3-member ZooKeeper ensemble serving two
#                       Kafka brokers, a Curator lock, a Java client's watches and kazoo, to paddock
#                       on the same addresses, sessions kept; its checks count in this row
#                       (MIGRATION_CUTOVER=0 skips it)
# --against-zookeeper does not apply (the suite compares the two).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$HERE/../lib.sh"
compat_init migration
compat_args "$@"
[[ "$TARGET" == paddock ]] || compat_fail "this suite compares paddock with ZooKeeper itself; --against-zookeeper does not apply"

PY="$ROOT/.venv/bin/python"
[[ -x "$PY" ]] || compat_fail "no $PY: run scripts/install-deps.sh"
BIN="$(compat_paddock_bin)"
FILL="${MIGRATION_FILL:-300}"
W="$COMPAT_WORK"
PASSED=0
FAILED=0
SKIPPED=0

ok() { PASSED=$((PASSED + 1)); echo "migration: ok   $1"; }
bad() { FAILED=$((FAILED + 1)); echo "migration: FAIL $1${2:+: $2}"; }

ZK_FLAGS="-Dzookeeper.snapCount=60 -Dzookeeper.preAllocSize=16 -Djute.maxbuffer=4194304 -Dznode.container.checkIntervalMs=500"
ZK_PORT=$(free_port)

zk_start() { # dir [extra jvm flags]
    ZK_JVMFLAGS="$ZK_FLAGS ${2:-}" bash "$ROOT/scripts/zookeeper.sh" start "$ZK_PORT" "$1" >/dev/null
    COMPAT_ZK_DIRS+=("$1")
}
zk_stop() { bash "$ROOT/scripts/zookeeper.sh" stop "$1" >/dev/null 2>&1 || true; }
zk_kill() { kill -9 "$(cat "$1/zk.pid")"; rm -f "$1/zk.pid"; sleep 0.5; }
dump() { "$PY" "$HERE/tree_dump.py" dump "$1" "$2" --auth digest:alice:secret >/dev/null; }
compare() { "$PY" "$HERE/tree_dump.py" compare "$1" "$2" "${@:3}"; }
pd_serve() { # name port dir [args]
    local name=$1 port=$2 dir=$3
    shift 3
    start_paddock "$name" "$port" "$dir" --extended-types -D jute.maxbuffer=4194304 \
        -D admin.enableServer=false "$@"
}

# --- ZooKeeper writes -----------------------------------------------------------------------
ZK="$W/zk"
zk_start "$ZK"
"$PY" "$HERE/zk_writer.py" "127.0.0.1:$ZK_PORT" "$W/live.json" --fill "$FILL" >"$W/writer1.log" 2>&1 \
    || compat_fail "the writer failed against ZooKeeper (see $W/writer1.log)"
sleep 1.5 # the container manager deletes the emptied container and the expired TTL node
zk_stop "$ZK"
zk_start "$ZK"
"$PY" "$HERE/zk_writer.py" "127.0.0.1:$ZK_PORT" "$W/live.json" --fill "$FILL" --phase 2 >"$W/writer2.log" 2>&1 \
    || compat_fail "the second writer failed against ZooKeeper (see $W/writer2.log)"
zk_kill "$ZK"
cp -r "$ZK/zk-data" "$W/orig"
echo "migration: ZooKeeper wrote $(ls "$W/orig/version-2" | grep -c '^snapshot') snapshots and $(ls "$W/orig/version-2" | grep -c '^log') logs"

# --- zk-restart: the reference --------------------------------------------------------------
mkdir -p "$W/restart" && cp -r "$W/orig" "$W/restart/zk-data"
if zk_start "$W/restart" && dump "127.0.0.1:$ZK_PORT" "$W/zk.json"; then
    ok zk-restart
else
    compat_fail "ZooKeeper's own restart on the files failed (see $W/restart/zk.log)"
fi
zk_stop "$W/restart"

# --- import ---------------------------------------------------------------------------------
PD="$W/pd"
if "$BIN" import --zookeeper "$W/orig" --data-dir "$PD" >"$W/import.txt" 2>&1 \
    && grep -q '^digest: match' "$W/import.txt"; then
    ok import
else
    bad import "$(tail -3 "$W/import.txt")"
fi
sed 's/^/  /' "$W/import.txt"
MAX_ZXID=$(sed -n 's/.*the largest \(0x[0-9a-f]*\)).*/\1/p' "$W/import.txt")

PD_PORT=$(free_port)
pd_serve pd "$PD_PORT" "$PD"
dump "127.0.0.1:$PD_PORT" "$W/pd.json"
if compare "$W/zk.json" "$W/pd.json" >"$W/cmp1.txt"; then
    ok import-equal
    tail -1 "$W/cmp1.txt" | sed 's/^/  /'
else
    bad import-equal "$(head -5 "$W/cmp1.txt")"
fi

# --- sessions-resume ------------------------------------------------------------------------
if "$PY" - "127.0.0.1:$PD_PORT" "$W/live.json" <<'PY'; then ok sessions-resume; else bad sessions-resume; fi
import json, sys
from kazoo.client import KazooClient
hosts, live = sys.argv[1], json.load(open(sys.argv[2]))
assert live, "sessions were left open"
for s in live:
    sid, pw = s["session"], bytes.fromhex(s["password"])
    zk = KazooClient(hosts=hosts, client_id=(sid, pw), timeout=30)
    zk.start(timeout=15)
    assert zk.client_id[0] == sid, f"session {sid:#x} resumed as {zk.client_id[0]:#x}"
    mine = f"/app/live/fixed-{hex(sid)}"
    st = zk.exists(mine)
    assert st is not None and st.ephemeralOwner == sid, f"{mine}: {st}"
    zk.stop(); zk.close()  # closeSession: its ephemerals go
    probe = KazooClient(hosts=hosts); probe.start()
    assert probe.exists(mine) is None, f"{mine} outlived its session"
    probe.stop(); probe.close()
print(f"{len(live)} sessions resumed with ZooKeeper's passwords and closed")
PY

# --- zxids-continue -------------------------------------------------------------------------
if "$PY" - "127.0.0.1:$PD_PORT" "$MAX_ZXID" "$W/zk.json" <<'PY'; then ok zxids-continue; else bad zxids-continue; fi
import json, sys
from kazoo.client import KazooClient
hosts, max_zxid, zk_dump = sys.argv[1], int(sys.argv[2], 16), json.load(open(sys.argv[3]))
zk = KazooClient(hosts=hosts); zk.start(); zk.add_auth("digest", "alice:secret")
zk.create("/after-import", b"x")
st = zk.exists("/after-import")
assert st.czxid > max_zxid, (hex(st.czxid), hex(max_zxid))
# ZooKeeper's next suffix is the parent's stored cversion: (client cversion + children) / 2.
seq = zk_dump["/app/seq"]["stat"]
want = (seq["cversion"] + seq["numChildren"]) // 2
got = zk.create("/app/seq/job-", b"", sequence=True)
assert got == f"/app/seq/job-{want:010d}", (got, want)
print(f"new zxid {st.czxid:#x} above {max_zxid:#x}; next sequential {got}")
zk.stop(); zk.close()
PY
dump "127.0.0.1:$PD_PORT" "$W/pd2.json"
stop_paddock pd

# --- export-datadir -------------------------------------------------------------------------
BACK="$W/back"
mkdir -p "$BACK/zk-data/version-2"
if "$BIN" export --data-dir "$PD" --out "$BACK/zk-data/version-2" >"$W/export.txt" 2>&1 \
    && zk_start "$BACK" && dump "127.0.0.1:$ZK_PORT" "$W/back.json" \
    && compare "$W/pd2.json" "$W/back.json" >"$W/cmp2.txt" \
    && ! grep -qi 'digest mismatch\|Digests are not matching\|mismatch' "$BACK/zk.log"; then
    ok export-datadir
    sed 's/^/  /' "$W/export.txt"
    tail -1 "$W/cmp2.txt" | sed 's/^/  /'
else
    bad export-datadir "$(cat "$W/export.txt" "$W/cmp2.txt" 2>/dev/null | tail -5)"
fi
zk_stop "$BACK"

# --- admin-snapshot -------------------------------------------------------------------------
ADMIN_PORT=$(free_port)
PD_PORT=$(free_port)
# The super user (admin:pw) holds ALL on every node, so also on /.
SUPER="admin:$(printf 'admin:pw' | openssl dgst -binary -sha1 | openssl base64)"
start_paddock pd-admin "$PD_PORT" "$PD" --extended-types -D jute.maxbuffer=4194304 \
    -D admin.serverAddress=127.0.0.1 -D admin.serverPort="$ADMIN_PORT" \
    -D "DigestAuthenticationProvider.superDigest=$SUPER"
dump "127.0.0.1:$PD_PORT" "$W/pd3.json"
NOAUTH=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ADMIN_PORT/commands/snapshot")
curl -s -D "$W/snap.head" -o "$W/snap.bin" -H 'Authorization: digest admin:pw' \
    "http://127.0.0.1:$ADMIN_PORT/commands/snapshot?streaming=true"
LAST=$(sed -n 's/^last_zxid: *0x\([0-9a-f]*\).*/\1/p' "$W/snap.head" | tr -d '\r')
SIZE=$(sed -n 's/^snapshot_size: *\([0-9]*\).*/\1/p' "$W/snap.head" | tr -d '\r')
stop_paddock pd-admin
ADM="$W/admin-back"
mkdir -p "$ADM/zk-data/version-2"
cp "$W/snap.bin" "$ADM/zk-data/version-2/snapshot.$LAST"
if [[ "$NOAUTH" == 401 && -n "$LAST" && "$SIZE" == "$(stat -c %s "$W/snap.bin")" ]] \
    && zk_start "$ADM" && dump "127.0.0.1:$ZK_PORT" "$W/adm.json" \
    && compare "$W/pd3.json" "$W/adm.json" >"$W/cmp3.txt"; then
    ok admin-snapshot
    echo "  snapshot of $SIZE bytes at 0x$LAST; $(tail -1 "$W/cmp3.txt")"
else
    bad admin-snapshot "401? $NOAUTH, last_zxid $LAST, size $SIZE; $(tail -3 "$W/cmp3.txt" 2>/dev/null)"
fi
zk_stop "$ADM"

# --- zk-restore: the same snapshot through ZooKeeper's own restore command ------------------
# ZooKeeper's AdminServer needs Jetty, which its pom leaves "provided": the metrics suite's pom
# fetches it (once, into the cache both suites share).
EXTRA="${ZK_CACHE_ROOT:-$HOME/.cache/paddock}/zookeeper-metrics-admin"
if [[ ! -f "$EXTRA/.complete" ]]; then
    mkdir -p "$EXTRA"
    mvn -q -B -f "$ROOT/compat-tests/metrics/pom.xml" dependency:copy-dependencies \
        -DoutputDirectory="$EXTRA/lib" >"$EXTRA/mvn.log" 2>&1 && touch "$EXTRA/.complete" || true
fi
if [[ -f "$EXTRA/.complete" ]]; then
    REST="$W/restore"
    mkdir -p "$REST/data"
    REST_ADMIN=$(free_port)
    cat >"$REST/zoo.cfg" <<CFG
tickTime=2000
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
dataDir=$REST/data
4lw.commands.whitelist=*
admin.enableServer=true
admin.serverAddress=127.0.0.1
admin.serverPort=$REST_ADMIN
extendedTypesEnabled=true
CFG
    java -Xmx256m -Djute.maxbuffer=4194304 -Dzookeeper.log.dir="$REST" \
        -cp "$(bash "$ROOT/scripts/zookeeper.sh" classpath):$EXTRA/lib/*" \
        org.apache.zookeeper.server.ZooKeeperServerMain "$REST/zoo.cfg" >"$REST/zk.log" 2>&1 </dev/null &
    echo $! >"$REST/zk.pid"
    COMPAT_ZK_DIRS+=("$REST")
    deadline=$((SECONDS + 60))
    until [[ "$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$ZK_PORT && printf srvr >&3 && cat <&3" 2>/dev/null)" == "Zookeeper version:"* ]] \
        || ((SECONDS >= deadline)); do sleep 0.3; done
    curl -s -o "$W/restore.json" -w '%{http_code}' -X POST --data-binary "@$W/snap.bin" \
        -H 'Content-Type: application/octet-stream' -H 'Authorization: digest admin:pw' \
        "http://127.0.0.1:$REST_ADMIN/commands/restore" >"$W/restore.code" || true
    if [[ "$(cat "$W/restore.code")" == 200 ]] && grep -q '"error" : null' "$W/restore.json" \
        && dump "127.0.0.1:$ZK_PORT" "$W/rest.json" && compare "$W/pd3.json" "$W/rest.json" >"$W/cmp5.txt"; then
        ok zk-restore
        echo "  ZooKeeper's POST /commands/restore: $(tr -d '\n ' <"$W/restore.json"); $(tail -1 "$W/cmp5.txt")"
    else
        bad zk-restore "HTTP $(cat "$W/restore.code"): $(head -c 300 "$W/restore.json"); $(tail -3 "$W/cmp5.txt" 2>/dev/null)"
    fi
    zk_stop "$REST"
else
    SKIPPED=$((SKIPPED + 1))
    report_skip 1 "zk-restore: ZooKeeper's AdminServer jars could not be fetched (see $EXTRA/mvn.log)"
fi

# --- ensemble-restore and restore-damaged (run while the ensemble below serves) -------------
ensemble_restore() {
    if "$PY" - "$BIN" "$ADMINS" "127.0.0.1:$P1,127.0.0.1:$P2,127.0.0.1:$P3" "$W" >"$W/ens-restore.txt" 2>&1 <<'PY'; then
import json, subprocess, sys, threading, time
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import SessionExpiredError, ConnectionLoss
bin_, admins, members, w = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4]
def run(*args):
    p = subprocess.run([bin_, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr
def client(host):
    c = KazooClient(hosts=host, timeout=20, connection_retry={"max_tries": -1, "delay": 0.2, "max_delay": 1})
    c.start(timeout=30); c.add_auth("digest", "alice:secret")
    c.states = []
    c.add_listener(lambda s, c=c: c.states.append(s))
    return c
cs = [client(m) for m in members]
cs[0].ensure_path("/restore-test")
cs[0].create("/restore-test/a", b"before")
for i, c in enumerate(cs):
    c.create(f"/restore-test/e-{i}", b"mine", ephemeral=True)
rc, out = run("backup", "--servers", admins, "--auth", "digest:admin:pw", "--out", f"{w}/ens-backup.bin")
assert rc == 0, out
print(out.strip())
base = {p: cs[0].get(f"/restore-test/{p}")[0] for p in cs[0].get_children("/restore-test")}
# After the backup: writes, and a session the backup does not hold.
cs[1].set("/restore-test/a", b"after")
cs[2].create("/restore-test/later", b"")
late = client(members[2])
late.create("/restore-test/late-eph", b"", ephemeral=True)
fired = threading.Event()
def watch(ev):
    if ev is not None:
        fired.set()
cs[0].get("/restore-test/a", watch=watch)
sessions = [c.client_id[0] for c in cs]
seen = [c.last_zxid for c in cs]
# restore-damaged: a flipped byte and a cut file change nothing.
raw = open(f"{w}/ens-backup.bin", "rb").read()
bad = bytearray(raw); bad[len(bad) // 2] ^= 0x10
open(f"{w}/ens-bad.bin", "wb").write(bytes(bad))
open(f"{w}/ens-cut.bin", "wb").write(raw[:len(raw) - 7])
zxid_before = cs[1].exists("/restore-test/a").mzxid
for f in ("ens-bad.bin", "ens-cut.bin"):
    rc, out = run("restore", "--servers", admins, "--auth", "digest:admin:pw", f"{w}/{f}")
    assert rc == 1 and "nothing restored" in out, (f, rc, out)
    print(f"damaged {f}: exit 1: {out.strip().splitlines()[-1]}")
assert cs[1].get("/restore-test/a")[0] == b"after"
assert cs[1].exists("/restore-test/a").mzxid == zxid_before
print("RESTORE-DAMAGED-OK")
# The restore, every client connected.
rc, out = run("restore", "--servers", admins, "--auth", "digest:admin:pw", f"{w}/ens-backup.bin")
assert rc == 0, out
print(out.strip().splitlines()[-1])
restored = int(out.split("every member is at zxid ")[1].split(";")[0], 16)
assert restored & 0xFFFFFFFF == 0 and all(restored > s for s in seen), (hex(restored), seen)
deadline = time.time() + 60
while time.time() < deadline and not (KazooState.LOST in late.states and all(c.state == KazooState.CONNECTED and KazooState.SUSPENDED in c.states for c in cs)):
    time.sleep(0.2)
for i, c in enumerate(cs):
    assert KazooState.SUSPENDED in c.states, f"client {i} never saw its connection close: {c.states}"
    assert c.state == KazooState.CONNECTED and c.client_id[0] == sessions[i], (i, c.state)
    c.sync("/")
    data, st = c.get("/restore-test/a")
    assert data == b"before", data
    assert c.last_zxid >= restored > seen[i], (i, hex(c.last_zxid), hex(restored), hex(seen[i]))
    e = c.exists(f"/restore-test/e-{i}")
    assert e is not None and e.ephemeralOwner == sessions[i], (i, e)
    now = {p: c.get(f"/restore-test/{p}")[0] for p in c.get_children("/restore-test")}
    assert now == base, (i, now, base)
# LOST was seen (kazoo then opens a new session by itself, so the state may be CONNECTED again).
assert KazooState.LOST in late.states, late.states
assert fired.wait(10), "the watch set before the restore did not fire"
st = cs[1].set("/restore-test/a", b"new")
assert st.mzxid > restored, (hex(st.mzxid), hex(restored))
print(f"3 clients resumed their sessions at zxid >= {restored:#x} (before: {', '.join(hex(s) for s in seen)}); "
      f"the later session expired; the watch fired; next write {st.mzxid:#x}")
for c in cs + [late]:
    try:
        c.stop(); c.close()
    except Exception:
        pass
PY
        grep -q RESTORE-DAMAGED-OK "$W/ens-restore.txt" && ok restore-damaged
        ok ensemble-restore
        grep -v RESTORE-DAMAGED-OK "$W/ens-restore.txt" | sed 's/^/  /'
    else
        grep -q RESTORE-DAMAGED-OK "$W/ens-restore.txt" && ok restore-damaged || bad restore-damaged
        bad ensemble-restore "$(tail -5 "$W/ens-restore.txt")"
    fi
}

# --- follow-*: paddock backup --follow from the ensemble (started before ensemble-restore) ------
follow_write() { # hosts phase: writes of every kind under /follow-test; prints the last zxid
    "$PY" - "$1" "$2" "$HERE" <<'PY'
import sys, time
from kazoo.client import KazooClient
hosts, phase = sys.argv[1], sys.argv[2]
zk = KazooClient(hosts=hosts, timeout=10); zk.start(); zk.add_auth("digest", "alice:secret")
b = "/follow-test"
if phase == "A":
    # ensemble-restore's sessions are closed: their ephemerals gone before the point.
    for _ in range(100):
        kids = zk.get_children("/restore-test") if zk.exists("/restore-test") else []
        if all(zk.exists(f"/restore-test/{k}").ephemeralOwner == 0 for k in kids):
            break
        time.sleep(0.2)
    zk.ensure_path(b)
other = KazooClient(hosts=hosts, timeout=10); other.start(); other.add_auth("digest", "alice:secret")
other.create(f"{b}/eph-{phase}", b"e", ephemeral=True)
seqs = [zk.create(f"{b}/{phase}-s-", phase.encode() * i, sequence=True) for i in range(4)]
sys.path.insert(0, sys.argv[3])
from zk_writer import raw, CreateTTL, OPEN_ACL_UNSAFE
raw(zk, CreateTTL(f"{b}/{phase}-ttl", b"t", OPEN_ACL_UNSAFE, 5, 3_600_000))
zk.set(seqs[0], phase.encode())
t = zk.transaction()
t.create(f"{b}/{phase}-m", b"m"); t.create(f"{b}/{phase}-m/k-", b"", sequence=True)
t.set_data(f"{b}/{phase}-m", b"mm"); t.check(f"{b}/{phase}-m", 1)
t.commit()
t = zk.transaction(); t.create(f"{b}/{phase}-never", b""); t.check(f"{b}/{phase}-m", 9); t.commit()
zk.set_acls(f"{b}/{phase}-m", zk.get_acls(b)[0])
zk.delete(seqs[1])
other.stop(); other.close()  # its ephemeral goes with its closeSession
st = zk.set(b, phase.encode() + b"!")
print(hex(st.mzxid))
zk.stop(); zk.close()
PY
}
FOLLOW="$W/follow"
follow_start() {
    "$BIN" backup --follow "$FOLLOW" --servers "$ADMINS" --auth digest:admin:pw >>"$W/follow.log" 2>&1 &
    FOLLOW_PID=$!
}
follow_stop() { kill "$FOLLOW_PID" 2>/dev/null || true; wait "$FOLLOW_PID" 2>/dev/null || true; }
follow_cases() {
    local za zb zc fadmin fport ok_pitr=1 why="" leader i
    za=$(follow_write "127.0.0.1:$P1" A) && dump "127.0.0.1:$P1" "$W/follow-A.json" || why="writes A"
    sleep 1; follow_stop; follow_start # the follower restarted mid-way continues
    zb=$(follow_write "127.0.0.1:$P1" B) && dump "127.0.0.1:$P1" "$W/follow-B.json" || why+=" writes B"
    # A leader change: the leader stops; the rest goes on through the two others.
    for i in 1 2 3; do
        port_var="P$i"
        [[ "$(paddock_mode "${!port_var}")" == leader ]] && leader=$i
    done
    stop_paddock "ens$leader"
    local live=$(((leader % 3) + 1)) other=$((((leader + 1) % 3) + 1)) other_var
    port_var="P$live"
    other_var="P$other"
    deadline=$((SECONDS + 30))
    until [[ "$(paddock_mode "${!port_var}")" == leader || "$(paddock_mode "${!other_var}")" == leader ]] \
        || ((SECONDS >= deadline)); do sleep 0.5; done
    zc=$(follow_write "127.0.0.1:${!port_var}" C) && dump "127.0.0.1:${!port_var}" "$W/follow-C.json" || why+=" writes C"
    sleep 3; follow_stop
    fadmin=$(free_port); fport=$(free_port)
    start_paddock follow-pd "$fport" "$W/follow-pd" --extended-types -D admin.serverAddress=127.0.0.1 \
        -D admin.serverPort="$fadmin" -D "DigestAuthenticationProvider.superDigest=$SUPER"
    for z in "$za:A" "$zb:B" "$zc:C"; do
        if "$BIN" restore --to-zxid "${z%%:*}" --servers "127.0.0.1:$fadmin" --auth digest:admin:pw "$FOLLOW" \
            >"$W/follow-pitr-${z##*:}.txt" 2>&1 \
            && dump "127.0.0.1:$fport" "$W/follow-pitr-${z##*:}.json" \
            && compare "$W/follow-${z##*:}.json" "$W/follow-pitr-${z##*:}.json" --ignore-prefix /zookeeper/config \
                >"$W/follow-cmp-${z##*:}.txt"; then
            echo "  --to-zxid ${z%%:*}: $(tail -1 "$W/follow-cmp-${z##*:}.txt")"
        else
            ok_pitr=0
            why+=" ${z##*:}: $(tail -2 "$W/follow-pitr-${z##*:}.txt" "$W/follow-cmp-${z##*:}.txt" 2>/dev/null | tr '\n' ' ')"
        fi
    done
    stop_paddock follow-pd
    local snaps logs
    snaps=$(ls "$FOLLOW/version-2" | grep -c '^snapshot\.')
    logs=$(ls "$FOLLOW/version-2" | grep -c '^log\.')
    if [[ -z "$why" && $ok_pitr == 1 ]] && grep -q 'streaming from .* after 0x' "$W/follow.log" && ((snaps >= 2)); then
        ok follow-pitr
        echo "  $snaps snapshots (the first, and one after the restore), $logs logs; the restart continued: $(grep -c 'streaming from .* after' "$W/follow.log") resumes; the leader (member $leader) stopped before C"
    else
        bad follow-pitr "$why; snapshots $snaps; $(tail -5 "$W/follow.log" | tr '\n' ' ')"
    fi
    # ZooKeeper 3.9.5 loads a copy of the directory: the tree at C.
    mkdir -p "$W/follow-zk" && cp -r "$FOLLOW" "$W/follow-zk/zk-data"
    if zk_start "$W/follow-zk" && dump "127.0.0.1:$ZK_PORT" "$W/follow-zk.json" \
        && compare "$W/follow-C.json" "$W/follow-zk.json" --ignore-prefix /zookeeper/config >"$W/follow-cmp-zk.txt"; then
        ok follow-zookeeper
        echo "  ZooKeeper on the follow directory: $(tail -1 "$W/follow-cmp-zk.txt")"
    else
        bad follow-zookeeper "$(tail -3 "$W/follow-cmp-zk.txt" 2>/dev/null; grep -i 'error\|exception' "$W/follow-zk/zk.log" | head -3)"
    fi
    zk_stop "$W/follow-zk"
}

# --- ensemble -------------------------------------------------------------------------------
ENS="$W/ens"
P1=$(free_port); P2=$(free_port); P3=$(free_port)
A1=$(free_port); A2=$(free_port); A3=$(free_port)
SERVERS=""
for i in 1 2 3; do
    SERVERS+="server.$i=127.0.0.1:$(free_port):$(free_port)"$'\n'
done
for i in 1 2 3; do
    mkdir -p "$ENS/m$i"
    port_var="P$i"
    admin_var="A$i"
    cat >"$ENS/m$i/zoo.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$ENS/m$i
clientPort=${!port_var}
clientPortAddress=127.0.0.1
4lw.commands.whitelist=*
admin.enableServer=true
admin.serverAddress=127.0.0.1
admin.serverPort=${!admin_var}
DigestAuthenticationProvider.superDigest=$SUPER
extendedTypesEnabled=true
jute.maxbuffer=4194304
$SERVERS
CFG
    echo "$i" >"$ENS/m$i/myid"
done
if "$BIN" import --zookeeper "$W/orig" --config "$ENS/m1/zoo.cfg" >"$W/import-ens.txt" 2>&1 \
    && "$BIN" import --join --config "$ENS/m2/zoo.cfg" >>"$W/import-ens.txt" 2>&1 \
    && "$BIN" import --join --config "$ENS/m3/zoo.cfg" >>"$W/import-ens.txt" 2>&1; then
    for i in 1 2 3; do
        "$BIN" serve --config "$ENS/m$i/zoo.cfg" >"$W/ens-m$i.log" 2>&1 </dev/null &
        PADDOCK_PIDS[ens$i]=$!
    done
    deadline=$((SECONDS + 90))
    until [[ "$(paddock_mode "$P3")" == follower || "$(paddock_mode "$P3")" == leader ]] || ((SECONDS >= deadline)); do
        sleep 0.5
    done
    took=$((90 - (deadline - SECONDS)))
    if dump "127.0.0.1:$P3" "$W/ens.json" 2>/dev/null && compare "$W/zk.json" "$W/ens.json" \
        --ignore-prefix /zookeeper/config >"$W/cmp4.txt"; then
        ok ensemble
        echo "  member 3 served after ${took}s; $(tail -1 "$W/cmp4.txt") (/zookeeper/config is the ensemble's own)"
    else
        bad ensemble "$(tail -3 "$W/cmp4.txt" 2>/dev/null; tail -3 "$W/ens-m3.log")"
    fi
    ADMINS="127.0.0.1:$A1,127.0.0.1:$A2,127.0.0.1:$A3"
    follow_start
    ensemble_restore
    follow_cases
    for i in 1 2 3; do stop_paddock "ens$i"; done
else
    bad ensemble "$(tail -3 "$W/import-ens.txt")"
fi

# --- damaged inputs -------------------------------------------------------------------------
damaged() { # case expected-message-fragment
    local c=$1 want=$2 d="$W/dmg-$1" out="$W/dmg-$1-out"
    cp -r "$W/orig" "$d"
    "$PY" "$HERE/zk_files.py" "$c" "$d" >/dev/null
    if "$BIN" import --zookeeper "$d" --data-dir "$out" >"$d.txt" 2>&1; then
        bad "damaged-$c" "imported anyway"
    elif grep -q -- "$want" "$d.txt" && [[ ! -e "$out" ]]; then
        ok "damaged-$c"
        echo "  $(tail -1 "$d.txt")"
    else
        bad "damaged-$c" "$(tail -2 "$d.txt"); written: $(ls "$out" 2>/dev/null)"
    fi
}
damaged bad-log-crc "checksum mismatch at offset"
damaged missing-log "a log is missing"
damaged acl-missing "refers to ACL index 999"
damaged other-dbid "a snapshot of another database"

d="$W/torn"
cp -r "$W/orig" "$d"
"$PY" "$HERE/zk_files.py" torn-tail "$d" >/dev/null
if "$BIN" import --zookeeper "$d" --data-dir "$W/torn-out" >"$d.txt" 2>&1 && grep -q 'a torn record' "$d.txt"; then
    ok torn-tail
else
    bad torn-tail "$(tail -2 "$d.txt")"
fi

# --- pitr: restore --to-zxid / --to-time against ZooKeeper's restart on files cut there -------
CUT="$W/cut"
mkdir -p "$CUT" && cp -r "$W/orig" "$CUT/zk-data"
read -r CUT_Z CUT_T < <("$PY" "$HERE/zk_files.py" cut-at 0.6 "$CUT/zk-data")
PADMIN=$(free_port)
PPORT=$(free_port)
start_paddock pitr "$PPORT" "$W/pitr-pd" --extended-types -D jute.maxbuffer=4194304 \
    -D admin.serverAddress=127.0.0.1 -D admin.serverPort="$PADMIN" \
    -D "DigestAuthenticationProvider.superDigest=$SUPER"
if zk_start "$CUT" && dump "127.0.0.1:$ZK_PORT" "$W/cut.json" \
    && "$BIN" restore --to-zxid "$CUT_Z" --servers "127.0.0.1:$PADMIN" --auth digest:admin:pw "$W/orig" >"$W/pitr.txt" 2>&1 \
    && dump "127.0.0.1:$PPORT" "$W/pitr.json" \
    && compare "$W/cut.json" "$W/pitr.json" --ignore-prefix /zookeeper/config >"$W/cmp6.txt"; then
    ok pitr-zxid
    echo "  state right after $CUT_Z: $(grep '^stopped' "$W/pitr.txt"); $(tail -1 "$W/cmp6.txt")"
else
    bad pitr-zxid "$(tail -3 "$W/pitr.txt" 2>/dev/null; tail -3 "$W/cmp6.txt" 2>/dev/null)"
fi
zk_stop "$CUT"
stop_paddock pitr
if "$BIN" restore --to-zxid "$CUT_Z" --out "$W/pitr-z.bin" "$W/orig" >/dev/null 2>&1 \
    && "$BIN" restore --to-time "$CUT_T" --out "$W/pitr-t.bin" "$W/orig" >"$W/pitr-t.txt" 2>&1 \
    && cmp -s "$W/pitr-z.bin" "$W/pitr-t.bin"; then
    ok pitr-time
    echo "  $(head -1 "$W/pitr-t.txt")"
else
    bad pitr-time "$(tail -3 "$W/pitr-t.txt" 2>/dev/null)"
fi

# --- cutover: the live cut-over, sessions kept (cutover.sh, its own header) ------------------
if [[ "${MIGRATION_CUTOVER:-1}" == 0 ]]; then
    SKIPPED=$((SKIPPED + 1))
    report_skip 1 "cutover: MIGRATION_CUTOVER=0"
else
    PADDOCK_BIN="$BIN" bash "$HERE/cutover.sh" 2>&1 | tee "$W/cutover.out" | grep -v '^suite |' || true
    row=$(grep -E '^migration-cutover \| [0-9]+ \| [0-9]+ \| [0-9]+$' "$W/cutover.out" | tail -1)
    if [[ -n "$row" ]]; then
        PASSED=$((PASSED + $(awk -F' [|] ' '{print $2}' <<<"$row")))
        FAILED=$((FAILED + $(awk -F' [|] ' '{print $3}' <<<"$row")))
    else
        bad cutover "cutover.sh printed no result row"
    fi
fi

report "$PASSED" "$FAILED" "$SKIPPED"
[[ "$FAILED" == 0 ]]
