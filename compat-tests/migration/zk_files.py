"""Damages a copy of a ZooKeeper data directory the way compat-tests/migration's cases need,
re-sealing a snapshot's Adler32 checksums where the damage must get past them.

    python zk_files.py bad-log-crc DIR        flip a byte inside a record in the middle of a log
    python zk_files.py missing-log DIR        drop a log the replay needs (and the snapshots after it)
    python zk_files.py acl-missing DIR        a node of the newest snapshot points at ACL index 999
    python zk_files.py other-dbid DIR         the newest snapshot says dbid 0x2a
    python zk_files.py torn-tail DIR          cut the newest log inside its last record
    python zk_files.py cut-at FRACTION DIR    ZooKeeper's files as they were right after one
                                              transaction (the one FRACTION of the way through
                                              the logs whose successor has a later time): the
                                              logs zeroed after it, later logs and snapshots
                                              removed; prints its zxid (hex) and time (ms)
"""

import os
import struct
import sys
import zlib

SEAL = b"\x00\x00\x00\x01/"


def v2(d):
    return os.path.join(d, "version-2")


def files(d, prefix):
    out = []
    for n in os.listdir(v2(d)):
        if n.startswith(prefix + ".") and all(c in "0123456789abcdef" for c in n.split(".")[1]):
            out.append((int(n.split(".")[1], 16), n))
    return sorted(out)


def records(path):
    """(offset, length) of each record of a log, up to its padding."""
    b = open(path, "rb").read()
    at, out = 16, []
    while at + 12 <= len(b):
        (ln,) = struct.unpack(">i", b[at + 8:at + 12])
        if ln <= 0 or at + 12 + ln + 1 > len(b) or b[at + 12 + ln] != 0x42:
            break
        out.append((at, ln))
        at += 12 + ln + 1
    return out


class Snap:
    """A raw snapshot, parsed far enough to change its header or a node and seal it again."""

    def __init__(self, path):
        self.b = open(path, "rb").read()
        b, at = self.b, 16
        (n,) = struct.unpack(">i", b[at:at + 4]); at += 4 + n * 12
        (n,) = struct.unpack(">i", b[at:at + 4]); at += 4
        for _ in range(n):
            at += 8
            (k,) = struct.unpack(">i", b[at:at + 4]); at += 4
            for _ in range(k):
                at += 4
                for _ in range(2):
                    (l,) = struct.unpack(">i", b[at:at + 4]); at += 4 + max(l, 0)
        self.nodes = []  # (path, offset of its acl field)
        while True:
            (l,) = struct.unpack(">i", b[at:at + 4])
            path = b[at + 4:at + 4 + l].decode()
            at += 4 + l
            if path == "/":
                break
            (l,) = struct.unpack(">i", b[at:at + 4]); at += 4 + max(l, 0)
            self.nodes.append((path, at))
            at += 8 + 60
        self.end = at  # just after the "/" end marker

    def write(self, path, body):
        """`body` (header to end marker) sealed, with the digest and last-zxid trailers."""
        out = bytearray(body)
        tail = self.b[self.end:]
        # Re-seal each seal in order: the checksum of everything before it.
        at = 0
        while at < len(tail):
            out += struct.pack(">q", zlib.adler32(bytes(out)))
            out += SEAL
            at += 13
            nxt = tail.find(SEAL, at)
            if nxt < 0:
                break
            out += tail[at:nxt - 8]
            at = nxt - 8
        open(path, "wb").write(bytes(out))


def txns(d):
    """(zxid, time, log name, record offset, record length) of every record, in zxid order."""
    out = []
    for _, n in files(d, "log"):
        p = os.path.join(v2(d), n)
        b = open(p, "rb").read()
        for off, ln in records(p):
            zxid, time = struct.unpack(">qq", b[off + 24:off + 40])
            out.append((zxid, time, n, off, ln))
    return sorted(out)


def cut_at(fraction, d):
    all_ = txns(d)
    # The transaction to stop after: near the fraction, its successor committed later (so a
    # time names it alone), and a snapshot named before it to start from.
    first_snap = files(d, "snapshot")[0][0]
    start = int(len(all_) * fraction)
    for i in range(start, len(all_) - 1):
        z, t = all_[i][0], all_[i][1]
        if all_[i + 1][1] > t and z > first_snap:
            break
    else:
        raise SystemExit("no transaction to cut at")
    _, _, name, off, ln = all_[i]
    p = os.path.join(v2(d), name)
    b = bytearray(open(p, "rb").read())
    end = off + 12 + ln + 1
    b[end:] = bytes(len(b) - end)
    open(p, "wb").write(bytes(b))
    for lz, ln_ in files(d, "log"):
        if lz > z:
            os.remove(os.path.join(v2(d), ln_))
    for sz, sn in files(d, "snapshot"):
        if sz > z:
            os.remove(os.path.join(v2(d), sn))
    print(f"0x{z:x} {t}")


def main():
    if sys.argv[1] == "cut-at":
        cut_at(float(sys.argv[2]), sys.argv[3])
        return
    cmd, d = sys.argv[1], sys.argv[2]
    logs, snaps = files(d, "log"), files(d, "snapshot")
    if cmd == "bad-log-crc":
        # A log with records after the damaged one, replayed from the newest snapshot.
        z, n = logs[-1] if len(records(os.path.join(v2(d), logs[-1][1]))) > 3 else logs[-2]
        p = os.path.join(v2(d), n)
        recs = records(p)
        off, ln = recs[len(recs) // 2]
        b = bytearray(open(p, "rb").read())
        b[off + 12 + ln // 2] ^= 0x40
        open(p, "wb").write(bytes(b))
        print(f"flipped a byte of the record at offset {off} of {n}")
    elif cmd == "missing-log":
        # A log in the middle, not the tail; the replay must cross it, so the snapshots that
        # start after it go too.
        z, n = logs[len(logs) // 2]
        assert (z, n) != logs[-1], "need a log that is not the tail"
        os.remove(os.path.join(v2(d), n))
        for sz, sn in snaps:
            if sz >= z:
                os.remove(os.path.join(v2(d), sn))
        print(f"removed {n} and the snapshots from 0x{z:x} on")
    elif cmd in ("acl-missing", "other-dbid"):
        z, n = snaps[-1]
        p = os.path.join(v2(d), n)
        s = Snap(p)
        body = bytearray(s.b[:s.end])
        if cmd == "other-dbid":
            body[8:16] = struct.pack(">q", 0x2A)
        else:
            path, at = next((p_, a) for p_, a in s.nodes if p_.startswith("/app/conf"))
            body[at:at + 8] = struct.pack(">q", 999)
            print(f"node {path} now refers to ACL index 999")
        s.write(p, body)
    elif cmd == "torn-tail":
        z, n = logs[-1]
        p = os.path.join(v2(d), n)
        off, ln = records(p)[-1]
        b = open(p, "rb").read()
        open(p, "wb").write(b[:off + 12 + ln // 2])
        print(f"cut {n} inside its last record at offset {off}")


if __name__ == "__main__":
    main()
