"""kazoo's Lock recipe with three contenders: mutual exclusion and first-come, first-served order."""

import threading
import time

import pytest
from kazoo.exceptions import LockTimeout


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_three_contenders_hold_the_lock_one_at_a_time_in_arrival_order(make_client, root):
    clients = [make_client() for _ in range(3)]
    path = root + "/lock"
    locks = [c.Lock(path, identifier="c%d" % i) for i, c in enumerate(clients)]
    order = []
    holders = []
    max_holders = [0]
    guard = threading.Lock()
    release = [threading.Event() for _ in range(3)]

    def contend(i):
        with locks[i]:
            with guard:
                holders.append(i)
                order.append(i)
                max_holders[0] = max(max_holders[0], len(holders))
            release[i].wait(20)
            with guard:
                holders.remove(i)

    threads = []
    for i in range(3):
        t = threading.Thread(target=contend, args=(i,), daemon=True)
        t.start()
        threads.append(t)
        # Let contender i queue its lock node before the next one arrives, so arrival order is known.
        assert wait_for(lambda: len(locks[0].contenders()) == i + 1)
    assert wait_for(lambda: order == [0])
    assert locks[0].contenders() == ["c0", "c1", "c2"]
    time.sleep(0.3)
    assert order == [0]  # the others are still waiting
    release[0].set()
    assert wait_for(lambda: order == [0, 1])
    time.sleep(0.3)
    assert order == [0, 1]
    release[1].set()
    assert wait_for(lambda: order == [0, 1, 2])
    release[2].set()
    for t in threads:
        t.join(10)
    assert max_holders[0] == 1
    assert clients[0].get_children(path) == []


def test_lock_held_by_a_stopped_client_passes_to_the_next(make_client, root):
    a = make_client()
    b = make_client()
    path = root + "/lock2"
    la = a.Lock(path, "a")
    lb = b.Lock(path, "b")
    assert la.acquire(timeout=10)
    with pytest.raises(LockTimeout):
        lb.acquire(timeout=0.5)
    a.stop()  # the session closes, so its ephemeral lock node goes
    assert lb.acquire(timeout=10)
    lb.release()
