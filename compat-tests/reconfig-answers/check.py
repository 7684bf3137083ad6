"""issue 42's reconfig answers and dynamic config files, through kazoo 2.11, on a 3-member ensemble
(ZK_HOSTS: its members' client addresses; MEMBER_DIRS: the directories holding their zoo.cfg; ZOO_SERVERS:
the server.N lines of their zoo.cfg, newline separated).

`check.py` (first phase): /zookeeper/config shows zoo.cfg's server lines and a version from the start; a
non-incremental reconfig to member 1 and two servers that were never started must be refused with
NewConfigNoQuorum, change nothing, and leave the ensemble writing; a client on a follower removes that
follower and adds it back on one connection, writing and reading in between (the removed member serves on,
not voting); then a reconfig removes member 3 and
every member writes `zoo.cfg.dynamic.<version hex>` (the new server lines sorted as text, no version line)
and points its zoo.cfg at it (`dynamicConfigFile=<absolute path>`, no server lines left).
`check.py restarted` (after run.sh restarted member 1 from its rewritten zoo.cfg): member 1 serves the
two-member membership (getData and `conf`) and writes.

Prints one line per check: `ok <name>` or `FAIL <name>: <why>`; exits 1 if any failed."""
import os
import socket
import sys
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NewConfigNoQuorumError

hosts = os.environ["ZK_HOSTS"].split(",")
never = os.environ["NEVER_STARTED"].split(",")  # two "server.N=..." lines of servers never started
failed = 0


def check(name, ok, why=""):
    global failed
    print(f"ok {name}" if ok else f"FAIL {name}: {why}")
    failed += 0 if ok else 1


def servers_of(text):
    return sorted(l for l in text.splitlines() if l.startswith("server."))


def version_of(text):
    return next((l.split("=", 1)[1] for l in text.splitlines() if l.startswith("version=")), None)


def four_letter(host, word):
    h, p = host.rsplit(":", 1)
    with socket.create_connection((h, int(p)), timeout=10) as s:
        s.sendall(word.encode())
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out.decode()


zoo_servers = sorted(os.environ["ZOO_SERVERS"].strip().splitlines())
dirs = os.environ["MEMBER_DIRS"].split(",")

if sys.argv[1:] == ["restarted"]:
    expected = open(os.path.join(dirs[0], "expected-config")).read()
    zk = KazooClient(hosts=hosts[0], timeout=15)
    zk.start(timeout=60)
    got, _ = zk.get("/zookeeper/config")
    check("restarted member 1: /zookeeper/config is the two-member one", got.decode() == expected,
          f"{got.decode()!r} != {expected!r}")
    conf = four_letter(hosts[0], "conf")
    listed = [l for l in conf.split("membership:", 1)[-1].splitlines() if l.startswith("server.")]
    check("restarted member 1: conf lists the two-member membership", listed == servers_of(expected), conf)
    zk.create("/after-restart", b"x")
    check("restarted member 1: writes", zk.exists("/after-restart") is not None)
    zk.stop()
    sys.exit(1 if failed else 0)

for i, host in enumerate(hosts):
    zk = KazooClient(hosts=host, timeout=15)
    zk.start(timeout=30)
    start, _ = zk.get("/zookeeper/config")
    start = start.decode()
    check(f"member{i + 1}: /zookeeper/config at start lists zoo.cfg's servers", servers_of(start) == zoo_servers,
          f"{start!r} vs {zoo_servers!r}")
    v = version_of(start)
    check(f"member{i + 1}: /zookeeper/config at start has a version line", v is not None and int(v, 16) >= 0, start)
    print(f"  at start: version={v}")
    zk.stop()

for i, host in enumerate(hosts):
    zk = KazooClient(hosts=host, timeout=15)
    zk.start(timeout=30)
    zk.add_auth("digest", "super:test")
    before, _ = zk.get("/zookeeper/config")
    before = before.decode()
    line1 = next(l for l in servers_of(before) if l.startswith("server.1="))
    asked = time.monotonic()
    try:
        zk.reconfig(joining=None, leaving=None, new_members=",".join([line1] + never))
        check(f"member{i + 1}: typo refused", False, "the reconfig was accepted")
    except NewConfigNoQuorumError:
        took = time.monotonic() - asked
        check(f"member{i + 1}: typo refused with NewConfigNoQuorum", True)
        print(f"  answered in {took * 1000:.1f} ms")
    after, _ = zk.get("/zookeeper/config")
    check(f"member{i + 1}: /zookeeper/config unchanged", after.decode() == before, f"{before!r} -> {after!r}")
    check(f"member{i + 1}: three members listed", len(servers_of(before)) == 3, before)
    zk.create(f"/after-typo-{i}", b"x")
    check(f"member{i + 1}: still writes", zk.exists(f"/after-typo-{i}") is not None)
    zk.stop()

# A follower a reconfig removes goes on serving its clients, not voting (ZooKeeper 3.9's QuorumPeer keeps it
# following its leader as a "non-voting participant"): a client on it removes it and adds it back on one
# connection, as go-zookeeper's TestIntegration_Reconfig does, writing and reading in between, never
# losing its connection.
def mode(host):
    return next((l.split(": ", 1)[1] for l in four_letter(host, "srvr").splitlines() if l.startswith("Mode: ")),
                None)


follower = next(i for i in range(len(hosts)) if mode(hosts[i]) == "follower")
f = follower + 1
states = []
zk = KazooClient(hosts=hosts[follower], timeout=15)
zk.add_listener(lambda state: states.append(str(state)))
zk.start(timeout=30)
zk.add_auth("digest", "super:test")
before, _ = zk.get("/zookeeper/config")
before = before.decode()
line_f = next(l for l in servers_of(before) if l.startswith(f"server.{f}="))
removed, _ = zk.reconfig(joining=None, leaving=str(f), new_members=None)
removed = removed.decode()
check(f"member{f} (a follower) removed through its own client: two members listed",
      servers_of(removed) == [l for l in servers_of(before) if l != line_f], removed)
zk.create("/via-removed", b"r")
check(f"removed member{f}: its client writes", zk.get("/via-removed")[0] == b"r")
zk.sync("/")
now, _ = zk.get("/zookeeper/config")
check(f"removed member{f}: /zookeeper/config does not list it", now.decode() == removed, now.decode())
check(f"removed member{f}: srvr says follower", mode(hosts[follower]) == "follower", mode(hosts[follower]))
leader = next(h for h in hosts if mode(h) == "leader")
deadline = time.monotonic() + 15
while "zk_synced_non_voting_followers\t1\n" not in (mntr := four_letter(leader, "mntr")) \
        and time.monotonic() < deadline:
    time.sleep(0.2)
check(f"removed member{f}: the leader counts one synced non-voting follower",
      "zk_synced_non_voting_followers\t1\n" in mntr,
      [l for l in mntr.splitlines() if "follower" in l or "learner" in l])
other = KazooClient(hosts=hosts[(follower + 1) % len(hosts)], timeout=15)
other.start(timeout=30)
other.sync("/via-removed")
check(f"removed member{f}: its write shows on another member", other.get("/via-removed")[0] == b"r")
other.create("/via-member", b"m")
other.stop()
zk.sync("/via-member")
check(f"removed member{f}: reads another member's write", zk.get("/via-member")[0] == b"m")
back, _ = zk.reconfig(joining=line_f, leaving=None, new_members=None)
back = back.decode()
check(f"member{f} added back on the same connection: three members listed",
      servers_of(back) == servers_of(before), back)
check(f"member{f}'s client never lost its connection", [s for s in states if s != "CONNECTED"] == [], states)
zk.stop()

# A reconfig that succeeds: member 3 leaves. Every member writes the dynamic file and rewrites zoo.cfg.
zk = KazooClient(hosts=hosts[0], timeout=15)
zk.start(timeout=30)
zk.add_auth("digest", "super:test")
new, _ = zk.reconfig(joining=None, leaving="3", new_members=None)
new = new.decode()
zk.stop()
version = version_of(new)
check("reconfig leaving=3: two members listed", servers_of(new) == zoo_servers[:2], new)
print(f"  after the reconfig: version={version}")
for i, d in enumerate(dirs):
    dynamic = os.path.join(d, f"zoo.cfg.dynamic.{version}")
    deadline = time.monotonic() + 15
    while not os.path.exists(dynamic) and time.monotonic() < deadline:
        time.sleep(0.1)
    text = open(dynamic).read() if os.path.exists(dynamic) else None
    check(f"member{i + 1}: zoo.cfg.dynamic.{{version}} holds the new server lines, sorted, no version",
          text == "\n".join(sorted(servers_of(new))), repr(text))
    cfg = open(os.path.join(d, "zoo.cfg")).read().splitlines()
    check(f"member{i + 1}: zoo.cfg ends with dynamicConfigFile=<absolute path>",
          cfg[-1:] == [f"dynamicConfigFile={os.path.realpath(dynamic)}"], cfg[-1:])
    check(f"member{i + 1}: zoo.cfg holds no server lines", not any(l.startswith("server.") for l in cfg), cfg)
with open(os.path.join(dirs[0], "expected-config"), "w") as f:
    f.write(new)
sys.exit(1 if failed else 0)
