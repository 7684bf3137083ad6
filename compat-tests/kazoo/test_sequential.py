"""Sequential znodes: ten-digit zero-padded suffixes counting the parent's child creates."""


def test_sequential_names_count_from_zero(client, root):
    names = [client.create(root + "/job-", sequence=True) for _ in range(3)]
    assert names == [root + "/job-0000000000", root + "/job-0000000001", root + "/job-0000000002"]


def test_sequence_number_counts_child_creates_but_not_deletes(client, root):
    assert client.create(root + "/s-", sequence=True) == root + "/s-0000000000"
    client.create(root + "/plain")
    client.delete(root + "/plain")
    # Two creates so far: the suffix is the stored cversion (creates only), while the wire cversion also
    # counts the delete (stored * 2 - numChildren = 3).
    assert client.exists(root).cversion == 3
    assert client.create(root + "/s-", sequence=True) == root + "/s-0000000002"
    assert client.exists(root).cversion == 4


def test_sequential_suffix_is_appended_to_an_empty_prefix(client, root):
    assert client.create(root + "/", sequence=True) == root + "/0000000000"


def test_ephemeral_sequential_is_owned_by_the_session(client, root):
    path = client.create(root + "/e-", b"d", ephemeral=True, sequence=True)
    assert path == root + "/e-0000000000"
    _, stat = client.get(path)
    assert stat.ephemeralOwner == client.client_id[0]
