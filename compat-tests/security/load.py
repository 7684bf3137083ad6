"""The rolling upgrade's load and its judge.

    load.py run --connect H:P,H:P,H:P --out RESULT.json --stop-file F [--writers 8]
        Starts WRITERS threads, each with its own kazoo session on the whole connect string, each creating
        /roll/w<i>-<n> for n = 0, 1, 2, ... in order and recording n when the create was acknowledged (an
        error leaves n unknown: it may or may not have been applied, and is not retried). Beside them one
        thread sends `srvr` to every member every 50 ms and records each interval in which no member said
        "Mode: leader", and the leaders in turn. Runs until F exists, then writes RESULT.json. With
        --writers 0 it only watches the leader (the rotation's check that no leader change happened).
    load.py verify --members H:P,H:P,H:P --result RESULT.json --max-gap-ms MS
        Through each member alone: sync /roll, list its children. Every acknowledged create must be there
        on every member, and the longest interval without a leader must be at most MS. Prints the numbers;
        exit 0 if both hold.
"""

import argparse
import json
import logging
import os
import socket
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError

logging.basicConfig(level=logging.CRITICAL)


def srvr_mode(hp):
    host, port = hp.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=0.3) as s:
            s.settimeout(0.3)
            s.sendall(b"srvr")
            buf = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                buf += chunk
    except OSError:
        return None
    for line in buf.decode(errors="replace").splitlines():
        if line.startswith("Mode: "):
            return line[6:].strip()
    return None


def writer(i, connect, stop, acked, errors):
    zk = KazooClient(hosts=connect, timeout=10, command_retry={"max_tries": 0},
                     connection_retry={"max_tries": -1, "delay": 0.1, "max_delay": 1})
    zk.start(timeout=30)
    n = 0
    while not stop.is_set():
        try:
            zk.create(f"/roll/w{i}-{n:07d}", b"x" * 16)
            acked.append(n)
        except NodeExistsError:
            errors.append(f"w{i}-{n:07d} existed before its only create")
        except Exception as e:  # ConnectionLoss, SessionExpired...: outcome unknown
            errors.append(type(e).__name__)
            time.sleep(0.1)
        n += 1
        time.sleep(0.02)
    zk.stop()
    zk.close()


def poller(members, stop, gaps, leaders):
    start_no_leader = None
    last = None
    while not stop.is_set():
        t = time.monotonic()
        modes = {hp: srvr_mode(hp) for hp in members}
        now_leader = [hp for hp, m in modes.items() if m == "leader"]
        if now_leader:
            if start_no_leader is not None:
                gaps.append(round((t - start_no_leader) * 1000))
                start_no_leader = None
            if now_leader[0] != last:
                leaders.append(now_leader[0])
                last = now_leader[0]
        elif start_no_leader is None:
            start_no_leader = t
        time.sleep(max(0.0, 0.05 - (time.monotonic() - t)))
    if start_no_leader is not None:
        gaps.append(round((time.monotonic() - start_no_leader) * 1000))


def cmd_run(args):
    members = args.connect.split(",")
    if args.writers:
        zk = KazooClient(hosts=args.connect, timeout=10)
        zk.start(timeout=30)
        zk.ensure_path("/roll")
        zk.stop()
        zk.close()
    stop = threading.Event()
    acked = [[] for _ in range(args.writers)]
    errors = [[] for _ in range(args.writers)]
    gaps, leaders = [], []
    threads = [threading.Thread(target=writer, args=(i, args.connect, stop, acked[i], errors[i]), daemon=True)
               for i in range(args.writers)]
    threads.append(threading.Thread(target=poller, args=(members, stop, gaps, leaders), daemon=True))
    for t in threads:
        t.start()
    while not os.path.exists(args.stop_file):
        time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join(timeout=30)
    with open(args.out, "w") as f:
        json.dump({"acked": acked, "errors": errors, "gaps_ms": gaps, "leaders": leaders}, f)
    return 0


def cmd_verify(args):
    with open(args.result) as f:
        r = json.load(f)
    expected = {f"w{i}-{n:07d}" for i, ns in enumerate(r["acked"]) for n in ns}
    n_errors = sum(len(e) for e in r["errors"])
    print(f"  {len(expected)} creates acknowledged, {n_errors} with an unknown outcome; "
          f"leaders seen in turn: {' '.join(r['leaders'])}")
    ok = len(expected) >= 100 and all(len(ns) > 0 for ns in r["acked"])
    if not ok:
        print("  too few acknowledged creates for the check to mean anything (want >= 100, from every writer)")
    # The judge's own positive control: a name that was never created must be reported missing.
    never = "w0-9999999"
    for hp in args.members.split(","):
        zk = KazooClient(hosts=hp, timeout=10)
        try:
            zk.start(timeout=15)
            zk.sync("/roll")
            present = set(zk.get_children("/roll"))
        except Exception as e:
            print(f"  {hp}: cannot list /roll: {type(e).__name__}: {e}")
            ok = False
            continue
        finally:
            zk.stop()
            zk.close()
        missing = sorted((expected | {never}) - present)
        if never in missing:
            missing.remove(never)
        else:
            print("  the judge cannot see a missing node: its own check is broken")
            ok = False
        print(f"  {hp}: {len(present)} nodes under /roll, {len(missing)} acknowledged creates missing"
              + (f" (first: {', '.join(missing[:5])})" if missing else ""))
        ok = ok and not missing
    longest = max(r["gaps_ms"], default=0)
    print(f"  intervals without a leader (ms): {r['gaps_ms']}; longest {longest}, allowed {args.max_gap_ms}")
    return 0 if ok and longest <= args.max_gap_ms else 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=["run", "verify"])
    p.add_argument("--connect")
    p.add_argument("--members")
    p.add_argument("--out")
    p.add_argument("--result")
    p.add_argument("--stop-file")
    p.add_argument("--writers", type=int, default=8)
    p.add_argument("--max-gap-ms", type=int)
    args = p.parse_args()
    return cmd_run(args) if args.cmd == "run" else cmd_verify(args)


if __name__ == "__main__":
    sys.exit(main())
