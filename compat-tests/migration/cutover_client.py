"""The kazoo side of cutover.sh, and the znode stats it compares across the cut-over.

  cutover_client.py client HOSTS WORK [--session-timeout S]
      Long-running: two kazoo sessions that live through the cut-over.
        - the watcher holds the ephemeral /cutover/kazoo-eph, a DataWatch on /cutover/watched and a
          ChildrenWatch on /cutover/kids (kazoo's recipes: kazoo 2.11 sends no SetWatches, its
          recipes read again when they reconnect; the Java client's SetWatches are checked by
          cutover-java);
        - the writer sets /cutover/tick every 20 ms and logs every write (start, end, outcome).
      WORK/py.ready (JSON: both sessions, the ephemeral's stat) says they are going. Once WORK/py.check
      exists and holds the time of the SIGTERMs to ZooKeeper, the writer changes /cutover/watched and creates a child of /cutover/kids, and the checks
      print "ok ..." or "FAIL ..." lines: both sessions kept (no LOST state), the ephemeral the same node,
      both recipes saw the change. Then the write-unavailable window: from the start of the
      first write in flight at the SIGTERMs or later that failed or took longer than 1 s, to the end
      of the first write started after it that succeeded; WORK/window.txt holds it in seconds.
  cutover_client.py stats HOSTS OUT PATH...
      Writes {path: {czxid, ephemeralOwner, version, data}} of each PATH (a path ending in /* means
      its children) as JSON.
"""
import json
import os
import sys
import threading
import time

from kazoo.client import KazooClient, KazooState
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

RETRY = {"max_tries": -1, "delay": 0.1, "backoff": 1.5, "max_delay": 0.5}


def client(hosts, work, session_timeout):
    states = {"watcher": [], "writer": []}

    def listener(name):
        def record(state):
            states[name].append((time.time(), state))
        return record

    watcher = KazooClient(hosts=hosts, timeout=session_timeout, connection_retry=RETRY)
    watcher.add_listener(listener("watcher"))
    watcher.start(timeout=30)
    writer = KazooClient(hosts=hosts, timeout=session_timeout, connection_retry=RETRY)
    writer.add_listener(listener("writer"))
    writer.start(timeout=30)

    writer.ensure_path("/cutover/kids")
    if not writer.exists("/cutover/watched"):
        writer.create("/cutover/watched", b"before")
    if not writer.exists("/cutover/tick"):
        writer.create("/cutover/tick", b"0")
    watcher.create("/cutover/kazoo-eph", b"mine", ephemeral=True)
    eph = watcher.exists("/cutover/kazoo-eph")
    # kazoo's recipes, as kazoo applications watch: kazoo 2.11 sends no SetWatches (its one-shot
    # watches get a NONE event at every connection loss), the recipes read again as they reconnect.
    events = {"data": [], "child": []}
    DataWatch(watcher, "/cutover/watched", func=lambda data, stat: events["data"].append((time.time(), data)))
    ChildrenWatch(watcher, "/cutover/kids", func=lambda kids: events["child"].append((time.time(), sorted(kids))))
    sessions = {"watcher": watcher.client_id[0], "writer": writer.client_id[0]}

    writes = []  # (start, end, ok, error)
    stop = threading.Event()

    def write_loop():
        i = 0
        while not stop.is_set():
            i += 1
            t0 = time.time()
            try:
                writer.set("/cutover/tick", str(i).encode())
                writes.append((t0, time.time(), True, None))
            except Exception as e:  # ConnectionLoss, SessionMoved...: the window's writes
                writes.append((t0, time.time(), False, type(e).__name__))
                time.sleep(0.02)
            time.sleep(0.02)

    th = threading.Thread(target=write_loop, daemon=True)
    th.start()
    with open(os.path.join(work, "py.ready"), "w") as f:
        json.dump({"sessions": sessions, "eph_czxid": eph.czxid, "eph_owner": eph.ephemeralOwner}, f)

    check = os.path.join(work, "py.check")
    while not os.path.exists(check) or not open(check).read().strip():
        time.sleep(0.1)
    cut_at = float(open(check).read())  # the SIGTERMs to ZooKeeper
    # The changes after the cut-over, from the writer's session (not the watcher's).
    changed_at = time.time()
    writer.set("/cutover/watched", b"after")
    writer.create("/cutover/kids/after", b"")
    deadline = time.time() + 10
    while time.time() < deadline and not (events["data"][-1][1] == b"after" and events["child"][-1][1] == ["after"]):
        time.sleep(0.05)
    stop.set()
    th.join()

    results = []

    def ok(what):
        results.append(f"ok {what}")

    def bad(what):
        results.append(f"FAIL {what}")

    for name, zk in (("watcher", watcher), ("writer", writer)):
        seen = [s for _, s in states[name]]
        if zk.client_id[0] == sessions[name] and KazooState.LOST not in seen:
            ok(f"kazoo {name} session {sessions[name]:#x} kept (states: {', '.join(seen)})")
        else:
            bad(f"kazoo {name} session {sessions[name]:#x}, now {zk.client_id[0]:#x} (states: {seen})")
    st = watcher.exists("/cutover/kazoo-eph")
    if st is not None and st.czxid == eph.czxid and st.ephemeralOwner == sessions["watcher"]:
        ok(f"kazoo ephemeral /cutover/kazoo-eph unchanged (czxid {st.czxid:#x}, owner {st.ephemeralOwner:#x})")
    else:
        bad(f"kazoo ephemeral: before czxid {eph.czxid:#x}, after {st}")
    for kind, want, path in (("data", b"after", "/cutover/watched"), ("child", ["after"], "/cutover/kids")):
        got = events[kind]
        if got and got[-1][1] == want and got[-1][0] >= changed_at:
            ok(f"kazoo {'DataWatch' if kind == 'data' else 'ChildrenWatch'} on {path} saw {want!r} "
               f"{(got[-1][0] - changed_at) * 1000:.0f} ms after the change")
        else:
            bad(f"kazoo {kind} watch on {path}: saw {[v for _, v in got]}, want {want!r} last")

    # The window: the first write still going at the SIGTERMs or started after them that failed or
    # was held more than 1 s, to the first success after it. (Earlier slow writes are the load.)
    first_bad = next((w for w in writes if w[1] >= cut_at and (not w[2] or w[1] - w[0] > 1.0)), None)
    if first_bad is None:
        bad(f"writer: no write failed or waited across the cut-over ({len(writes)} writes): no cut-over seen")
    else:
        after = [w for w in writes if w[2] and w[0] >= first_bad[0] and w is not first_bad]
        end = first_bad[1] if first_bad[2] else (after[0][1] if after else None)
        failed = sum(1 for w in writes if not w[2])
        if end is None:
            bad("writer: no write succeeded after the cut-over")
        else:
            window = end - first_bad[0]
            with open(os.path.join(work, "window.txt"), "w") as f:
                f.write(f"{window:.3f} {first_bad[0]:.3f} {end:.3f}\n")
            ok(f"writer: write-unavailable window {window:.2f} s ({failed} writes failed, "
               f"{len(writes)} in all, 20 ms apart)")
    for r in results:
        print(r, flush=True)
    watcher.stop(); watcher.close()
    writer.stop(); writer.close()
    return 1 if any(r.startswith("FAIL") for r in results) else 0


def stats(hosts, out, paths):
    zk = KazooClient(hosts=hosts, connection_retry=RETRY)
    zk.start(timeout=30)
    res = {}
    for p in paths:
        names = [p]
        if p.endswith("/*"):
            parent = p[:-2]
            names = [f"{parent}/{c}" for c in sorted(zk.get_children(parent))]
        for n in names:
            data, st = zk.get(n)
            res[n] = {"czxid": st.czxid, "ephemeralOwner": st.ephemeralOwner, "version": st.version,
                      "data": data.decode(errors="replace")}
    zk.stop(); zk.close()
    with open(out, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "client":
        timeout = 30.0
        if "--session-timeout" in sys.argv:
            timeout = float(sys.argv[sys.argv.index("--session-timeout") + 1])
        sys.exit(client(sys.argv[2], sys.argv[3], timeout))
    elif cmd == "stats":
        stats(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        sys.exit(f"unknown command {cmd}")
