#!/usr/bin/env python3
"""The lock shoot-out's table (bench/locks/run.sh): reads OUT/results.jsonl, OUT/killtests.jsonl and
OUT/params.json, writes OUT/results.csv and prints the table (cells, kill tests, targets)."""
import csv
import json
import os
import sys

out = sys.argv[1]


def load(name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.strip()]


cells = load("results.jsonl")
kills = {k["label"]: k for k in load("killtests.jsonl")}
params = json.load(open(os.path.join(out, "params.json")))

MEMBERS = {"paddock-1": 1, "paddock-3": 3, "zookeeper-1": 1, "zookeeper-3": 3, "etcd-1": 1, "etcd-3": 3,
           "redis-always": 1, "redis-everysec": 1, "redis-default": 1}
RECIPE = {"zk": "ephemeral-sequential (go-zookeeper)", "etcd": "concurrency.Mutex (clientv3)",
          "redis": "SET NX PX + checked DEL (go-redis)"}
TOKEN = {"zk": "czxid", "etcd": "revision", "redis": "none"}

fields = ["system", "members", "wait", "contenders", "round", "handoffs_per_sec", "acquire_p50_ms", "acquire_p99_ms",
          "server_cpu_us_per_handoff", "min_per_contender", "max_per_contender", "violations", "errors",
          "fencing_token", "generator_busy_pct", "waiting_at_end", "steal_pct", "loadavg", "secs", "handoffs"]
rows = []
for c in cells:
    system = c["label"].split("/")[0]
    rows.append({
        "system": system, "members": MEMBERS.get(system, ""),
        "wait": c.get("redis_wait", "watch"),
        "contenders": c["contenders"], "round": c.get("round", 1),
        "handoffs_per_sec": round(c.get("handoffs_per_sec", 0), 1),
        "acquire_p50_ms": round(c.get("acquire_p50_us", 0) / 1000, 2),
        "acquire_p99_ms": round(c.get("acquire_p99_us", 0) / 1000, 2),
        "server_cpu_us_per_handoff": round(c["server_cpu_us_per_handoff"]) if "server_cpu_us_per_handoff" in c else "",
        "min_per_contender": c.get("min_handoffs_per_contender", ""),
        "max_per_contender": c.get("max_handoffs_per_contender", ""),
        "violations": c.get("violations", ""), "errors": c.get("errors", c.get("error", "")),
        "fencing_token": TOKEN[c["system"]],
        "generator_busy_pct": round(100 * c["client_cpu_secs"] / c["secs"]) if c.get("secs") else "",
        "waiting_at_end": c.get("waiting_at_end", ""),
        "steal_pct": round(c["steal_pct"], 1) if "steal_pct" in c else "",
        "loadavg": c.get("loadavg", ""), "secs": c.get("secs", ""), "handoffs": c.get("handoffs", ""),
    })
with open(os.path.join(out, "results.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields)
    w.writeheader()
    w.writerows(rows)


def table(header, body):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)] if body else [len(h) for h in header]
    line = lambda r: "| " + " | ".join(str(x).ljust(wd) for x, wd in zip(r, widths)) + " |"
    print(line(header))
    print("|" + "|".join("-" * (wd + 2) for wd in widths) + "|")
    for r in body:
        print(line(r))


print(f"Lock shoot-out, {params['date_utc']}, git {params['git_rev']}: servers pinned to CPU {params['server_cpus']} "
      f"(all members of a 3-member system on it), generator on CPU {params['client_cpus']}; "
      f"{params['duration_secs']} s measured per cell after {params['warmup_secs']} s warm-up, "
      f"{params.get('rounds', 1)} round(s); load average {params['loadavg_start']} at the start, "
      f"{params['loadavg_end']} at the end.")
disk = [params.get("disk_start"), params.get("disk_end")]
if all(disk):
    print("Disk, one synced 512-byte write (p50/p99 µs, start and end): append to a growing file "
          + ", ".join(f"{d['append_fdatasync_p50_us']}/{d['append_fdatasync_p99_us']}" for d in disk)
          + "; overwrite of a preallocated file "
          + ", ".join(f"{d['prealloc_fdatasync_p50_us']}/{d['prealloc_fdatasync_p99_us']}" for d in disk) + ".")
print("One generator (bench/locks/harness, Go) for every system; fsync on everywhere (Redis: appendfsync as named; "
      "redis-default: no AOF).")
print()


def fmt(x):
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


groups = {}
for r in rows:
    groups.setdefault((r["system"], r["wait"], r["contenders"]), []).append(r)
agg = []
for (system, wait, n), rs in groups.items():
    num = lambda k: [r[k] for r in rs if r[k] != ""]
    rate = num("handoffs_per_sec")
    spread = f" [{fmt(min(rate))}..{fmt(max(rate))}]" if len(rs) > 1 else ""
    cpu = num("server_cpu_us_per_handoff")
    errors = sum(r["errors"] for r in rs if isinstance(r["errors"], int))
    # A figure no round reported (a cell too short to measure it) prints as "-".
    med = lambda k, f=fmt: f(median(num(k))) if num(k) else "-"
    steal = num("steal_pct")
    agg.append([system, wait, n, f"{med('handoffs_per_sec')}{spread}", med("acquire_p50_ms"),
                med("acquire_p99_ms"), f"{median(cpu):.0f}" if cpu else "",
                f"{min(num('min_per_contender'))}..{max(num('max_per_contender'))}",
                sum(num("violations")) if not errors else f"{sum(num('violations'))} (errors: {errors})",
                rs[0]["fencing_token"], med("generator_busy_pct", lambda x: f"{x:.0f}"),
                f"{max(steal):.1f}" if steal else "-",
                " / ".join(sorted({r['loadavg'].split()[0] for r in rs if r['loadavg']}))])
table(["system", "wait", "contenders", "hand-offs/s" + (" [rounds]" if params.get("rounds", 1) > 1 else ""),
       "acquire p50 ms", "p99 ms", "server CPU µs/hand-off", "per contender min..max", "violations", "token",
       "generator busy %", "steal %", "load (1 min)"], agg)
if kills:
    print()
    print(f"kill -9 test: a holder takes the lock, the server (the leader of 3) is SIGKILLed and restarted, "
          f"another client tries for {params['kill_wait_secs']} s, then the holder asks the server.")
    table(["system", "killed", "verdict", "holder still holds", "other client got it", "holder told", "token"],
          [[k["label"], k.get("killed", ""), k.get("verdict", k.get("error", "")), "yes" if k.get("holder_still_holds") else "no",
            (f"yes, {k['other_acquired_after_ms']} ms after the restart" if k.get("other_acquired") else "no"),
            "yes" if k.get("holder_told_of_loss") else "no", TOKEN[k["system"]]] for k in kills.values()])

# Targets (issue 43): paddock >= 3x etcd's hand-offs (like with like: 1 and 3 members), paddock
# standalone >= Redis with appendfsync always (both waits).
rate = {(a[0], a[1], a[2]): float(a[3].split()[0]) for a in agg}
targets = []
for n in sorted({r["contenders"] for r in rows}):
    for mine, theirs, wait, want in [("paddock-1", "etcd-1", "watch", 3.0), ("paddock-3", "etcd-3", "watch", 3.0),
                                     ("paddock-1", "redis-always", "sleep", 1.0),
                                     ("paddock-1", "redis-always", "tight", 1.0)]:
        a, b = rate.get((mine, "watch", n)), rate.get((theirs, wait, n))
        if a is None or b is None:
            continue
        ratio = a / b if b else float("inf")
        label = theirs if theirs.startswith("etcd") else f"{theirs} ({wait})"
        targets.append([n, f"{mine} / {label}", a, b, f"{ratio:.2f}", f">= {want:g}", "yes" if ratio >= want else "NO"])
if targets:
    print()
    table(["contenders", "hand-offs/s", "paddock", "other", "ratio", "target", "met?"], targets)
