"""Writes a ZooKeeper (or paddock) tree with kazoo, touching every transaction type a kazoo client
and ZooKeeper's own background tasks produce: create and create2 (include_data), persistent and
ephemeral sequentials, containers (opcode 19) and TTL nodes (opcode 21) through raw requests,
setData, setACL with digest and world ACLs, multis that commit and multis that fail (ZooKeeper
logs an error sub-transaction for them), deletes, a value near 1 MiB and a multi above 1 MiB,
sessions closed and sessions left open with their ephemerals (the process that owns them exits
without closing them), and enough writes to roll several snapshots with a small snapCount.

    python zk_writer.py HOSTS OUT.json [--fill N] [--phase 1|2] [--small]

Phase 1 builds the tree; phase 2 (run later, e.g. after a restart) changes some of it again, so a
replay crosses several snapshots and logs. OUT.json records the sessions left open (id, password)
so a test can resume them after an import. --small keeps every value small (the unit tests'
fixtures in zk-format/tests/data are written with it).
"""

import json
import os
import subprocess
import sys
from collections import namedtuple

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError
from kazoo.protocol.serialization import int_struct, long_struct, read_string, write_buffer, write_string
from kazoo.security import make_digest_acl, make_acl, OPEN_ACL_UNSAFE


def _acl_bytes(acl):
    b = bytearray(int_struct.pack(len(acl)))
    for a in acl:
        b.extend(int_struct.pack(a.perms) + write_string(a.id.scheme) + write_string(a.id.id))
    return b


class CreateContainer(namedtuple("CreateContainer", "path data acl")):
    """createContainer (19): CreateRequest with flags 4; the reply is a Create2Response."""

    type = 19

    def serialize(self):
        b = bytearray(write_string(self.path))
        b.extend(write_buffer(self.data))
        b.extend(_acl_bytes(self.acl))
        b.extend(int_struct.pack(4))
        return b

    @classmethod
    def deserialize(cls, bytes, offset):
        return read_string(bytes, offset)[0]


class CreateTTL(namedtuple("CreateTTL", "path data acl flags ttl")):
    """createTTL (21): CreateTTLRequest{path, data, acl, flags, ttl}; flags 5 or 6."""

    type = 21

    def serialize(self):
        b = bytearray(write_string(self.path))
        b.extend(write_buffer(self.data))
        b.extend(_acl_bytes(self.acl))
        b.extend(int_struct.pack(self.flags))
        b.extend(long_struct.pack(self.ttl))
        return b

    @classmethod
    def deserialize(cls, bytes, offset):
        return read_string(bytes, offset)[0]


def raw(zk, req):
    result = zk.handler.async_result()
    zk._call(req, result)
    return result.get(timeout=10)


def leave_open(hosts, out):
    """A child that creates ephemerals in its own session and exits without closing it."""
    code = f"""
import json, os
from kazoo.client import KazooClient
zk = KazooClient(hosts={hosts!r}, timeout=30)
zk.start()
zk.create('/app/live/e-', b'owned', ephemeral=True, sequence=True)
zk.create('/app/live/fixed-' + hex(zk.client_id[0]), b'mine', ephemeral=True)
sid, pw = zk.client_id
print(json.dumps({{'session': sid, 'password': pw.hex()}}), flush=True)
os._exit(0)
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        raise SystemExit(f"the session-leaving child failed: {res.stderr}")
    out.append(json.loads(res.stdout.strip().splitlines()[-1]))


def phase1(zk, hosts, fill):
    alice = make_digest_acl("alice", "secret", all=True)
    reader = make_acl("world", "anyone", read=True)
    zk.ensure_path("/app")
    zk.create("/app/conf", b"v0", acl=[alice, reader])
    zk.create("/app/open", b"", include_data=True)  # create2
    zk.create("/app/nulldata", None)
    for i in range(12):
        zk.create("/app/seq/job-", f"{i}".encode(), sequence=True, makepath=True)
    for name in sorted(zk.get_children("/app/seq"))[:5]:
        zk.delete("/app/seq/" + name)
    # setData and setACL with versions.
    zk.set("/app/open", b"one")
    zk.set("/app/open", b"two", version=1)
    zk.set_acls("/app/open", [make_acl("world", "anyone", all=True), make_digest_acl("bob", "pw", read=True)])
    # Containers and TTL nodes.
    raw(zk, CreateContainer("/app/cont", b"c", OPEN_ACL_UNSAFE))
    zk.create("/app/cont/child", b"x")
    raw(zk, CreateContainer("/app/cont2", b"", OPEN_ACL_UNSAFE))
    zk.create("/app/cont2/gone", b"")
    zk.delete("/app/cont2/gone")  # an emptied container: ZooKeeper's ContainerManager deletes it (type 20)
    raw(zk, CreateTTL("/app/ttl-long", b"t", OPEN_ACL_UNSAFE, 5, 3_600_000))
    raw(zk, CreateTTL("/app/ttlseq-", b"t", OPEN_ACL_UNSAFE, 6, 3_600_000))
    raw(zk, CreateTTL("/app/ttl-short", b"t", OPEN_ACL_UNSAFE, 5, 1))  # expires: deleteContainer
    # Multis: one commits, one fails (error sub-transactions in the log, nothing applied).
    t = zk.transaction()
    t.create("/app/multi", b"m")
    t.create("/app/multi/a", b"a")
    t.check("/app/open", 2)
    t.set_data("/app/open", b"three")
    print("multi ok:", t.commit())
    t = zk.transaction()
    t.create("/app/multi/b", b"b")
    t.check("/app/open", 99)
    t.delete("/app/multi/a")
    print("multi failed:", t.commit())
    # Big values: one near 1 MiB, and a multi whose record is above 1 MiB.
    if SMALL:
        zk.create("/app/big", b"B" * 1000)
        zk.create("/app/big2", b"D" * 700)
    else:
        big(zk)


def big(zk):
    zk.create("/app/big", b"B" * 1_000_000)
    t = zk.transaction()
    t.set_data("/app/big", b"C" * 700_000)
    t.create("/app/big2", b"D" * 700_000)
    print("big multi:", t.commit())


def rest(zk, hosts, fill):
    # Ephemerals of a session closed cleanly.
    other = KazooClient(hosts=hosts, timeout=30)
    other.start()
    other.create("/app/gone-", b"", ephemeral=True, sequence=True)
    other.stop()
    other.close()
    # Fill: many small writes to roll snapshots and logs.
    zk.ensure_path("/fill")
    for i in range(fill):
        zk.create(f"/fill/n{i:05d}", f"{i}".encode() * 10)
        if i % 3 == 0:
            zk.set(f"/fill/n{i:05d}", b"updated")
        if i % 7 == 0 and i > 0:
            zk.delete(f"/fill/n{i - 1:05d}")


def phase2(zk, fill):
    zk.set("/app/open", b"phase2")
    zk.create("/app/seq/job-", b"late", sequence=True)
    for i in range(0, fill, 5):
        try:
            zk.set(f"/fill/n{i:05d}", b"phase2")
        except NoNodeError:
            pass
    try:
        zk.set("/app/open", b"x", version=1000)
    except BadVersionError:
        pass


SMALL = "--small" in sys.argv


def main():
    hosts, out_path = sys.argv[1], sys.argv[2]
    fill = int(sys.argv[sys.argv.index("--fill") + 1]) if "--fill" in sys.argv else 300
    phase = sys.argv[sys.argv.index("--phase") + 1] if "--phase" in sys.argv else "1"
    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start()
    zk.add_auth("digest", "alice:secret")
    live = []
    if phase == "1":
        phase1(zk, hosts, fill)
        rest(zk, hosts, fill)
        zk.ensure_path("/app/live")
        leave_open(hosts, live)
        leave_open(hosts, live)
    else:
        phase2(zk, fill)
        leave_open(hosts, live)
    zk.stop()
    zk.close()
    prev = []
    if os.path.exists(out_path):
        prev = json.load(open(out_path))
    json.dump(prev + live, open(out_path, "w"))


if __name__ == "__main__":
    main()
