"""Compares paddock's /metrics and AdminServer JSON with ZooKeeper's.

usage: compare.py PROVIDED COMMANDS MOVES WORK
WORK holds zk-metrics.txt, pd-metrics.txt (and the scrapes before the client activity,
zk-metrics-before.txt, pd-metrics-before.txt) and zk-<command>.json, pd-<command>.json for each command.
Prints one line per check (ok/FAIL), then "passed N failed M".
"""
import json
import re
import sys


def types(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def samples(text):
    """{sample name with its labels normalised: value}; labels as name{k="v",...} without a trailing comma."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)", line)
        if m:
            labels = (m.group(2) or "").replace(",}", "}")
            out[m.group(1) + labels] = float(m.group(3))
    return out


def quantiles(text, name):
    """The quantile labels of summary `name`, sorted."""
    return sorted(k for k in samples(text) if k.startswith(name + '{quantile="'))


def shape(v, path="", out=None):
    """Flattens JSON into {path: type}; map keys that are data (ids, paths, times) become *."""
    if out is None:
        out = {}
    if isinstance(v, bool):
        out[path] = "bool"
    elif isinstance(v, (int, float)):
        out[path] = "number"
    elif isinstance(v, str):
        out[path] = "string"
    elif v is None:
        out[path] = "null"
    elif isinstance(v, list):
        out[path] = "list"
        for item in v[:1]:
            shape(item, path + "[]", out)
    else:
        out[path] = "object"
        for k, item in v.items():
            key = "*" if re.match(r"^(-?\d+|/.*)$", k) else k
            shape(item, path + "." + key, out)
    return out


def main():
    provided_file, commands_file, moves_file, work = sys.argv[1:5]
    passed = failed = 0

    def verdict(ok, line):
        nonlocal passed, failed
        print(("ok " if ok else "FAIL ") + line)
        if ok:
            passed += 1
        else:
            failed += 1

    provided = [l.split() for l in open(provided_file) if l.strip() and not l.startswith("#")]
    zk_text = open(f"{work}/zk-metrics.txt").read()
    pd_text = open(f"{work}/pd-metrics.txt").read()
    zk = types(zk_text)
    pd = types(pd_text)
    for name, kind in provided:
        problems = []
        if zk.get(name) != kind:
            problems.append(f"ZooKeeper has {zk.get(name)}")
        if pd.get(name) != kind:
            problems.append(f"paddock has {pd.get(name)}")
        if kind == "summary":
            zq, pq = quantiles(zk_text, name), quantiles(pd_text, name)
            if zq != pq:
                problems.append(f"quantiles: ZooKeeper {zq}, paddock {pq}")
            for suffix in ("_count", "_sum"):
                for side, s in (("ZooKeeper", samples(zk_text)), ("paddock", samples(pd_text))):
                    if name + suffix not in s:
                        problems.append(f"{side} has no {name}{suffix}")
        verdict(not problems, f"metric {name} {kind}" + (": " + "; ".join(problems) if problems else ""))
    # Values move: what the client activity must have added on both servers.
    moves = [l.split() for l in open(moves_file) if l.strip() and not l.startswith("#")]
    for side, prefix in (("ZooKeeper", "zk"), ("paddock", "pd")):
        before = samples(open(f"{work}/{prefix}-metrics-before.txt").read())
        after = samples(open(f"{work}/{prefix}-metrics.txt").read())
        for name, least in moves:
            grew = after.get(name, 0.0) - before.get(name, 0.0)
            verdict(name in after and grew >= float(least),
                    f"{side} {name} grew by {grew:g} (at least {least})")
    commands = [l.strip() for l in open(commands_file) if l.strip() and not l.startswith("#")]
    for cmd in commands:
        try:
            zs = shape(json.load(open(f"{work}/zk-{cmd}.json")))
            ps = shape(json.load(open(f"{work}/pd-{cmd}.json")))
        except (OSError, ValueError) as e:
            verdict(False, f"admin {cmd}: {e}")
            continue
        diffs = [f"{p or '.'}: ZooKeeper {zs.get(p)}, paddock {ps.get(p)}"
                 for p in sorted(set(zs) | set(ps)) if zs.get(p) != ps.get(p)]
        verdict(not diffs, f"admin {cmd}" + (": " + "; ".join(diffs) if diffs else ""))
    # `observers` in an ensemble of two participants and observer 3: the leader lists it, a follower
    # (no observer master) lists none; the same JSON shape on both servers.
    for who in ("leader", "follower"):
        try:
            zo = json.load(open(f"{work}/zk-ens-observers-{who}.json"))
            po = json.load(open(f"{work}/pd-ens-observers-{who}.json"))
        except (OSError, ValueError) as e:
            verdict(False, f"admin observers on the ensemble's {who}: {e}")
            continue
        problems = [f"{p or '.'}: ZooKeeper {t}, paddock {shape(po).get(p)}"
                    for p, t in sorted(shape(zo).items()) if shape(po).get(p) != t]
        problems += [f"{p}: only paddock has it" for p in shape(po) if p not in shape(zo)]
        want = (1, [3]) if who == "leader" else (0, [])
        for side, o in (("ZooKeeper", zo), ("paddock", po)):
            got = (o.get("synced_observers"), [x.get("sid") for x in o.get("observers", [])])
            if got != want:
                problems.append(f"{side} lists {got}, want {want}")
        verdict(not problems, f"admin observers on the ensemble's {who}" + (": " + "; ".join(problems) if problems else ""))
    # An unknown command: the same JSON, value for value.
    zu = json.load(open(f"{work}/zk-no_such_command.json"))
    pu = json.load(open(f"{work}/pd-no_such_command.json"))
    verdict(zu == pu, f"admin unknown command: ZooKeeper {zu}, paddock {pu}")
    print(f"passed {passed} failed {failed}")


main()
