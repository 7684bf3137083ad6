"""Dumps a whole tree through a client, node by node: path, data, every stat field and the ACL
list, as JSON; or compares two dumps and prints every difference.

    python tree_dump.py dump HOSTS OUT.json [--auth digest:user:pw ...]
    python tree_dump.py compare A.json B.json [--ignore-prefix /zookeeper/config ...]

Reading every node needs READ on it: the writer's digest users are added with --auth.
The comparison is exact: the same paths, data, czxid, mzxid, pzxid, ctime, mtime, version,
cversion, aversion, ephemeralOwner, dataLength, numChildren and ACLs.
"""

import json
import sys

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError

FIELDS = ["czxid", "mzxid", "ctime", "mtime", "version", "cversion", "aversion",
          "ephemeralOwner", "dataLength", "numChildren", "pzxid"]


def dump(hosts, out, auths):
    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start()
    for a in auths:
        scheme, cred = a.split(":", 1)
        zk.add_auth(scheme, cred)
    nodes = {}
    stack = ["/"]
    while stack:
        p = stack.pop()
        try:
            data, st = zk.get(p)
            acl, _ = zk.get_acls(p)
            kids = zk.get_children(p)
        except NoNodeError:
            continue
        except NoAuthError:
            nodes[p] = {"noauth": True}
            continue
        nodes[p] = {
            "data": data.hex() if data is not None else None,
            "stat": {f: getattr(st, f if f != "ephemeralOwner" else "ephemeralOwner") for f in FIELDS},
            "acl": sorted([[a.perms, a.id.scheme, a.id.id] for a in acl]),
        }
        for k in kids:
            stack.append(("" if p == "/" else p) + "/" + k)
    zk.stop()
    zk.close()
    json.dump(nodes, open(out, "w"), sort_keys=True)
    print(f"dumped {len(nodes)} nodes from {hosts}")


def compare(a_path, b_path, ignore):
    a, b = json.load(open(a_path)), json.load(open(b_path))
    keep = lambda p: not any(p == i or p.startswith(i + "/") for i in ignore)
    diffs = []
    for p in sorted(set(a) | set(b)):
        if not keep(p):
            continue
        if p not in a or p not in b:
            diffs.append(f"{p}: only in {'the first' if p in a else 'the second'}")
            continue
        na, nb = a[p], b[p]
        for k in ("data", "acl", "noauth"):
            if na.get(k) != nb.get(k):
                diffs.append(f"{p}: {k} {na.get(k)!r:.80} != {nb.get(k)!r:.80}")
        for f in FIELDS:
            va, vb = na.get("stat", {}).get(f), nb.get("stat", {}).get(f)
            if va != vb:
                diffs.append(f"{p}: {f} {va} != {vb}")
    for d in diffs[:50]:
        print("DIFF", d)
    n = len([p for p in a if keep(p)])
    print(f"compared {n} nodes: {len(diffs)} differences")
    return 1 if diffs else 0


def main():
    cmd = sys.argv[1]
    if cmd == "dump":
        auths = [sys.argv[i + 1] for i, x in enumerate(sys.argv) if x == "--auth"]
        dump(sys.argv[2], sys.argv[3], auths)
    elif cmd == "compare":
        ignore = [sys.argv[i + 1] for i, x in enumerate(sys.argv) if x == "--ignore-prefix"]
        sys.exit(compare(sys.argv[2], sys.argv[3], ignore))


if __name__ == "__main__":
    main()
