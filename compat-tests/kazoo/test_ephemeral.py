"""Ephemeral znodes live exactly as long as their session."""

import pytest
from kazoo.exceptions import NoChildrenForEphemeralsError


def test_ephemeral_owner_is_session_id(client, root):
    path = client.create(root + "/eph", b"x", ephemeral=True)
    _, stat = client.get(path)
    assert stat.ephemeralOwner == client.client_id[0]
    assert stat.ephemeralOwner != 0


def test_ephemeral_vanishes_when_its_client_stops(make_client, root):
    owner = make_client()
    watcher = make_client()
    path = owner.create(root + "/gone", ephemeral=True)
    assert watcher.exists(path) is not None
    owner.stop()
    # stop() closes the session, so the node must be gone by the time close returns: no waiting on timeouts.
    assert watcher.exists(path) is None
    assert watcher.get_children(root) == []


def test_ephemeral_of_other_session_survives_a_client_stop(make_client, root):
    a = make_client()
    b = make_client()
    path = a.create(root + "/keep", ephemeral=True)
    b.stop()
    assert a.exists(path).ephemeralOwner == a.client_id[0]


def test_ephemeral_cannot_have_children(client, root):
    path = client.create(root + "/parent", ephemeral=True)
    with pytest.raises(NoChildrenForEphemeralsError):
        client.create(path + "/child")
