#!/usr/bin/env python3
"""A recording TCP proxy for the ZooKeeper client protocol.

Listens on 127.0.0.1:<listen>, forwards every connection to <target>, and writes each connection's frames to
<out> as `C <hex>` (client to server) and `S <hex>` (server to client) lines. Each line is one whole frame, its
4-byte big-endian length prefix included: the byte stream of each direction is cut into frames by that prefix,
whatever the TCP segmentation was. Connections are separated by `--- connection` lines and written in the order
they close, each as one block, so concurrent connections never interleave. The file opens with `#` comment lines
given by --comment. Connections whose first four bytes are a four-letter word (ruok, envi, ...) are forwarded
but not recorded.

Usage: proxy.py --listen 2200 --target 127.0.0.1:2191 --out kazoo.txt --comment "client: kazoo 2.11.0" ...
Stops on SIGINT/SIGTERM, after writing out the connections still open.
"""

import argparse
import signal
import socket
import struct
import sys
import threading


class Connection:
    """One proxied client connection and the frames seen on it, in arrival order."""

    def __init__(self, client, server, recorder):
        self.client = client
        self.server = server
        self.recorder = recorder
        self.lines = []
        self.lock = threading.Lock()
        self.record = True
        self.first = True
        self.open_pumps = 2

    def frames(self, buf, data, tag):
        """Appends data to buf and records every complete frame; returns what is left."""
        buf += data
        while len(buf) >= 4:
            (length,) = struct.unpack(">i", buf[:4])
            if length < 0 or len(buf) < 4 + length:
                break
            frame, buf = buf[: 4 + length], buf[4 + length :]
            self.lines.append("%s %s" % (tag, frame.hex()))
        return buf

    def pump(self, src, dst, tag):
        buf = b""
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                with self.lock:
                    if tag == "C" and self.first:
                        self.first = False
                        head = data[:4]
                        if len(head) == 4 and all(0x61 <= b <= 0x7A for b in head):
                            self.record = False
                    if self.record:
                        buf = self.frames(buf, data, tag)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with self.lock:
                if buf and self.record:
                    # A partial frame at close is kept visibly rather than dropped silently.
                    self.lines.append("# %s partial frame at close: %s" % (tag, buf.hex()))
            for s in (dst,):
                try:
                    s.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
            self.finished()

    def finished(self):
        with self.lock:
            self.open_pumps -= 1
            done = self.open_pumps == 0
        if done:
            for s in (self.client, self.server):
                try:
                    s.close()
                except OSError:
                    pass
            if self.record and self.lines:
                self.recorder.write(self.lines)


class Recorder:
    def __init__(self, path, comments):
        self.lock = threading.Lock()
        self.file = open(path, "w", encoding="ascii")
        self.count = 0
        for c in comments:
            self.file.write("# %s\n" % c)
        self.file.flush()

    def write(self, lines):
        with self.lock:
            if self.count:
                self.file.write("--- connection\n")
            self.count += 1
            self.file.write("\n".join(lines) + "\n")
            self.file.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--target", required=True, help="host:port of the ZooKeeper server")
    ap.add_argument("--out", required=True)
    ap.add_argument("--comment", action="append", default=[], help="a # line for the file header")
    args = ap.parse_args()
    host, port = args.target.rsplit(":", 1)
    recorder = Recorder(args.out, args.comment)

    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.listen))
    listener.listen(64)

    stop = threading.Event()

    def on_signal(*_):
        stop.set()
        listener.close()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print("proxy: 127.0.0.1:%d -> %s, recording to %s" % (args.listen, args.target, args.out), flush=True)

    threads = []
    while not stop.is_set():
        try:
            client, _ = listener.accept()
        except OSError:
            break
        try:
            server = socket.create_connection((host, int(port)))
        except OSError as e:
            print("proxy: cannot reach %s: %s" % (args.target, e), file=sys.stderr, flush=True)
            client.close()
            continue
        for s in (client, server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = Connection(client, server, recorder)
        for src, dst, tag in ((client, server, "C"), (server, client, "S")):
            t = threading.Thread(target=conn.pump, args=(src, dst, tag), daemon=True)
            t.start()
            threads.append(t)
    for t in threads:
        t.join(timeout=5)
    print("proxy: recorded %d connection(s)" % recorder.count, flush=True)


if __name__ == "__main__":
    main()
