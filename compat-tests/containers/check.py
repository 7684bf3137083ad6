"""ZooKeeper's ContainerManager settings through kazoo 2.11, on a server started with
znode.container.checkIntervalMs=50, maxNeverUsedIntervalMs=600 and maxPerMinute=120 (ZK_HOSTS):
a container that never had a child goes after 600 ms (one with a child stays); four containers emptied
at once go one by one, at least 400 ms apart (a minute / 120 = 500 ms, blurred by the polling).
Prints `ok <name>` or `FAIL <name>: <why>` per check; exits 1 if any failed."""
import os
import sys
import time

from kazoo.client import KazooClient
from kazoo.protocol.serialization import Create
from kazoo.security import OPEN_ACL_UNSAFE

failed = 0


def check(name, ok, why=""):
    global failed
    print(f"ok {name}" if ok else f"FAIL {name}: {why}")
    failed += 0 if ok else 1


class CreateContainer(Create):
    """createContainer (opcode 19, mode flag 4): kazoo 2.11 has no call for it; the request is a create's."""
    type = 19


def create_container(zk, path):
    result = zk.handler.async_result()
    zk._call(CreateContainer(path, b"", OPEN_ACL_UNSAFE, 4), result)
    return result.get(timeout=15)


def gone_after(zk, path, since, limit=10):
    while zk.exists(path) is not None:
        if time.monotonic() - since > limit:
            return None
        time.sleep(0.01)
    return time.monotonic() - since


zk = KazooClient(hosts=os.environ["ZK_HOSTS"], timeout=15)
zk.start(timeout=30)

created = time.monotonic()
create_container(zk, "/never")
create_container(zk, "/used")
zk.create("/used/child", b"")
lived = gone_after(zk, "/never", created)
check("a never-used container goes after maxNeverUsedIntervalMs", lived is not None and 0.6 <= lived < 2.5,
      f"lived {lived}")
print(f"  the never-used container lived {lived:.3f} s" if lived else "  never went")
check("a container with a child stays", zk.exists("/used") is not None)

paths = [f"/c{i}" for i in range(4)]
for p in paths:
    create_container(zk, p)
    zk.create(f"{p}/x", b"")
for p in paths:
    zk.delete(f"{p}/x")
emptied = time.monotonic()
gone = []
while len(gone) < len(paths) and time.monotonic() - emptied < 15:
    n = sum(1 for p in paths if zk.exists(p) is None)
    while len(gone) < n:
        gone.append(time.monotonic() - emptied)
    time.sleep(0.01)
print("  emptied containers went after " + ", ".join(f"{g:.3f}" for g in gone) + " s")
check("four emptied containers all go", len(gone) == 4, gone)
gaps = [b - a for a, b in zip(gone, gone[1:])]
check("deletions at least 400 ms apart (maxPerMinute=120)", len(gaps) == 3 and min(gaps) >= 0.4, gaps)
zk.stop()
sys.exit(1 if failed else 0)
