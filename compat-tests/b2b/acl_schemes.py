#!/usr/bin/env python3
"""ACL ids of a scheme without a registered provider, on ZooKeeper and paddock side by side.

    acl_schemes.py --zk HOST:PORT --paddock HOST:PORT --sasl yes|no --x509 yes|no

ZooKeeper's fixupACL (create, setACL, the creates of a multi) refuses an id whose scheme has no
provider in its registry with InvalidACL; sasl and x509 are registered only when configured. The two
servers must be configured alike; --sasl/--x509 say how, and so what every reply must be. Each case
runs on both servers; a case passes when both replies equal each other and the expected one. Prints
one line per case and `acl_schemes: N passed, M failed`; exit status 1 on any failure.
"""
import argparse
import os
import sys

import zkwire as zw

OK, NO_NODE, BAD_ARGUMENTS, INVALID_ACL, RUNTIME_INCONSISTENCY = 0, -101, -8, -114, -2
ALL = 31
WORLD = [(ALL, "world", "anyone")]
SASL = [(ALL, "sasl", "u1")]
X509 = [(ALL, "x509", "CN=a")]


def multi(ops):
    body = b""
    for opcode, rec in ops:
        body += zw.w_int(opcode) + zw.w_bool(False) + zw.w_int(-1) + rec
    return body + zw.w_int(-1) + zw.w_bool(True) + zw.w_int(-1)


def shape(op, err, res):
    """What is compared: the error, the created path, a multi's per-op (type, error or path)."""
    if err or res is None:
        return err
    if op == zw.OP_CREATE:
        return [err, res]
    if op == zw.OP_CREATE2:
        return [err, res[0]]
    if op == zw.OP_MULTI:
        return [err, [[r[0], r[1]] for r in res]]
    return err


def cases(base, sasl, x509):
    """(name, opcode, body, expected shape) in the order they run; later cases rely on earlier ones."""
    def create_expect(path, ok):
        return [OK, path] if ok else INVALID_ACL

    out = [("base", zw.OP_CREATE, zw.enc_create(base, b"", WORLD, 0), [OK, base])]
    for scheme, acl, ok in (("sasl", SASL, sasl), ("x509", X509, x509)):
        p = f"{base}/{scheme}"
        out += [
            (f"create {scheme}", zw.OP_CREATE, zw.enc_create(p, b"", acl, 0), create_expect(p, ok)),
            # with world:anyone first: one id without a provider refuses the whole list
            (f"create2 world+{scheme}", zw.OP_CREATE2, zw.enc_create(p + "2", b"", WORLD + acl, 0),
             [OK, p + "2"] if ok else INVALID_ACL),
            (f"create {scheme} bad flags", zw.OP_CREATE, zw.enc_create(p + "f", b"", acl, 99),
             BAD_ARGUMENTS),
            (f"create {scheme} no parent", zw.OP_CREATE, zw.enc_create(p + "/none/x", b"", acl, 0),
             NO_NODE if ok else INVALID_ACL),
            (f"setACL-node {scheme}", zw.OP_CREATE, zw.enc_create(p + "a", b"", WORLD, 0), [OK, p + "a"]),
            (f"setACL {scheme}", zw.OP_SETACL, zw.w_str(p + "a") + zw.w_acls(acl) + zw.w_int(-1),
             OK if ok else INVALID_ACL),
            (f"setACL {scheme} no node", zw.OP_SETACL, zw.w_str(p + "/none") + zw.w_acls(acl) + zw.w_int(-1),
             NO_NODE if ok else INVALID_ACL),
            (f"multi {scheme}", zw.OP_MULTI,
             multi([(zw.OP_CREATE, zw.enc_create(p + "m1", b"", WORLD, 0)),
                    (zw.OP_CREATE, zw.enc_create(p + "m2", b"", acl, 0))]),
             [OK, [["create", p + "m1"], ["create", p + "m2"]]] if ok
             else [OK, [["error", OK], ["error", INVALID_ACL]]]),
            # an earlier op failing on the tree's state answers first, whatever the ACL
            (f"multi {scheme} after NoNode", zw.OP_MULTI,
             multi([(zw.OP_CREATE, zw.enc_create(p + "/none/y", b"", WORLD, 0)),
                    (zw.OP_CREATE, zw.enc_create(p + "m3", b"", acl, 0))]),
             [OK, [["error", NO_NODE], ["error", RUNTIME_INCONSISTENCY]]]),
        ]
    return out


def run(addr, base, sasl, x509):
    host, port = addr.rsplit(":", 1)
    s = zw.Session(host, int(port))
    try:
        replies = []
        for name, op, body, _ in cases(base, sasl, x509):
            err, res = s.call(op, body)
            replies.append(shape(op, err, res))
        return replies
    finally:
        s.close_session()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zk", required=True)
    ap.add_argument("--paddock", required=True)
    ap.add_argument("--sasl", choices=["yes", "no"], required=True)
    ap.add_argument("--x509", choices=["yes", "no"], required=True)
    a = ap.parse_args()
    sasl, x509 = a.sasl == "yes", a.x509 == "yes"
    base = f"/acl-schemes-{os.getpid()}"
    want = cases(base, sasl, x509)
    zk = run(a.zk, base, sasl, x509)
    pd = run(a.paddock, base, sasl, x509)
    failed = 0
    for (name, _, _, expected), z, p in zip(want, zk, pd):
        good = z == p == expected
        failed += not good
        tag = "PASS" if good else "FAIL"
        print(f"acl_schemes [sasl={a.sasl} x509={a.x509}] {tag} {name}: zookeeper {z} paddock {p}"
              + ("" if good else f" expected {expected}"))
    print(f"acl_schemes: {len(want) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
