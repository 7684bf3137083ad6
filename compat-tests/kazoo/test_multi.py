"""multi (transactions): all-or-nothing, with exact per-op results."""

from kazoo.exceptions import (
    BadVersionError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
)


def test_successful_transaction_returns_a_result_per_op(client, root):
    client.create(root + "/keep", b"v0")
    client.create(root + "/drop")
    t = client.transaction()
    t.create(root + "/new", b"n")
    t.check(root + "/keep", 0)
    t.set_data(root + "/keep", b"v1", version=0)
    t.delete(root + "/drop")
    results = t.commit()
    assert results[0] == root + "/new"
    assert results[1] is True
    assert results[2].version == 1
    assert results[2].dataLength == 2
    assert results[3] is True
    assert client.get(root + "/new")[0] == b"n"
    assert client.get(root + "/keep")[0] == b"v1"
    assert client.exists(root + "/drop") is None


def test_failed_check_rolls_back_every_op_with_exact_results(client, root):
    client.create(root + "/guard", b"g")
    before = client.exists(root)
    t = client.transaction()
    t.create(root + "/a", b"a")
    t.check(root + "/guard", 5)
    t.set_data(root + "/guard", b"changed")
    results = t.commit()
    assert [type(r) for r in results] == [RolledBackError, BadVersionError, RuntimeInconsistency]
    assert client.exists(root + "/a") is None
    assert client.get(root + "/guard") == (b"g", client.exists(root + "/guard"))
    assert client.get(root + "/guard")[1].version == 0
    assert client.exists(root) == before


def test_failing_op_in_the_middle_reports_its_own_error(client, root):
    t = client.transaction()
    t.create(root + "/x")
    t.delete(root + "/does-not-exist")
    t.create(root + "/y")
    results = t.commit()
    assert [type(r) for r in results] == [RolledBackError, NoNodeError, RuntimeInconsistency]
    assert client.get_children(root) == []


def test_transaction_ops_see_earlier_ops_of_the_same_transaction(client, root):
    t = client.transaction()
    t.create(root + "/p", b"1")
    t.create(root + "/p/c", b"2")
    t.set_data(root + "/p", b"3", version=0)
    t.check(root + "/p", 1)
    results = t.commit()
    assert results[:2] == [root + "/p", root + "/p/c"]
    assert results[2].version == 1 and results[2].numChildren == 1
    assert results[3] is True
