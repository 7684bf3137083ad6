"""Compares paddock's /metrics and AdminServer JSON with ZooKeeper's.

usage: compare.py PROVIDED COMMANDS WORK
WORK holds zk-metrics.txt, pd-metrics.txt and zk-<command>.json, pd-<command>.json for each command.
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
    provided_file, commands_file, work = sys.argv[1:4]
    passed = failed = 0

    def verdict(ok, line):
        nonlocal passed, failed
        print(("ok " if ok else "FAIL ") + line)
        if ok:
            passed += 1
        else:
            failed += 1

    provided = [l.split() for l in open(provided_file) if l.strip() and not l.startswith("#")]
    zk = types(open(f"{work}/zk-metrics.txt").read())
    pd = types(open(f"{work}/pd-metrics.txt").read())
    for name, kind in provided:
        problems = []
        if zk.get(name) != kind:
            problems.append(f"ZooKeeper has {zk.get(name)}")
        if pd.get(name) != kind:
            problems.append(f"paddock has {pd.get(name)}")
        verdict(not problems, f"metric {name} {kind}" + (": " + "; ".join(problems) if problems else ""))
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
    # An unknown command: the same JSON, value for value.
    zu = json.load(open(f"{work}/zk-no_such_command.json"))
    pu = json.load(open(f"{work}/pd-no_such_command.json"))
    verdict(zu == pu, f"admin unknown command: ZooKeeper {zu}, paddock {pu}")
    print(f"passed {passed} failed {failed}")


main()
