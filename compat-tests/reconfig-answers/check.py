"""issue 42's typo, through kazoo 2.11, on a 3-member ensemble (ZK_HOSTS: its members' client addresses):
a non-incremental reconfig to member 1 and two servers that were never started must be refused with
NewConfigNoQuorum, change nothing, and leave the ensemble writing. Prints one line per check:
`ok <name>` or `FAIL <name>: <why>`; exits 1 if any failed."""
import os
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
sys.exit(1 if failed else 0)
