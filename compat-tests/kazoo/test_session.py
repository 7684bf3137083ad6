"""Session establishment on the wire: timeout negotiation, reattach, and unknown or bad credentials.

These speak the ConnectRequest/ConnectResponse handshake over a raw socket, because kazoo hides the
negotiated values; the frames are the ones every client sends (see wire/tests/vectors/).
"""

import socket
import struct

from conftest import HOSTS

# The suite's servers run with tickTime=2000, so sessions are clamped to [2, 20] ticks.
MIN_TIMEOUT = 4000
MAX_TIMEOUT = 40000


def connect(timeout_ms, session_id=0, passwd=b"\0" * 16, read_only_byte=True, last_zxid=0):
    """Sends a ConnectRequest and returns (decoded response, open socket)."""
    host, port = HOSTS.split(",")[0].rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    body = struct.pack(">iqiqi", 0, last_zxid, timeout_ms, session_id, len(passwd)) + passwd
    if read_only_byte:
        body += b"\0"
    s.sendall(struct.pack(">i", len(body)) + body)
    (length,) = struct.unpack(">i", recv_exact(s, 4))
    reply = recv_exact(s, length)
    proto, timeout, sid, plen = struct.unpack_from(">iiqi", reply)
    pw = reply[20 : 20 + plen]
    rest = reply[20 + plen :]
    return {"protocol": proto, "timeout": timeout, "session_id": sid, "passwd": pw, "rest": rest}, s


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed after %d of %d bytes" % (len(out), n))
        out += chunk
    return out


def close_session(s):
    """closeSession (xid 1, opcode -11), so the test leaves no session to expire on the server."""
    s.sendall(struct.pack(">iii", 8, 1, -11))
    recv_exact(s, 4)
    s.close()


def test_requested_timeout_within_bounds_is_granted():
    r, s = connect(10000)
    assert r["protocol"] == 0
    assert r["timeout"] == 10000
    assert r["session_id"] != 0
    assert len(r["passwd"]) == 16
    assert r["rest"] == b"\0"  # readOnly = false
    close_session(s)


def test_timeout_below_two_ticks_is_raised_and_above_twenty_ticks_is_lowered():
    low, s1 = connect(1000)
    high, s2 = connect(600000)
    assert low["timeout"] == MIN_TIMEOUT
    assert high["timeout"] == MAX_TIMEOUT
    close_session(s1)
    close_session(s2)


def test_each_connect_gets_a_new_session_id():
    a, s1 = connect(10000)
    b, s2 = connect(10000)
    assert a["session_id"] != b["session_id"]
    close_session(s1)
    close_session(s2)


def test_reconnect_with_id_and_password_resumes_the_same_session():
    first, s1 = connect(10000)
    s1.close()  # drop the TCP connection without closing the session
    again, s2 = connect(10000, session_id=first["session_id"], passwd=first["passwd"])
    assert again["session_id"] == first["session_id"]
    assert again["passwd"] == first["passwd"]
    assert again["timeout"] == 10000
    close_session(s2)


def test_reconnect_with_wrong_password_is_told_the_session_expired():
    first, s1 = connect(10000)
    s1.close()
    bad = bytes(b ^ 0xFF for b in first["passwd"])
    r, s2 = connect(10000, session_id=first["session_id"], passwd=bad)
    assert (r["timeout"], r["session_id"], r["passwd"]) == (0, 0, b"\0" * 16)
    s2.close()
    # The real session is untouched by the failed attempt.
    ok, s3 = connect(10000, session_id=first["session_id"], passwd=first["passwd"])
    assert ok["session_id"] == first["session_id"]
    close_session(s3)


def test_unknown_session_id_is_told_the_session_expired():
    r, s = connect(10000, session_id=0x99999, passwd=b"\x01" * 16)
    assert (r["timeout"], r["session_id"], r["passwd"]) == (0, 0, b"\0" * 16)
    s.close()


def test_connect_request_without_read_only_byte_is_accepted():
    # go-zookeeper sends no trailing readOnly byte; the reply then has none either (an "old client").
    r, s = connect(10000, read_only_byte=False)
    assert r["timeout"] == 10000
    assert r["session_id"] != 0
    assert r["rest"] == b""
    close_session(s)
