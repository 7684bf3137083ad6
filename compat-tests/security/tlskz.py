"""kazoo over the client port's TLS, for the security suite's group `client` (run.sh).

    tlskz.py own HP CERTS NAME PATH SUBJECT   TLS as NAME (CERTS/NAME.crt and .key, trusting CERTS/ca1.crt):
                                              create PATH readable only by x509:SUBJECT, read it back
    tlskz.py read HP CERTS NAME PATH          read PATH as NAME (NAME `-` for plaintext): prints ok, or the
                                              error's name (NoAuthError, ...)
    tlskz.py session HP CERTS NAME [CA]       open a session as NAME trusting CERTS/CA.crt (default ca1) for the
                                              server: prints `session` or why not
    tlskz.py mixed HP CERTS                   a plaintext client and a TLS client (alice) on the same port at
                                              once: each creates a node, each reads both
    tlskz.py load HP CERTS NAME CA OUT STOP   writers for the rotation: 4 TLS sessions (NAME, trusting
                                              CERTS/CA.crt) creating numbered nodes until the file STOP
                                              exists; OUT gets the acknowledged paths and the errors
    tlskz.py verify HP CERTS OUT              every acknowledged path of OUT exists (read in plaintext)
    tlskz.py tool HP CERTS NAME AUTH OP PATH  for `paddock lock`'s nodes (group tools), as NAME with AUTH
                                              (USER:PASSWORD added as digest, `-` for none): OP `acl` prints
                                              PATH's ACL and its first child's (`scheme:id:perms` joined by
                                              `,`, the two lists by `|`); OP `delete` deletes PATH's first
                                              child and prints ok or the error's name; OP `children` prints
                                              the number of children, or the error's name
    tlskz.py ports HP SHP ADMIN CERTS         with a plaintext session on HP and a TLS one (alice) on SHP open:
                                              `cons` over each port, `conf` and `mntr` over TLS, and the
                                              AdminServer's connections command at ADMIN (host:port); prints
                                              what they show, one `key=value` a line

Exit status 0 when the operation did what it says, 1 otherwise; 3 when no session opened.
"""

import json
import logging
import os
import secrets
import socket
import ssl
import sys
import threading
import time
import urllib.request

from kazoo.client import KazooClient
from kazoo.security import ACL, Id, Permissions

logging.basicConfig(level=logging.CRITICAL)


def client(hp, certs, name, ca="ca1", retry=3, wait=15):
    """A started client: plaintext for NAME `-`; TLS as NAME (no certificate for NAME `none`), trusting
    CERTS/CA (CA.crt when it has no extension) for the server's certificate."""
    kw = {}
    if name != "-":
        kw = dict(use_ssl=True, ca=f"{certs}/{ca}" if "." in ca else f"{certs}/{ca}.crt",
                  verify_certs=True, check_hostname=False)
        if name != "none":
            kw.update(certfile=f"{certs}/{name}.crt", keyfile=f"{certs}/{name}.key")
    zk = KazooClient(hosts=hp, timeout=10, connection_retry={"max_tries": retry, "delay": 0.2},
                     command_retry={"max_tries": 0}, **kw)
    zk.start(timeout=wait)
    return zk


def x509_acl(subject):
    return [ACL(Permissions.ALL, Id("x509", subject))]


def own(hp, certs, name, path, subject):
    zk = client(hp, certs, name)
    try:
        zk.create(path, b"mine", acl=x509_acl(subject), makepath=True)
        data, _ = zk.get(path)
        print(data.decode())
        return 0 if data == b"mine" else 1
    finally:
        zk.stop()
        zk.close()


def read(hp, certs, name, path):
    zk = client(hp, certs, name)
    try:
        zk.get(path)
        print("ok")
    except Exception as e:
        print(type(e).__name__)
    finally:
        zk.stop()
        zk.close()
    return 0


def session(hp, certs, name, ca):
    zk = client(hp, certs, name, ca, retry=1, wait=6)
    zk.stop()
    zk.close()
    print("session")
    return 0


def mixed(hp, certs):
    tag = secrets.token_hex(4)
    plain = client(hp, certs, "-")
    tls = client(hp, certs, "alice")
    try:
        plain.create(f"/mixed-{tag}/plain", b"p", makepath=True)
        tls.create(f"/mixed-{tag}/tls", b"t", makepath=True)
        for zk in (plain, tls):
            for child, want in (("plain", b"p"), ("tls", b"t")):
                got, _ = zk.get(f"/mixed-{tag}/{child}")
                if got != want:
                    print(f"{child}: {got!r}")
                    return 1
        print("both")
        return 0
    finally:
        for zk in (plain, tls):
            zk.stop()
            zk.close()


def load(hp, certs, name, ca, out, stop):
    acked, errors = [], []
    lock = threading.Lock()
    tag = secrets.token_hex(4)

    def writer(i):
        try:
            zk = client(hp, certs, name, ca)
        except Exception as e:
            with lock:
                errors.append(f"writer {i}: no session: {type(e).__name__}")
            return
        n = 0
        try:
            while not os.path.exists(stop):
                path = f"/load-{tag}/w{i}-{n:06d}"
                try:
                    zk.create(path, b"x", makepath=True)
                    with lock:
                        acked.append(path)
                except Exception as e:
                    with lock:
                        errors.append(f"writer {i}: {path}: {type(e).__name__}")
                    time.sleep(0.1)
                n += 1
        finally:
            zk.stop()
            zk.close()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(out, "w") as f:
        json.dump({"acked": acked, "errors": errors}, f)
    return 0


def verify(hp, certs, out):
    r = json.load(open(out))
    zk = client(hp, certs, "-")
    try:
        missing = [p for p in r["acked"] if zk.exists(p) is None]
    finally:
        zk.stop()
        zk.close()
    print(f"{len(r['acked'])} acknowledged creates, {len(missing)} missing, {len(r['errors'])} errors"
          + (f"; first error: {r['errors'][0]}" if r["errors"] else ""))
    return 0 if r["acked"] and not missing and not r["errors"] else 1


def four_letter(hp, word, certs=None):
    host, port = hp.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    if certs:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.load_verify_locations(f"{certs}/ca1.crt")
        ctx.load_cert_chain(f"{certs}/alice.crt", f"{certs}/alice.key")
        sock = ctx.wrap_socket(sock)
    sock.sendall(word.encode())
    out = b""
    while True:
        b = sock.recv(65536)
        if not b:
            break
        out += b
    sock.close()
    return out.decode()


def ports(hp, shp, admin, certs):
    plain = client(hp, certs, "-")
    tls = client(shp, certs, "alice")
    try:
        print(f"cons_plain_sessions={four_letter(hp, 'cons').count('sid=0x')}")
        print(f"cons_tls_sessions={four_letter(shp, 'cons', certs).count('sid=0x')}")
        conf = four_letter(shp, "conf", certs)
        print("conf_" + next((l for l in conf.splitlines() if l.startswith("secureClientPort=")), "none"))
        mntr = dict(l.split("\t", 1) for l in four_letter(shp, "mntr", certs).splitlines() if "\t" in l)
        print(f"mntr_non_mtls_local_positive={int(mntr.get('zk_non_mtls_local_conn_count', '0')) > 0}")
        print(f"mntr_non_mtls_remote={mntr.get('zk_non_mtls_remote_conn_count')}")
        srvr = four_letter(hp, "srvr")
        print(f"srvr_{next((l for l in srvr.splitlines() if l.startswith('Connections:')), 'none')}")
        body = json.load(urllib.request.urlopen(f"http://{admin}/commands/connections", timeout=10))
        print(f"admin_connections={len(body.get('connections', []))}")
        print(f"admin_secure_connections={len(body.get('secure_connections', []))}")
    finally:
        for zk in (plain, tls):
            zk.stop()
            zk.close()
    return 0


def tool(hp, certs, name, auth, op, path):
    zk = client(hp, certs, name)
    try:
        if auth != "-":
            zk.add_auth("digest", auth)
        try:
            children = sorted(zk.get_children(path))
            if op == "children":
                print(len(children))
            elif op == "acl":
                lists = [zk.get_acls(p)[0] for p in [path, f"{path}/{children[0]}"]]
                print("|".join(",".join(f"{a.id.scheme}:{a.id.id}:{a.perms}" for a in acl) for acl in lists))
            elif op == "delete":
                zk.delete(f"{path}/{children[0]}")
                print("ok")
            else:
                print(f"unknown op {op}")
                return 2
        except Exception as e:
            print(type(e).__name__)
        return 0
    finally:
        zk.stop()
        zk.close()


def main():
    cmd, a = sys.argv[1], sys.argv[2:]
    try:
        if cmd == "own":
            return own(*a)
        if cmd == "read":
            return read(*a)
        if cmd == "session":
            return session(a[0], a[1], a[2], a[3] if len(a) > 3 else "ca1")
        if cmd == "mixed":
            return mixed(*a)
        if cmd == "load":
            return load(*a)
        if cmd == "verify":
            return verify(*a)
        if cmd == "ports":
            return ports(*a)
        if cmd == "tool":
            return tool(*a)
    except Exception as e:  # kazoo raises its own timeout types, OSError and ssl errors
        print(f"{type(e).__name__}: {e}")
        return 3 if "Timeout" in type(e).__name__ else 1
    print(f"unknown command {cmd}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
