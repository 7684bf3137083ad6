"""SessionMoved (issue 42, item 3) on a 3-member ensemble, through raw wire frames (compat-tests/b2b/
zkwire.py), so that what the server sends, or does not send, is seen exactly. ZK_HOSTS lists the
members' client addresses, member 1 first; MODES their `srvr` modes in the same order.

For each member A in turn as the session's old member, B the next one:
  1. a session connects to A and creates /moved-<i> ("a");
  2. it reconnects to B with its id and password while its connection to A stays open, and sets
     /moved-<i> to "b" through B;
  3. a setData on the old connection to A gets no reply: the connection is closed;
  4. through B: /moved-<i> still holds "b" at version 1 (the old connection's write did not commit)
     and the session is alive (B still answers);
  5. the same with a multi on the old connection (a second move, back to A's neighbour C).
Apache ZooKeeper closes the old connection at its first write (FinalRequestProcessor tears the
connection down on SessionMoved rather than replying -118, ZOOKEEPER-710).

Reads on the old connection differ inside ZooKeeper itself: its leader checks the owner for every
request and closes the connection, a follower does not check reads and answers them. Step 2b records
what the old connection's getData got, and the check expects ZooKeeper's answer for A's mode.

Prints `ok <name>` or `FAIL <name>: <why>` per check; exits 1 if any failed."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "b2b"))
import zkwire  # noqa: E402
from zkwire import ConnectionClosed, Session, w_buf, w_int, w_str  # noqa: E402

hosts = [h.rsplit(":", 1) for h in os.environ["ZK_HOSTS"].split(",")]
hosts = [(h, int(p)) for h, p in hosts]
modes = os.environ["MODES"].split(",")
failed = 0


def check(name, ok, why=""):
    global failed
    print(f"ok {name}" if ok else f"FAIL {name}: {why}")
    failed += 0 if ok else 1


def applied_zxid(host):
    """The zxid `srvr` reports for `host` (None while it does not answer or serve)."""
    import socket
    try:
        with socket.create_connection(host, timeout=5) as c:
            c.sendall(b"srvr")
            reply = b""
            while chunk := c.recv(4096):
                reply += chunk
    except OSError:
        return None
    for line in reply.decode(errors="replace").splitlines():
        if line.startswith("Zxid: "):
            return int(line[len("Zxid: "):], 16)
    return None


def moved_to(old, host):
    """A second connection holding `old`'s session, to `host`, as a client reconnecting there
    while its first connection is still open (the socket to the old member stays as it is).
    It connects once `host` has applied the last zxid the session saw: both servers may refuse
    (ZooKeeper) or hold (paddock) a client that has seen more than they have applied, and this
    check is about the move, not about that."""
    deadline = time.monotonic() + 20
    while (applied_zxid(host) or -1) < old.last_zxid:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{host} did not apply {old.last_zxid:#x} within 20 s")
        time.sleep(0.02)
    s = Session.__new__(Session)
    s.addr, s.timeout_ms, s.io_timeout = host, old.timeout_ms, old.io_timeout
    s.xid, s.events = 100, []
    s.last_zxid, s.session_id, s.passwd = old.last_zxid, old.session_id, old.passwd
    s._connect()
    return s


def set_data(path, data):
    return w_str(path) + w_buf(data) + w_int(-1)


def get_data(path):
    return w_str(path) + b"\x00"


def outcome(sess, op, body):
    """'closed' when the connection closed with no reply, else 'err <code>'."""
    try:
        err, _ = sess.call(op, body)
        return f"err {err}"
    except ConnectionClosed:
        return "closed"


def one_member(i):
    """Steps 1-5 with member i as the session's old member."""
    a, b, c = hosts[i], hosts[(i + 1) % n], hosts[(i + 2) % n]
    tag = f"old member {i + 1} ({modes[i]})"
    path = f"/moved-{i + 1}"
    old = Session(*a, timeout_ms=20000)
    err, _ = old.call(zkwire.OP_CREATE, zkwire.enc_create(path, b"a", [(31, "world", "anyone")], 0))
    check(f"{tag}: created {path}", err == 0, f"err {err}")
    new = moved_to(old, b)
    check(f"{tag}: reconnected to member {(i + 1) % n + 1} with the same session",
          new.session_id == old.session_id and new.timeout > 0, f"{new.session_id:#x}")
    err, _ = new.call(zkwire.OP_SETDATA, set_data(path, b"b"))
    check(f"{tag}: setData through the new member", err == 0, f"err {err}")

    # 2b. a read on the old connection: ZooKeeper's leader closes it, a follower answers.
    got = outcome(old, zkwire.OP_GETDATA, get_data(path))
    want = "closed" if modes[i] == "leader" else "err 0"
    check(f"{tag}: getData on the old connection -> {want}", got == want, got)
    if got != "closed":
        # 3. a write on the old connection: closed with no reply.
        got = outcome(old, zkwire.OP_SETDATA, set_data(path, b"old"))
        check(f"{tag}: setData on the old connection -> closed, no reply", got == "closed", got)
    old.drop()

    # 4. the old connection's write did not commit; the session lives on the new member.
    err, body = new.call(zkwire.OP_GETDATA, get_data(path))
    data, stat = (body if body else (None, {}))
    check(f"{tag}: {path} holds the new member's write only", err == 0 and data == b"b" and stat.get("version") == 1,
          f"err {err} data {data!r} version {stat.get('version')}")

    # 5. a multi on an old connection: move the session again, from B to C.
    newer = moved_to(new, c)
    ops = w_int(5) + b"\x00" + w_int(-1) + set_data(path, b"multi")  # MultiHeader{setData, done=false, err=-1}
    ops += w_int(-1) + b"\x01" + w_int(-1)
    got = outcome(new, zkwire.OP_MULTI, ops)
    check(f"{tag}: multi on the old connection -> closed, no reply", got == "closed", got)
    new.drop()
    err, body = newer.call(zkwire.OP_GETDATA, get_data(path))
    data, stat = (body if body else (None, {}))
    check(f"{tag}: the multi did not commit", err == 0 and data == b"b" and stat.get("version") == 1,
          f"err {err} data {data!r} version {stat.get('version')}")
    err, _ = newer.call(zkwire.OP_DELETE, w_str(path) + w_int(-1))
    check(f"{tag}: the session still writes through its newest member", err == 0, f"err {err}")
    newer.close_session()


# A step that raises (a connection closed where the check expected an answer) fails that member's
# run by name, and the next member's run goes on: a crash must never read as fewer passes.
n = len(hosts)
for i in range(n):
    try:
        one_member(i)
    except Exception as e:  # noqa: BLE001
        check(f"old member {i + 1} ({modes[i]}): ran to the end", False, f"{type(e).__name__}: {e}")
sys.exit(1 if failed else 0)
