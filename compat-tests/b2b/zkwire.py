"""A minimal, single-threaded ZooKeeper 3.9 wire client for the back-to-back suite.

Why not kazoo: kazoo merges watch notifications into client-side watcher sets, runs callbacks on
its own thread, reconnects (and replays setWatches) behind our back and cannot encode create2
results inside multi, containers or TTL nodes. The suite must see exactly the frames a server
sends, in order, so each session here is one blocking socket: a request is written, and frames are
read until the reply with the same xid arrives; every xid -1 notification read on the way is
appended to `events` in arrival order.
"""

import hashlib
import base64
import os
import re
import socket
import struct

OP_CREATE, OP_DELETE, OP_EXISTS, OP_GETDATA, OP_SETDATA = 1, 2, 3, 4, 5
OP_GETACL, OP_SETACL, OP_GETCHILDREN, OP_SYNC = 6, 7, 8, 9
OP_GETCHILDREN2, OP_CHECK, OP_MULTI, OP_CREATE2 = 12, 13, 14, 15
OP_CREATE_CONTAINER, OP_CREATE_TTL, OP_MULTI_READ = 19, 21, 22
OP_CHECK_WATCHES, OP_REMOVE_WATCHES = 17, 18
OP_AUTH, OP_GET_EPHEMERALS, OP_GET_ALL_CHILDREN_NUMBER, OP_ADD_WATCH = 100, 103, 104, 106
OP_CLOSE = -11
OP_WHO_AM_I = 107
OP_SASL = 102

STAT = struct.Struct("!qqqqiiiqiiq")
STAT_FIELDS = ("czxid", "mzxid", "ctime", "mtime", "version", "cversion", "aversion",
               "ephemeralOwner", "dataLength", "numChildren", "pzxid")


class ConnectionClosed(Exception):
    """The server closed the socket (or it timed out) before the awaited reply."""


def digest_id(user_password):
    """The digest ACL id ZooKeeper derives from `user:password`."""
    user = user_password.split(":", 1)[0]
    h = base64.b64encode(hashlib.sha1(user_password.encode()).digest()).decode()
    return f"{user}:{h}"


# ---- encoding -------------------------------------------------------------------------------

def w_int(v):
    return struct.pack("!i", v)


def w_long(v):
    return struct.pack("!q", v)


def w_bool(v):
    return b"\x01" if v else b"\x00"


def w_str(s):
    if s is None:
        return w_int(-1)
    b = s.encode("utf-8")
    return w_int(len(b)) + b


def w_buf(b):
    if b is None:
        return w_int(-1)
    return w_int(len(b)) + b


def w_acls(acls):
    out = w_int(len(acls))
    for perms, scheme, ident in acls:
        out += w_int(perms) + w_str(scheme) + w_str(ident)
    return out


def enc_create(path, data, acls, flags, ttl=None):
    body = w_str(path) + w_buf(data) + w_acls(acls) + w_int(flags)
    if ttl is not None:
        body += w_long(ttl)
    return body


# ---- decoding -------------------------------------------------------------------------------

class Reader:
    def __init__(self, buf, off=0):
        self.buf, self.off = buf, off

    def int(self):
        v = struct.unpack_from("!i", self.buf, self.off)[0]
        self.off += 4
        return v

    def long(self):
        v = struct.unpack_from("!q", self.buf, self.off)[0]
        self.off += 8
        return v

    def bool(self):
        v = self.buf[self.off] != 0
        self.off += 1
        return v

    def buffer(self):
        n = self.int()
        if n < 0:
            return None
        v = bytes(self.buf[self.off:self.off + n])
        self.off += n
        return v

    def str(self):
        b = self.buffer()
        return None if b is None else b.decode("utf-8", "surrogateescape")

    def stat(self):
        v = STAT.unpack_from(self.buf, self.off)
        self.off += STAT.size
        return dict(zip(STAT_FIELDS, v))

    def strs(self):
        n = self.int()
        return None if n < 0 else [self.str() for _ in range(n)]

    def acls(self):
        n = self.int()
        if n < 0:
            return None
        out = []
        for _ in range(n):
            perms = self.int()
            out.append((perms, self.str(), self.str()))
        return out


def decode_multi(r):
    """MultiResponse: a list of (type, err, body) until the done marker."""
    results = []
    while True:
        typ, done, err = r.int(), r.bool(), r.int()
        if done:
            return results
        if typ == -1:
            results.append(("error", r.int()))
        elif typ == OP_CREATE:
            results.append(("create", r.str()))
        elif typ == OP_CREATE2:
            results.append(("create2", r.str(), r.stat()))
        elif typ == OP_DELETE:
            results.append(("delete",))
        elif typ == OP_SETDATA:
            results.append(("setData", r.stat()))
        elif typ == OP_CHECK:
            results.append(("check",))
        elif typ == OP_GETDATA:
            results.append(("getData", r.buffer(), r.stat()))
        elif typ == OP_GETCHILDREN:
            results.append(("getChildren", r.strs()))
        else:
            results.append(("unknown-type", typ))
            return results


DECODERS = {
    OP_CREATE: lambda r: r.str(),
    OP_CREATE2: lambda r: (r.str(), r.stat()),
    OP_CREATE_CONTAINER: lambda r: (r.str(), r.stat()),
    OP_CREATE_TTL: lambda r: (r.str(), r.stat()),
    OP_DELETE: lambda r: None,
    OP_EXISTS: lambda r: r.stat(),
    OP_GETDATA: lambda r: (r.buffer(), r.stat()),
    OP_SETDATA: lambda r: r.stat(),
    OP_GETACL: lambda r: (r.acls(), r.stat()),
    OP_SETACL: lambda r: r.stat(),
    OP_GETCHILDREN: lambda r: r.strs(),
    OP_GETCHILDREN2: lambda r: (r.strs(), r.stat()),
    OP_SYNC: lambda r: r.str(),
    OP_MULTI: decode_multi,
    OP_MULTI_READ: decode_multi,
    OP_GET_EPHEMERALS: lambda r: r.strs(),
    OP_GET_ALL_CHILDREN_NUMBER: lambda r: r.int(),
    OP_ADD_WATCH: lambda r: None,
    OP_REMOVE_WATCHES: lambda r: None,
    OP_CHECK_WATCHES: lambda r: None,
    OP_CLOSE: lambda r: None,
    OP_WHO_AM_I: lambda r: [[r.str(), r.str()] for _ in range(r.int())],
    OP_SASL: lambda r: r.buffer(),
}


# ---- SASL DIGEST-MD5 (RFC 2831), the client side of what ZooKeeper's client port runs -----------

SASL_REALM = "zk-sasl-md5"                 # ZooKeeper creates its SASL server with this server name
SASL_DIGEST_URI = "zookeeper/zk-sasl-md5"  # <protocol>/<server name>


def _sasl_fields(challenge):
    """`k=v,k="v",...` of a DIGEST-MD5 challenge into a dict (quoted values may hold commas)."""
    out = {}
    for m in re.finditer(r'\s*([A-Za-z-]+)=("((?:[^"\\]|\\.)*)"|[^,]*)\s*(,|$)', challenge):
        out[m.group(1)] = m.group(3) if m.group(3) is not None else m.group(2)
    return out


def sasl_digest_response(challenge, user, password, cnonce=None):
    """The client's answer to a DIGEST-MD5 challenge, qop auth, no authzid (as ZooKeeper's Java
    client sends it with the JDK's DigestMD5Client), and the rspauth a server knowing the password
    must send back."""
    f = _sasl_fields(challenge.decode())
    realm, nonce = f.get("realm", SASL_REALM), f["nonce"]
    cnonce = cnonce or base64.b64encode(os.urandom(24)).decode()
    nc = "00000001"
    h = lambda b: hashlib.md5(b).digest()
    hx = lambda b: hashlib.md5(b).hexdigest()
    a1 = h(f"{user}:{realm}:{password}".encode()) + f":{nonce}:{cnonce}".encode()
    a2 = f"AUTHENTICATE:{SASL_DIGEST_URI}".encode()
    resp = hx(f"{hx(a1)}:{nonce}:{nc}:{cnonce}:auth:{hx(a2)}".encode())
    rspauth = hx(f"{hx(a1)}:{nonce}:{nc}:{cnonce}:auth:{hx(f':{SASL_DIGEST_URI}'.encode())}".encode())
    return (f'charset=utf-8,username="{user}",realm="{realm}",nonce="{nonce}",nc={nc},'
            f'cnonce="{cnonce}",digest-uri="{SASL_DIGEST_URI}",maxbuf=65536,response={resp},qop=auth').encode(), f"rspauth={rspauth}".encode()


class Session:
    """One connection holding one session. `events` collects (type, state, path) notifications."""

    def __init__(self, host, port, timeout_ms=30000, io_timeout=20.0):
        self.addr, self.timeout_ms, self.io_timeout = (host, port), timeout_ms, io_timeout
        self.xid = 0
        self.events = []
        self.last_zxid = 0
        self.session_id, self.passwd = 0, b"\x00" * 16
        self._connect()

    def _connect(self):
        self.sock = socket.create_connection(self.addr, timeout=self.io_timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.closed = False
        req = w_int(0) + w_long(self.last_zxid) + w_int(self.timeout_ms) + w_long(self.session_id) \
            + w_buf(self.passwd) + w_bool(False)
        self._send(req)
        r = Reader(self._recv_frame())
        r.int()
        self.timeout = r.int()
        self.session_id = r.long()
        self.passwd = r.buffer()
        if self.timeout <= 0:
            self.drop()
            raise ConnectionClosed("session refused")

    def reconnect(self):
        """Drops the TCP connection (the session stays) and connects again with the same session id,
        password and last zxid seen, as a client does after a connection loss."""
        self.drop()
        self._connect()

    def set_watches2(self, data, exist, child, persistent, recursive):
        """setWatches2 (xid -8) with relativeZxid = last zxid seen; returns err."""
        body = w_long(self.last_zxid)
        for paths in (data, exist, child, persistent, recursive):
            body += w_int(len(paths)) + b"".join(w_str(p) for p in paths)
        self._send_special(w_int(-8) + w_int(105) + body)
        return self._await_special(-8)

    def _send(self, payload):
        self.sock.sendall(w_int(len(payload)) + payload)

    def _recv_exact(self, n):
        chunks, got = [], 0
        while got < n:
            try:
                c = self.sock.recv(n - got)
            except OSError as e:
                raise ConnectionClosed(str(e))
            if not c:
                raise ConnectionClosed("eof")
            chunks.append(c)
            got += len(c)
        return b"".join(chunks)

    def _recv_frame(self):
        n = struct.unpack("!i", self._recv_exact(4))[0]
        return self._recv_exact(n)

    def send(self, op, body=b""):
        """Writes a request and returns its xid (for pipelining with `wait`)."""
        if self.closed:
            raise ConnectionClosed("closed earlier")
        self.xid += 1
        try:
            self._send(w_int(self.xid) + w_int(op) + body)
        except OSError as e:
            self.closed = True
            raise ConnectionClosed(str(e))
        return self.xid, op

    def wait(self, ticket):
        """Reads frames until the reply to `ticket`; returns (err, decoded body or None)."""
        xid, op = ticket
        while True:
            try:
                frame = self._recv_frame()
            except ConnectionClosed:
                self.closed = True
                raise
            r = Reader(frame)
            rxid, zxid, err = r.int(), r.long(), r.int()
            if rxid == -1:
                self.events.append((r.int(), r.int(), r.str()))
                continue
            if zxid > 0:
                self.last_zxid = zxid
            if rxid != xid:
                # auth (-4) and ping (-2) replies are not awaited here; anything else is a protocol bug
                if rxid in (-2, -4):
                    continue
                raise ConnectionClosed(f"xid out of order: got {rxid}, want {xid}")
            if err != 0:
                return err, None
            return 0, DECODERS[op](r)

    def call(self, op, body=b""):
        return self.wait(self.send(op, body))

    def auth(self, scheme, credential):
        """Sends an auth packet (xid -4) and waits for its reply; returns err."""
        self._send_special(w_int(-4) + w_int(OP_AUTH) + w_int(0) + w_str(scheme) + w_buf(credential.encode()))
        return self._await_special(-4)

    def _send_special(self, payload):
        """Writes an auth or setWatches packet; ConnectionClosed if the connection is gone (a server
        closes it after, e.g., a request over jute.maxbuffer)."""
        if self.closed:
            raise ConnectionClosed("closed earlier")
        try:
            self._send(payload)
        except OSError as e:
            self.closed = True
            raise ConnectionClosed(str(e))

    def sasl(self, user, password):
        """A DIGEST-MD5 login (opcode 102, ordinary xids): an empty token, the server's challenge,
        the response, the server's rspauth. Returns the first non-zero err, "bad rspauth" if the
        server's proof is wrong, or 0."""
        err, challenge = self.call(OP_SASL, w_buf(b""))
        if err:
            return err
        if not challenge:
            return "no challenge"   # a server without a JAAS Server section answers OK, no token
        token, want = sasl_digest_response(challenge, user, password)
        err, rspauth = self.call(OP_SASL, w_buf(token))
        if err:
            return err
        if rspauth != want:
            return "bad rspauth"
        return 0

    def _await_special(self, xid):
        """Reads frames until the reply with a special xid (-4 auth, -8 setWatches) and returns its
        err, keeping the notifications (xid -1) that come before it."""
        while True:
            r = Reader(self._recv_frame())
            rxid, _zxid, err = r.int(), r.long(), r.int()
            if rxid == -1:
                self.events.append((r.int(), r.int(), r.str()))
                continue
            if rxid == xid:
                return err

    def close_session(self):
        """closeSession, then drop the socket; returns the reply err (or 'conn-closed')."""
        try:
            err, _ = self.call(OP_CLOSE)
        except ConnectionClosed:
            err = "conn-closed"
        self.drop()
        return err

    def drop(self):
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass
