"""create / get / set / delete with exact stats, and the errors each call gives on bad input."""

import pytest
from kazoo.exceptions import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
)


def test_create_then_get_returns_data_and_fresh_stat(client, root):
    path = client.create(root + "/a", b"hello")
    assert path == root + "/a"
    data, stat = client.get(path)
    assert data == b"hello"
    assert stat.version == 0
    assert stat.cversion == 0
    assert stat.aversion == 0
    assert stat.dataLength == 5
    assert stat.numChildren == 0
    assert stat.ephemeralOwner == 0
    assert stat.czxid == stat.mzxid == stat.pzxid
    assert stat.ctime == stat.mtime
    assert stat.czxid > 0


def test_create2_returns_the_same_stat_as_get(client, root):
    path, stat = client.create(root + "/b", b"xyz", include_data=True)
    assert path == root + "/b"
    assert client.get(path)[1] == stat
    assert stat.dataLength == 3


def test_create_updates_parent_cversion_numchildren_and_pzxid(client, root):
    before = client.exists(root)
    client.create(root + "/c1")
    _, child = client.get(root + "/c1")
    after = client.exists(root)
    assert after.cversion == before.cversion + 1
    assert after.numChildren == before.numChildren + 1
    assert after.pzxid == child.czxid
    # A child change is not a data change.
    assert after.version == before.version
    assert after.mzxid == before.mzxid


def test_set_bumps_version_and_mzxid_but_keeps_ctime(client, root):
    path = client.create(root + "/s", b"one")
    _, created = client.get(path)
    stat = client.set(path, b"three")
    assert stat.version == 1
    assert stat.dataLength == 5
    assert stat.mzxid > created.mzxid
    assert stat.czxid == created.czxid
    assert stat.ctime == created.ctime
    assert stat.pzxid == created.pzxid
    data, again = client.get(path)
    assert data == b"three"
    assert again == stat


def test_set_with_matching_version_succeeds_and_stale_version_fails(client, root):
    path = client.create(root + "/v", b"0")
    assert client.set(path, b"1", version=0).version == 1
    with pytest.raises(BadVersionError):
        client.set(path, b"2", version=0)
    assert client.get(path)[0] == b"1"


def test_empty_data_has_zero_length(client, root):
    path = client.create(root + "/empty")
    data, stat = client.get(path)
    assert data == b""
    assert stat.dataLength == 0


def test_delete_removes_node_and_updates_parent(client, root):
    path = client.create(root + "/d")
    _, child = client.get(path)
    mid = client.exists(root)
    client.delete(path)
    assert client.exists(path) is None
    after = client.exists(root)
    assert after.numChildren == mid.numChildren - 1
    assert after.cversion == mid.cversion + 1
    assert after.pzxid > child.czxid


def test_delete_with_stale_version_fails_and_keeps_node(client, root):
    path = client.create(root + "/dv")
    client.set(path, b"x")
    with pytest.raises(BadVersionError):
        client.delete(path, version=0)
    assert client.exists(path) is not None
    client.delete(path, version=1)
    assert client.exists(path) is None


def test_errors_for_missing_existing_and_nonempty_nodes(client, root):
    with pytest.raises(NoNodeError):
        client.get(root + "/missing")
    with pytest.raises(NoNodeError):
        client.set(root + "/missing", b"x")
    with pytest.raises(NoNodeError):
        client.delete(root + "/missing")
    with pytest.raises(NoNodeError):
        client.create(root + "/no/parent")
    client.create(root + "/p/q", makepath=True)
    with pytest.raises(NodeExistsError):
        client.create(root + "/p")
    with pytest.raises(NotEmptyError):
        client.delete(root + "/p")
    assert client.exists(root + "/missing") is None


def test_get_children_lists_names_and_include_data_stat(client, root):
    for name in ("x", "y", "z"):
        client.create(root + "/" + name)
    assert sorted(client.get_children(root)) == ["x", "y", "z"]
    children, stat = client.get_children(root, include_data=True)
    assert sorted(children) == ["x", "y", "z"]
    assert stat.numChildren == 3
    assert stat == client.exists(root)
