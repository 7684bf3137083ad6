"""One-shot watches: each fires once, with the right event type and path, in the server's order."""

import queue
import threading

from kazoo.protocol.states import EventType

WAIT = 10.0


class Recorder:
    """Collects WatchedEvents from callbacks on kazoo's handler thread."""

    def __init__(self):
        self.events = queue.Queue()

    def __call__(self, event):
        self.events.put(event)

    def next(self):
        return self.events.get(timeout=WAIT)

    def none_within(self, seconds=1.0):
        try:
            ev = self.events.get(timeout=seconds)
        except queue.Empty:
            return True
        raise AssertionError("unexpected extra event %r" % (ev,))


def test_data_watch_fires_once_on_set(make_client, root):
    c = make_client()
    writer = make_client()
    path = c.create(root + "/w")
    rec = Recorder()
    c.get(path, watch=rec)
    writer.set(path, b"1")
    ev = rec.next()
    assert (ev.type, ev.path) == (EventType.CHANGED, path)
    writer.set(path, b"2")
    rec.none_within()


def test_data_watch_fires_deleted_on_delete(make_client, root):
    c = make_client()
    writer = make_client()
    path = c.create(root + "/wd")
    rec = Recorder()
    c.get(path, watch=rec)
    writer.delete(path)
    ev = rec.next()
    assert (ev.type, ev.path) == (EventType.DELETED, path)
    rec.none_within()


def test_exists_watch_on_missing_node_fires_created(make_client, root):
    c = make_client()
    writer = make_client()
    path = root + "/later"
    rec = Recorder()
    assert c.exists(path, watch=rec) is None
    writer.create(path)
    ev = rec.next()
    assert (ev.type, ev.path) == (EventType.CREATED, path)
    writer.delete(path)
    rec.none_within()


def test_exists_watch_on_existing_node_fires_changed(make_client, root):
    c = make_client()
    writer = make_client()
    path = c.create(root + "/ex")
    rec = Recorder()
    assert c.exists(path, watch=rec) is not None
    writer.set(path, b"new")
    ev = rec.next()
    assert (ev.type, ev.path) == (EventType.CHANGED, path)


def test_child_watch_fires_once_on_create_and_not_on_child_data_change(make_client, root):
    c = make_client()
    writer = make_client()
    rec = Recorder()
    assert c.get_children(root, watch=rec) == []
    writer.set(root, b"parent data")  # a data change of the parent is not a child event
    writer.create(root + "/kid")
    ev = rec.next()
    assert (ev.type, ev.path) == (EventType.CHILD, root)
    writer.set(root + "/kid", b"x")
    writer.create(root + "/kid2")
    rec.none_within()


def test_delete_fires_node_deleted_before_parent_child_event(make_client, root):
    c = make_client()
    writer = make_client()
    path = c.create(root + "/order")
    seen = []
    done = threading.Event()

    def on(event):
        seen.append((event.type, event.path))
        if len(seen) == 2:
            done.set()

    c.get(path, watch=on)
    c.get_children(root, watch=on)
    writer.delete(path)
    assert done.wait(WAIT)
    assert seen == [(EventType.DELETED, path), (EventType.CHILD, root)]

