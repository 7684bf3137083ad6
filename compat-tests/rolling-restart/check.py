"""A rolling restart from 3 members to 5 through kazoo 2.11 (run.sh drives the members).

  check.py write DIR     writes /rr/w-<n> one at a time through a client of members 1-3 until DIR/stop
                         exists; appends each acknowledged name to DIR/acked, counts failures in DIR/failed
  check.py progress DIR  waits (30 s at most) until a write is acknowledged after this call; prints ok/FAIL
  check.py verify DIR    every member (ZK_HOSTS, five) serves after a sync the same /rr children, holding
                         every acknowledged write; the leader's mntr counts 4 synced followers

Prints `ok <name>` or `FAIL <name>: <why>`; exits 1 if any failed."""
import os
import socket
import sys
import time

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

hosts = os.environ["ZK_HOSTS"].split(",")
failed = 0


def check(name, ok, why=""):
    global failed
    print(f"ok {name}" if ok else f"FAIL {name}: {why}")
    failed += 0 if ok else 1


def four_letter(host, word):
    h, p = host.rsplit(":", 1)
    with socket.create_connection((h, int(p)), timeout=10) as s:
        s.sendall(word.encode())
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out.decode()


def acked(d):
    try:
        return open(os.path.join(d, "acked")).read().split()
    except FileNotFoundError:
        return []


mode = sys.argv[1]
if mode == "write":
    d = sys.argv[2]
    zk = KazooClient(hosts=",".join(hosts[:3]), timeout=10, connection_retry=KazooRetry(max_tries=-1))
    zk.start(timeout=60)
    zk.ensure_path("/rr")
    n = 0
    with open(os.path.join(d, "acked"), "a") as out:
        while not os.path.exists(os.path.join(d, "stop")):
            name = f"w-{n:06d}"
            try:
                zk.create(f"/rr/{name}", b"x")
                out.write(name + "\n")
                out.flush()
                n += 1
            except Exception as e:  # the outcome is unknown: the name is not reused
                n += 1
                with open(os.path.join(d, "failed"), "a") as f:
                    f.write(f"{name} {type(e).__name__}\n")
                time.sleep(0.2)
            time.sleep(0.02)
    zk.stop()
elif mode == "progress":
    d, step = sys.argv[2], sys.argv[3]
    before = len(acked(d))
    deadline = time.monotonic() + 30
    while len(acked(d)) <= before and time.monotonic() < deadline:
        time.sleep(0.1)
    check(f"writes acknowledged after {step}", len(acked(d)) > before, f"{before} acknowledged, none since")
elif mode == "verify":
    d = sys.argv[2]
    want = set(acked(d))
    seen = []
    for i, h in enumerate(hosts):
        zk = KazooClient(hosts=h, timeout=10)
        zk.start(timeout=60)
        zk.sync("/rr")
        children = set(zk.get_children("/rr"))
        zk.stop()
        seen.append(children)
        missing = want - children
        check(f"member{i + 1}: holds every acknowledged write ({len(want)})", not missing, sorted(missing)[:5])
    check("all five members serve the same /rr", all(s == seen[0] for s in seen), [len(s) for s in seen])
    # The four others follow the leader as voters (mntr's zk_synced_followers counts voting followers).
    deadline = time.monotonic() + 30
    synced = None
    while time.monotonic() < deadline:
        leaders = [h for h in hosts if "Mode: leader" in four_letter(h, "srvr")]
        if leaders:
            mntr = dict(l.split("\t", 1) for l in four_letter(leaders[0], "mntr").splitlines() if "\t" in l)
            synced = mntr.get("zk_synced_followers")
            if synced == "4":
                break
        time.sleep(0.5)
    check("the leader counts 4 synced voting followers", synced == "4", f"zk_synced_followers={synced}")
    try:
        fails = open(os.path.join(d, "failed")).read().splitlines()
    except FileNotFoundError:
        fails = []
    print(f"  acknowledged writes: {len(want)}, failed or unknown: {len(fails)}")
sys.exit(1 if failed else 0)
