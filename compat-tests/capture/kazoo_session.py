#!/usr/bin/env python3
"""The kazoo 2.11 session recorded into wire/tests/vectors/kazoo.txt.

Connects to ZK_HOSTS (the recording proxy) and exercises, on one main connection: create in every mode
(persistent, ephemeral, sequential, ephemeral-sequential; container and TTL through hand-built requests, since
kazoo has no API for opcodes 19 and 21), create2 (include_data=True), delete, exists (+watch), get (+watch), set,
get_acls, set_acls, get_children (+watch, include_data), sync, a transaction with a failing check and a successful
one, add_auth digest, watch notifications, errors (NoNode, NodeExists, BadVersion, NoAuth) and a ping (it sleeps
longer than a third of the session timeout). A second connection makes the changes that fire the watches, and
the main session ends with closeSession. Every result is checked, so a capture of a misbehaving server fails.
"""

import os
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.handlers.threading import AsyncResult
from kazoo.protocol.serialization import Create2, int_struct, long_struct
from kazoo.protocol.states import EventType
from kazoo.security import OPEN_ACL_UNSAFE, make_digest_acl

HOSTS = os.environ.get("ZK_HOSTS", "127.0.0.1:2181")
ROOT = "/vectors"
SESSION_TIMEOUT = 6.0  # kazoo pings every third of the negotiated timeout; we idle past that once


class CreateContainer(Create2):
    """createContainer (opcode 19): a CreateRequest with flags 4, answered like create2."""

    type = 19


class CreateTTL(Create2):
    """createTTL (opcode 21): CreateTTLRequest = CreateRequest + long ttl, answered like create2."""

    type = 21

    def __new__(cls, path, data, acl, flags, ttl):
        self = super().__new__(cls, path, data, acl, flags)
        self.ttl = ttl
        return self

    def serialize(self):
        return super().serialize() + long_struct.pack(self.ttl)


def call(client, request):
    result = AsyncResult(client.handler)
    client._call(request, result)
    return result.get(timeout=10)


def expect(exc, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc:
        return
    raise AssertionError("expected %s from %s%r" % (exc.__name__, fn.__name__, args))


def main():
    events = []
    fired = threading.Condition()

    def watcher(event):
        with fired:
            events.append((event.type, event.path))
            fired.notify_all()

    def wait_events(n):
        with fired:
            assert fired.wait_for(lambda: len(events) >= n, timeout=10), events

    zk = KazooClient(hosts=HOSTS, timeout=SESSION_TIMEOUT)
    zk.start(timeout=15)
    other = KazooClient(hosts=HOSTS, timeout=SESSION_TIMEOUT)
    other.start(timeout=15)
    try:
        # create, every mode
        assert zk.create(ROOT, b"root") == ROOT
        assert zk.create(ROOT + "/persistent", b"p") == ROOT + "/persistent"
        assert zk.create(ROOT + "/ephemeral", b"e", ephemeral=True) == ROOT + "/ephemeral"
        assert zk.create(ROOT + "/seq-", b"s", sequence=True) == ROOT + "/seq-0000000002"
        assert zk.create(ROOT + "/eseq-", b"es", ephemeral=True, sequence=True) == ROOT + "/eseq-0000000003"
        path, stat = call(zk, CreateContainer(ROOT + "/container", b"c", OPEN_ACL_UNSAFE, 4))
        assert path == ROOT + "/container" and stat.ephemeralOwner == 0
        path, stat = call(zk, CreateTTL(ROOT + "/ttl", b"t", OPEN_ACL_UNSAFE, 5, 600000))
        assert path == ROOT + "/ttl"
        # create2
        path, stat = zk.create(ROOT + "/c2", b"with stat", include_data=True)
        assert (path, stat.version, stat.dataLength) == (ROOT + "/c2", 0, 9)
        expect(NodeExistsError, zk.create, ROOT + "/persistent")
        expect(NoNodeError, zk.create, ROOT + "/missing/child")

        # exists, get, set, watches that fire (notification frames)
        assert zk.exists(ROOT + "/later", watch=watcher) is None
        data, stat = zk.get(ROOT + "/persistent", watch=watcher)
        assert data == b"p" and stat.version == 0
        assert zk.exists(ROOT + "/c2", watch=watcher).version == 0
        children = zk.get_children(ROOT, watch=watcher)
        assert sorted(children) == sorted(
            ["persistent", "ephemeral", "seq-0000000002", "eseq-0000000003", "container", "ttl", "c2"]
        )
        other.create(ROOT + "/later", b"l")  # NodeCreated for /later and NodeChildrenChanged for ROOT
        other.set(ROOT + "/persistent", b"p2")  # NodeDataChanged
        other.delete(ROOT + "/c2")  # NodeDeleted
        wait_events(4)
        assert sorted(events) == sorted(
            [
                (EventType.CREATED, ROOT + "/later"),
                (EventType.CHILD, ROOT),
                (EventType.CHANGED, ROOT + "/persistent"),
                (EventType.DELETED, ROOT + "/c2"),
            ]
        )
        assert zk.set(ROOT + "/persistent", b"p3", version=1).version == 2
        expect(BadVersionError, zk.set, ROOT + "/persistent", b"x", version=0)
        expect(NoNodeError, zk.get, ROOT + "/nope")

        # get_children with stat (getChildren2)
        children, stat = zk.get_children(ROOT, include_data=True)
        assert stat.numChildren == len(children)

        # ACLs and digest auth
        acls, stat = zk.get_acls(ROOT + "/persistent")
        assert acls == OPEN_ACL_UNSAFE and stat.aversion == 0
        secret = make_digest_acl("vec", "pw", all=True)
        assert zk.set_acls(ROOT + "/persistent", [secret], version=0).aversion == 1
        expect(NoAuthError, zk.get, ROOT + "/persistent")
        zk.add_auth("digest", "vec:pw")
        assert zk.get(ROOT + "/persistent")[0] == b"p3"
        assert zk.get_acls(ROOT + "/persistent")[0] == [secret]
        zk.set_acls(ROOT + "/persistent", OPEN_ACL_UNSAFE)

        # sync
        assert zk.sync(ROOT) == ROOT

        # multi: one that fails on its check, one that succeeds
        t = zk.transaction()
        t.create(ROOT + "/txn-a", b"a")
        t.check(ROOT + "/persistent", 99)
        t.set_data(ROOT + "/persistent", b"never")
        assert [type(r) for r in t.commit()] == [RolledBackError, BadVersionError, RuntimeInconsistency]
        t = zk.transaction()
        t.create(ROOT + "/txn-b", b"b")
        t.check(ROOT + "/persistent", 2)
        t.set_data(ROOT + "/txn-b", b"b2", version=0)
        t.delete(ROOT + "/later")
        results = t.commit()
        assert results[0] == ROOT + "/txn-b" and results[1] is True and results[3] is True

        # delete, with and without version
        zk.delete(ROOT + "/txn-b", version=1)
        expect(BadVersionError, zk.delete, ROOT + "/persistent", version=0)
        zk.delete(ROOT + "/persistent")

        # idle long enough for kazoo to ping
        time.sleep(SESSION_TIMEOUT / 3 + 1.5)
        assert zk.exists(ROOT) is not None
    finally:
        other.stop()
        other.close()
    # closeSession of the main session removes its ephemerals; clean the rest with a fresh client.
    zk.stop()
    zk.close()
    cleanup = KazooClient(hosts=HOSTS, timeout=SESSION_TIMEOUT)
    cleanup.start(timeout=15)
    try:
        cleanup.delete(ROOT, recursive=True)
    finally:
        cleanup.stop()
        cleanup.close()
    print("kazoo_session: ok")


if __name__ == "__main__":
    sys.exit(main())
