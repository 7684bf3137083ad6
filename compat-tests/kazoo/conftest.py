"""Fixtures for the kazoo compat smoke.

The suite talks to whatever server ZK_HOSTS names (compat-tests/run.sh starts paddock or Apache ZooKeeper
there). Each test works under its own fresh root znode and removes it afterwards, so tests do not see each
other's state and the server's tree is left as it was.
"""

import os
import socket
import uuid

import pytest
from kazoo.client import KazooClient

HOSTS = os.environ.get("ZK_HOSTS", "127.0.0.1:2181")
TIMEOUT = 10.0
# Every digest identity the ACL tests use; the cleanup client holds them all so it can remove any node.
TEST_USERS = ["alice:secret", "bob:right", "carol:pw", "dave:pw", "erin:pw"]


def four_letter(word, hosts=HOSTS):
    """Sends a four-letter word on a fresh connection and returns the whole reply as text."""
    host, port = hosts.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as s:
        s.sendall(word.encode("ascii"))
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture
def make_client():
    """Factory for started clients; every client made is stopped and closed after the test."""
    made = []

    def make(**kwargs):
        c = KazooClient(hosts=HOSTS, timeout=TIMEOUT, **kwargs)
        c.start(timeout=15)
        made.append(c)
        return c

    yield make
    for c in made:
        try:
            c.stop()
        finally:
            c.close()


@pytest.fixture
def client(make_client):
    return make_client()


@pytest.fixture
def root(make_client):
    """A fresh persistent znode for the test, deleted recursively afterwards by a separate client."""
    admin = make_client(auth_data=[("digest", user) for user in TEST_USERS])
    path = "/compat-" + uuid.uuid4().hex
    admin.create(path)
    yield path
    if admin.connected:
        admin.delete(path, recursive=True)
