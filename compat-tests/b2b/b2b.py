"""Back-to-back runs: the same seeded operation sequences against Apache ZooKeeper 3.9 and paddock.

Each sequence runs in its own fresh namespace (a new persistent base node `/b2b-<run>-<trial>`) with
fresh sessions on both servers, so a sequence (or a shrink candidate) starts from identical state
without restarting either server: everything compared is relative to the base node (sequence
counters start at 0 under it, session ids are mapped to slot names, zxids and times are dropped).

Per op: resolve its dynamic parts against ZooKeeper's state (see `resolve`), run it on ZooKeeper,
then on paddock with the same session slot, then do a sync round trip on every live session of both
servers so that every notification triggered by the op has arrived (a server sends a notification
before any later reply on that connection), and compare (normalised result, events per slot).

Normalisations, each one a documented, intended difference or a value that cannot be compared:
  CHILD_ORDER      child lists (getChildren, getChildren2, multiRead getChildren) and getEphemerals
                   lists are sorted: ZooKeeper keeps them in hash sets (order undefined), paddock sorts.
  AUTH_ID_ORDER    whoAmI lists are sorted: ZooKeeper 3.9 keeps a connection's auth ids in a set
                   backed by a ConcurrentHashMap (order undefined).
  AUTH_ACL_ORDER   a getACL list holding two or more digest or sasl ids is sorted: only the `auth`
                   scheme expansion makes such lists here, and ZooKeeper expands it in the order of
                   that same hash set (it answered [u2, u3] where paddock keeps the order of addAuth,
                   and [digest u1, sasl u1] where paddock had the SASL login first).
  RACY_CLOSE       after a bad opcode or a failed auth, whether the connection is closed before the
                   next request is answered is not compared (ZooKeeper answered the next request
                   in one run and not in others); the slot reconnects its session either way.
  ZXIDS_AND_TIMES  czxid/mzxid/pzxid/ctime/mtime are dropped; only the relations mzxid==czxid and
                   pzxid==czxid are kept (they are structural: "never set", "no child change").
  SESSION_IDS      ephemeralOwner and nothing else carries a session id; it is mapped to the slot
                   name `s<slot>.<generation>` (0 stays 0).
  EPHEMERAL_CLEANUP_ORDER  the events a session close fires are compared as a multiset per session:
                   ZooKeeper deletes the session's ephemerals in HashSet order (undefined).
  BASE_PREFIX      paths in replies and events are shown relative to the sequence's base node (and
                   to /zookeeper/quota<base>, as "Q:<path>", in the sequence's quota subtree).
Never generated (see README.md): QUOTA_PIPELINE (a later pipelined write under a hard quota limit: its
check races ZooKeeper's commit of the earlier one) and ZK_CRASH_NEGATIVE_TTL.
Nothing else is normalised: sequence suffixes, versions, cversion, ACL lists (in order), error
codes, per-op multi results and the exact order of events per session are compared as they are.
"""

import argparse
import concurrent.futures
import itertools
import threading
import json
import random
import re
import sys
import time

import zkwire as zw

SLOTS = 3
# Authentication each slot's session carries from the start (re-applied when the slot reopens or
# reconnects): (scheme, credential). "sasl" is a DIGEST-MD5 login (opcode 102) as a user of the JAAS
# Server section both servers get from run.sh (u1:p1, u2:p2); `--exclude sasl` drops it.
SLOT_AUTH = {0: [("digest", "u1:p1")], 1: [("digest", "u2:p2"), ("sasl", "u2:p2")]}   # slots 2+: none
ADMIN_SUPER = "super:adminpw"   # ZooKeeper is started with this super digest; used only by resolve()

NAMES = ["a", "b", "c"]
STATIC_PATHS = ["/"] + [f"/{x}" for x in NAMES] + [f"/{x}/{y}" for x in NAMES[:2] for y in NAMES] + \
    [f"/{x}/{y}/{z}" for x in NAMES[:1] for y in NAMES[:2] for z in NAMES[:2]]
# Malformed paths (docs/protocol.md §5.3): writes must refuse them (BadArguments), reads simply do not
# find them (NoNode). A leading "!" means "send as is, not under the base node". The empty path is
# left out: ZooKeeper reads it as the root (a known mismatch, see README.md), and the real root is
# shared by all concurrent sequences, so its contents cannot be compared.
BAD_PATHS = ["/a/", "//a", "/a//b", "/a/./b", "/a/..", "/.", "!a", "/a\u0000b", "/a\u0001", "/a/\u00e9"]
# ZooKeeper's built-in nodes, outside the base node: only reads and deletes (which must fail) touch
# them, since they are shared by every sequence of a run.
# /zookeeper/quota is not read: with quotas on, every concurrent sequence creates its own child there
# (`/zookeeper/quota/<base>`), so its children and stat depend on the interleaving of sequences; the
# sequence's own quota subtree is read instead ({"quota_of": ...} paths). For the same reason
# getAllChildrenNumber does not count /zookeeper.
SPECIAL_PATHS = ["!/zookeeper", "!/zookeeper/quota", "!/zookeeper/config"]
READ_SPECIAL_PATHS = ["!/zookeeper", "!/zookeeper/config"]
COUNT_SPECIAL_PATHS = ["!/zookeeper/config"]
QUOTA_ROOT = "/zookeeper/quota"
QUOTA_NODES = ["zookeeper_limits", "zookeeper_stats", ""]
DIGEST1 = zw.digest_id("u1:p1")
DIGEST2 = zw.digest_id("u2:p2")
ACLS = {
    "open": [(31, "world", "anyone")],
    "read": [(1, "world", "anyone")],
    "rw": [(3, "world", "anyone")],
    "creator": [(31, "auth", "")],
    "u1": [(31, "digest", DIGEST1)],
    "u2+read": [(1, "world", "anyone"), (31, "digest", DIGEST2)],
    "ip-local": [(31, "ip", "127.0.0.1")],
    "ip-other": [(1, "world", "anyone"), (31, "ip", "10.0.0.0/8")],
    "dup": [(31, "world", "anyone"), (31, "world", "anyone")],
    "bad-world": [(31, "world", "someone")],
    "bad-digest": [(31, "digest", "nocolon")],
    "empty": [],
    # sasl ids (valid only as Kerberos principals: name[/host][@realm])
    "sasl-u2": [(31, "sasl", "u2")],
    "sasl-u1+read": [(1, "world", "anyone"), (31, "sasl", "u1")],
    "sasl-host": [(1, "world", "anyone"), (31, "sasl", "u2/host@REALM")],
    "sasl-bad": [(31, "sasl", "u1@A@B")],
}
ACL_WEIGHTS = [("open", 60), ("read", 2), ("rw", 2), ("creator", 3), ("u1", 3), ("u2+read", 3),
               ("ip-local", 2), ("ip-other", 2), ("dup", 1), ("bad-world", 1), ("bad-digest", 1),
               ("empty", 1), ("sasl-u2", 2), ("sasl-u1+read", 2), ("sasl-host", 0.5), ("sasl-bad", 0.5)]
SASL_ACLS = {k for k in ACLS if k.startswith("sasl-")}
# SASL logins a slot may try mid-session: right and wrong passwords, a user the JAAS section lacks.
SASL_CREDS = [("u1:p1", 4), ("u2:p2", 3), ("u1:wrong", 1), ("u3:p3", 1)]
# Quota limits as zkCli's setquota writes them (-n, -b soft; -N, -B hard), small enough that a sequence
# runs into them.
QUOTA_VALUES = {"count": [1, 3, 10], "bytes": [0, 20, 1000], "countHardLimit": [1, 2, 4, 8],
                "byteHardLimit": [0, 10, 60, 200_000]}


def stats_track(text):
    """ZooKeeper's StatsTrack parse: `k=v` pairs split on runs of `,` and `;`; an empty value is -1."""
    out = {}
    for pair in [x for x in re.split("[,;]+", text) if x]:
        kv = pair.split("=")
        while len(kv) > 1 and kv[-1] == "":
            kv.pop()          # Java's split drops trailing empty strings ("bytes=-1=")
        out[kv[0]] = int(kv[1]) if len(kv) > 1 and kv[1] else -1
    return out


def stats_text(d):
    """StatsTrack.toString: count and bytes first, then `=` and `;key=value` for the rest, sorted."""
    rest = sorted(k for k in d if k not in ("count", "bytes"))
    out = f"count={d.get('count', -1)},bytes={d.get('bytes', -1)}"
    if rest:
        out += "=" + "".join(f";{k}={d[k]}" for k in rest)
    return out
DATA = ["", "x", "hello", "0123456789" * 3, None]
# Large values, drawn for 2% of the data: {"big": n} stands for n bytes (enc_data), so that a printed or
# saved sequence stays short. 1,000,000 is just under jute.maxbuffer's default (1 MiB - 1) with the
# request's other fields.
BIG_DATA = [{"big": 100_000}, {"big": 1_000_000}]


def wchoice(rng, pairs):
    total = sum(w for _, w in pairs)
    x = rng.uniform(0, total)
    for v, w in pairs:
        x -= w
        if x <= 0:
            return v
    return pairs[-1][0]


# ---- generation -------------------------------------------------------------------------------

class Generator:
    """Ops are plain JSON values so that a sequence can be printed and replayed as it is."""

    READ_KINDS = {"getData", "exists", "getChildren", "getChildren2"}
    OP_WEIGHTS = [("create", 22), ("delete", 10), ("setData", 9), ("getData", 6), ("exists", 6),
                  ("getChildren", 4), ("getChildren2", 4), ("getACL", 3), ("setACL", 4), ("multi", 8),
                  ("multiRead", 2), ("sync", 1), ("close", 1.5), ("addWatch", 3), ("removeWatches", 2),
                  ("checkWatches", 1), ("addAuth", 1), ("getEphemerals", 1), ("getAllChildrenNumber", 1),
                  ("reconnect", 2), ("whoAmI", 0.5), ("badOpcode", 0.3), ("pipeline", 2),
                  ("setQuota", 1.2), ("delQuota", 0.4), ("saslLogin", 0.6)]
    # What a pipeline holds: requests a client sends back to back on one connection, without waiting.
    PIPE_WEIGHTS = [("create", 4), ("setData", 3), ("delete", 2), ("getData", 2), ("exists", 2)]

    def __init__(self, seed, exclude=()):
        self.rng = random.Random(seed)
        self.exclude = set(exclude)
        # feature switches (also given through --exclude) that keep a known mismatch out of the way;
        # "quota" and "sasl" drop those features whole (ops, paths, ACLs)
        dropped = set(exclude) | ({"setQuota", "delQuota"} if "quota" in self.exclude else set()) \
            | ({"saslLogin"} if "sasl" in self.exclude else set())
        self.weights = [(k, w) for k, w in self.OP_WEIGHTS if k not in dropped]
        self.acl_weights = [(k, w) for k, w in ACL_WEIGHTS
                            if not ("sasl" in self.exclude and k in SASL_ACLS)]
        self.quota = "quota" not in self.exclude

    def path(self, allow_root=True):
        r = self.rng
        x = r.random()
        if x < 0.025:
            return r.choice(BAD_PATHS)
        if x < 0.3:
            return {"existing": r.randrange(64)}
        if x < 0.45:
            parent = r.choice(STATIC_PATHS[:6])
            return {"child_of": parent, "k": r.randrange(4)}
        p = r.choice(STATIC_PATHS)
        if p == "/" and not allow_root:
            p = "/a"
        return p

    def plain_path(self, allow_root=True):
        """A path under the base that is not malformed."""
        while True:
            p = self.path(allow_root)
            if p not in BAD_PATHS:
                return p

    def special_path(self, kinds):
        """One of ZooKeeper's own nodes (`kinds`), or a node of this sequence's quota subtree."""
        r = self.rng
        if self.quota and (r.random() < 0.6 or not kinds):
            return {"quota_of": self.plain_path(), "node": r.choice(QUOTA_NODES)}
        return r.choice(kinds) if kinds else self.plain_path()

    def data(self):
        r = self.rng
        if r.random() < 0.02:
            return r.choice(BIG_DATA)
        return r.choice(DATA)

    def pipe_op(self):
        """One request of a pipeline: the same shapes as on their own."""
        r = self.rng
        k = wchoice(r, self.PIPE_WEIGHTS)
        if k == "create":
            return {"op": "create", **self.create_args()}
        if k == "setData":
            return {"op": "setData", "path": self.path(), "data": self.data(), "version": self.version()}
        if k == "delete":
            return {"op": "delete", "path": self.path(False), "version": self.version()}
        return {"op": k, "path": self.path(), "watch": r.random() < 0.5}

    def version(self):
        return wchoice(self.rng, [("cur", 5), (-1, 3), ("cur+1", 2), (0, 1), (7, 1)])

    def create_args(self):
        r = self.rng
        mode = wchoice(r, [(0, 12), (1, 3), (2, 2), (3, 2), (4, 3), (5, 2), (6, 1), (7, 0.2)])
        if r.random() < 0.08:
            # an opcode that does not go with the mode: each server's validation is compared
            opcode = r.choice([zw.OP_CREATE, zw.OP_CREATE2, zw.OP_CREATE_CONTAINER, zw.OP_CREATE_TTL])
        elif mode in (5, 6):
            opcode = zw.OP_CREATE_TTL
        elif mode == 4:
            opcode = zw.OP_CREATE_CONTAINER
        else:
            opcode = r.choice([zw.OP_CREATE, zw.OP_CREATE2])
        ttl = None
        if opcode == zw.OP_CREATE_TTL:
            # TTLs are long enough that no TTL node ever expires during a run: expiry is timer driven
            # and cannot be compared in lockstep.
            ttl = wchoice(r, [(3_600_000, 9), (0, 0.5), (-5, 0.5)])
            if mode not in (5, 6) and ttl < 0:
                # ZK_CRASH_NEGATIVE_TTL: ZooKeeper 3.9.5 accepts createTTL (opcode 21) with a non-TTL
                # mode and a negative ttl, then throws applying the CreateTTLTxn and exits ("Severe
                # unrecoverable error", and the txn log replay fails the same way on restart). That
                # cannot be compared, so the generator never sends it; see README.md.
                ttl = 0
        p = self.path(allow_root=False)
        if mode in (2, 3) and isinstance(p, str) and r.random() < 0.3:
            p = p + "/"  # trailing slash: the sequence suffix makes the name
        return {"path": p, "data": self.data(), "acl": wchoice(r, self.acl_weights), "mode": mode,
                "opcode": opcode, "ttl": ttl}

    def sub_op(self):
        r = self.rng
        k = wchoice(r, [("create", 4), ("delete", 2), ("setData", 2), ("check", 3)])
        if k == "create":
            args = self.create_args()
            if "multi-bad-flags" in self.exclude and args["mode"] == 7:
                args["mode"] = 0
            if "multi-bad-flags" in self.exclude and args["mode"] in (5, 6) \
                    and args["opcode"] != zw.OP_CREATE_TTL:
                args["opcode"], args["ttl"] = zw.OP_CREATE_TTL, 3_600_000
            if self.exclude & {"multi-opcode-from-mode", "multi-ttl-opcode-plain-mode"}:
                # inside multi ZooKeeper takes the sub-op type from the mode, not the opcode
                if args["opcode"] == zw.OP_CREATE_TTL and args["mode"] not in (5, 6):
                    args["opcode"] = zw.OP_CREATE2
                if args["mode"] == 4:
                    args["opcode"] = zw.OP_CREATE_CONTAINER
            return {"op": "create", **args}
        if k == "delete":
            return {"op": "delete", "path": self.path(False), "version": self.version()}
        if k == "setData":
            return {"op": "setData", "path": self.path(), "data": self.data(), "version": self.version()}
        return {"op": "check", "path": self.path(), "version": self.version()}

    def next(self, nested=False):
        r = self.rng
        kind = wchoice(r, self.weights)
        while nested and kind in ("reconnect", "close", "badOpcode"):
            kind = wchoice(r, self.weights)
        op = {"op": kind, "s": r.randrange(SLOTS)}
        if kind == "create":
            op.update(self.create_args())
        elif kind == "delete":
            op.update(path=self.path(False), version=self.version())
            if r.random() < 0.03:
                op.update(path=self.special_path(SPECIAL_PATHS))
        elif kind == "setData":
            op.update(path=self.path(), data=self.data(), version=self.version())
        elif kind in ("getData", "exists", "getChildren", "getChildren2"):
            op.update(path=self.path(), watch=r.random() < 0.7)
            if r.random() < 0.05:
                op.update(path=self.special_path(READ_SPECIAL_PATHS))
                if isinstance(op["path"], str):
                    op["watch"] = False
        elif kind in ("getACL", "sync", "getAllChildrenNumber"):
            op.update(path=self.path())
            if r.random() < 0.05:
                op.update(path=self.special_path(COUNT_SPECIAL_PATHS if kind == "getAllChildrenNumber"
                                                 else READ_SPECIAL_PATHS))
        elif kind == "setACL":
            op.update(path=self.path(), acl=wchoice(r, self.acl_weights), version=self.version())
        elif kind == "multi":
            op["ops"] = [self.sub_op() for _ in range(r.randint(1, 4))]
        elif kind == "pipeline":
            op["ops"] = [self.pipe_op() for _ in range(r.randint(2, 5))]
        elif kind == "multiRead":
            op["ops"] = [{"op": r.choice(["getData", "getChildren"]), "path": self.path()}
                         for _ in range(r.randint(1, 3))]
        elif kind == "addWatch":
            op.update(path=self.path(), mode=r.choice([0, 1]))
        elif kind in ("removeWatches", "checkWatches"):
            op.update(path=self.path(), type=r.choice([1, 2, 3, 4, 5]))
        elif kind == "addAuth":
            op.update(cred=r.choice(["u1:p1", "u2:p2", "u3:p3"]))
            x = r.random()
            if x < 0.15:
                op["scheme"] = "ip"      # adds the connection's own address again
            elif x < 0.25:
                op["scheme"] = "nosuchscheme"   # AuthFailed, then the server closes the connection
            elif x < 0.3 and "sasl" not in self.exclude:
                op["scheme"] = "sasl"    # an auth packet cannot log in to SASL: AuthFailed and a close
        elif kind == "badOpcode":
            # top-level check (13), notification (0) or an unknown number: Unimplemented, then the
            # server closes the connection; the slot then reconnects to its session
            op.update(opcode=r.choice([13, 0, 99, 1000]), path=self.path())
        elif kind == "reconnect":
            # ops the other slots run while this slot's connection is down
            meanwhile = []
            for _ in range(r.randint(0, 3)):
                m = self.next(nested=True)
                m["s"] = (op["s"] + 1 + r.randrange(SLOTS - 1)) % SLOTS
                meanwhile.append(m)
            op["meanwhile"] = meanwhile
        elif kind == "getEphemerals":
            op.update(prefix=r.choice(["", "/a", "/b/"]))
        elif kind == "setQuota":
            # zkCli's `setquota [-n N] [-b B] [-N N] [-B B] path`: one to three of the four limits
            keys = r.sample(sorted(QUOTA_VALUES), r.choice([1, 1, 2, 3]))
            op.update(path=self.plain_path() if r.random() < 0.85 else "/",
                      limits={k: r.choice(QUOTA_VALUES[k]) for k in sorted(keys)})
        elif kind == "delQuota":
            # zkCli's `delquota [-n|-b|-N|-B] path`: clear some limits, or (no flag) remove the quota
            # mostly a path that has a quota (resolved against ZooKeeper's quota subtree)
            op.update(path={"quota_root": r.randrange(8)} if r.random() < 0.8 else self.plain_path(),
                      fields=None if r.random() < 0.5 else sorted(r.sample(sorted(QUOTA_VALUES), r.randint(1, 2))))
        elif kind == "saslLogin":
            op.update(cred=wchoice(r, SASL_CREDS))
        return op


def generate(seed, n, exclude=()):
    g = Generator(seed, exclude)
    return [g.next() for _ in range(n)]


# ---- execution --------------------------------------------------------------------------------

def enc_data(d):
    if isinstance(d, dict):
        return (b"0123456789abcdef" * (d["big"] // 16 + 1))[:d["big"]]
    return None if d is None else d.encode()


class Server:
    """One server's side of a trial: SLOTS sessions plus the bookkeeping to normalise replies."""

    def __init__(self, name, host, port, base):
        self.name, self.host, self.port, self.base = name, host, port, base
        self.sessions = [None] * SLOTS
        self.gen = [0] * SLOTS
        self.owners = {0: 0}
        self.events = [[] for _ in range(SLOTS)]
        # what a client library would remember per connection, to restore after a reconnect
        self.watches = [None] * SLOTS
        self.auths = [None] * SLOTS

    def open_slot(self, slot):
        s = zw.Session(self.host, self.port)
        self.auths[slot] = list(SLOT_AUTH.get(slot, []))
        self.watches[slot] = {k: set() for k in ("data", "exist", "child", "persistent", "recursive")}
        self.sessions[slot] = s
        for scheme, cred in SLOT_AUTH.get(slot, []):
            err = s.auth(scheme, cred) if scheme == "digest" else s.sasl(*cred.split(":", 1))
            if err != 0:
                raise RuntimeError(f"{self.name}: slot {slot} cannot log in as {scheme} {cred}: {err} "
                                   "(SASL needs run.sh's JAAS file; --exclude sasl without it)")
        self.owners[s.session_id] = f"s{slot}.{self.gen[slot]}"
        self.gen[slot] += 1

    def abs(self, p):
        if p.startswith("!"):
            return p[1:]
        return self.base if p == "/" else self.base + p

    def rel(self, p):
        if p is None:
            return None
        if p == self.base:
            return "/"
        if p.startswith(self.base + "/"):
            return p[len(self.base):]
        q = QUOTA_ROOT + self.base
        if p == q or p.startswith(q + "/"):
            return "Q:" + (p[len(q):] or "/")      # BASE_PREFIX, in the sequence's quota subtree
        return "OUTSIDE:" + p

    def stat(self, st):
        if st is None:
            return None
        return {"version": st["version"], "cversion": st["cversion"], "aversion": st["aversion"],
                "owner": self.owners.get(st["ephemeralOwner"], f"?{st['ephemeralOwner']:#x}"),
                "dataLength": st["dataLength"], "numChildren": st["numChildren"],
                "m==c": st["mzxid"] == st["czxid"], "p==c": st["pzxid"] == st["czxid"]}

    def track(self, slot, op, err):
        """Client-side watch bookkeeping (as the Java client's ZKWatchManager keeps it)."""
        w = self.watches[slot]
        k = op["op"]
        p = self.abs(op["path"]) if "path" in op else None
        if k == "getData" and op["watch"] and err == 0:
            w["data"].add(p)
        elif k == "exists" and op["watch"] and err in (0, -101):
            w["data" if err == 0 else "exist"].add(p)
        elif k in ("getChildren", "getChildren2") and op["watch"] and err == 0:
            w["child"].add(p)
        elif k == "addWatch" and err == 0:
            w["persistent" if op["mode"] == 0 else "recursive"].add(p)
        elif k == "removeWatches" and err == 0:
            kinds = {1: ["child"], 2: ["data", "exist"], 3: list(w), 4: ["persistent"], 5: ["recursive"]}
            for x in kinds[op["type"]]:
                w[x].discard(p)
        elif k == "addAuth" and err == 0:
            self.auths[slot].append(("digest", op["cred"]))
        elif k == "saslLogin" and err == 0:
            self.auths[slot].append(("sasl", op["cred"]))

    def collect_events(self, slot):
        s = self.sessions[slot]
        if s is not None and s.events:
            w = self.watches[slot]
            for t, _st, p in s.events:
                if t in (1, 2, 3):
                    w["data"].discard(p)
                    w["exist"].discard(p)
                if t in (2, 4):
                    w["child"].discard(p)
            self.events[slot].extend((t, st, self.rel(p)) for t, st, p in s.events)
            s.events.clear()

    def drain(self):
        """A sync round trip on every live session: afterwards all notifications are in."""
        tickets = []
        for i, s in enumerate(self.sessions):
            if s is not None and not s.closed:
                try:
                    tickets.append((i, s, s.send(zw.OP_SYNC, zw.w_str(self.base))))
                except zw.ConnectionClosed:
                    self.events[i].append(("connection-closed",))
        for i, s, t in tickets:
            try:
                s.wait(t)
            except zw.ConnectionClosed:
                self.events[i].append(("connection-closed",))
        for i in range(SLOTS):
            self.collect_events(i)
        out = self.events
        self.events = [[] for _ in range(SLOTS)]
        return out

    def close_all(self):
        for s in self.sessions:
            if s is not None and not s.closed:
                s.close_session()

    # one op -> normalised result
    def run(self, op):
        slot = op.get("s", 0)
        s = self.sessions[slot]
        try:
            return self._run(op, slot, s)
        except zw.ConnectionClosed as e:
            return ["connection-closed", str(e)]

    def _run(self, op, slot, s):
        k = op["op"]
        if k == "close":
            self.collect_events(slot)
            err = s.close_session()
            self.open_slot(slot)
            return ["closed", err]
        if k == "addAuth":
            scheme = op.get("scheme", "digest")
            try:
                err = s.auth(scheme, op["cred"])
            except zw.ConnectionClosed:
                err = "no reply"
            if scheme == "digest":
                self.track(slot, op, err)
            if err != 0:
                self.collect_events(slot)   # RACY_CLOSE, as for badOpcode
                return ["auth", err, self.restore(slot, s)]
            try:
                s.wait(s.send(zw.OP_EXISTS, zw.w_str(self.base) + zw.w_bool(False)))
                return ["auth", err, "connection still open"]
            except zw.ConnectionClosed:
                self.collect_events(slot)
                return ["auth", err, "connection closed", self.restore(slot, s)]
        if k == "badOpcode":
            body = zw.w_str(self.abs(op["path"])) + zw.w_int(0)
            try:
                err, _ = s.call(op["opcode"], body)
            except zw.ConnectionClosed:
                err = "no reply"
            # RACY_CLOSE: whether a request sent right after this one is still answered depends on
            # timing in ZooKeeper (seen both ways), so the close itself is not compared; the slot
            # reconnects its session in any case.
            self.collect_events(slot)
            return ["badOpcode", err, self.restore(slot, s)]
        if k == "pipeline":
            return self._run_pipeline(op, slot, s)
        if k == "saslLogin":
            try:
                err = s.sasl(*op["cred"].split(":", 1))
            except zw.ConnectionClosed:
                err = "no reply"
            self.track(slot, op, err)
            if err == 0:
                return ["sasl", 0]
            # AuthFailed, then the server closes the connection (RACY_CLOSE, as for addAuth)
            self.collect_events(slot)
            return ["sasl", err, self.restore(slot, s)]
        if k == "setQuota":
            return ["setQuota"] + self.set_quota(s, self.abs(op["path"]), op["limits"])
        if k == "delQuota":
            return ["delQuota"] + self.del_quota(s, self.abs(op["path"]), op["fields"])
        if k == "reconnect":
            self.collect_events(slot)
            s.drop()
            meanwhile = [self.run(m) for m in op["meanwhile"]]
            return ["reconnected", meanwhile, self.restore(slot, s)]
        return self._run_plain(op, slot, s)

    def _run_pipeline(self, op, slot, s):
        """Every request written before any reply is read; the replies, in order, are the result
        (a server must answer a connection's requests in the order they came)."""
        sent = []
        for sub in op["ops"]:
            opcode, rec = self.encode(sub)
            sent.append((sub, opcode, s.send(opcode, rec)))
        out = []
        for sub, opcode, ticket in sent:
            err, res = s.wait(ticket)
            self.track(slot, sub, err)
            out.append(["err", err] if err else ["ok", self.norm(opcode, res)])
        return ["pipeline", out]

    def restore(self, slot, s):
        """Reconnects the slot's session as a client library would: same session id and password,
        auth again, and a setWatches2 with the watches it still holds. Returns setWatches2's err."""
        s.reconnect()
        for scheme, cred in self.auths[slot]:
            if scheme == "digest":
                s.auth(scheme, cred)
            else:
                s.sasl(*cred.split(":", 1))
        w = self.watches[slot]
        lists = [sorted(w[x]) for x in ("data", "exist", "child", "persistent", "recursive")]
        return s.set_watches2(*lists) if any(lists) else "none"

    # ---- quotas as zkCli's setquota / delquota make them (SetQuotaCommand.createQuota, DelQuotaCommand):
    # plain reads and writes of /zookeeper/quota/<path>/{zookeeper_limits,zookeeper_stats} on the slot's
    # session; the result is each step's error, then the limits and stats nodes' contents.

    @staticmethod
    def _kids(s, p):
        err, kids = s.call(zw.OP_GETCHILDREN, zw.w_str(p) + zw.w_bool(False))
        return err, kids or []

    @staticmethod
    def _exists(s, p):
        return s.call(zw.OP_EXISTS, zw.w_str(p) + zw.w_bool(False))[0] == 0

    def _quota_contents(self, s, qp):
        out = []
        for node in ("zookeeper_limits", "zookeeper_stats"):
            err, res = s.call(zw.OP_GETDATA, zw.w_str(f"{qp}/{node}") + zw.w_bool(False))
            out.append(["err", err] if err else [None if res[0] is None else res[0].decode("latin-1"),
                                                  self.stat(res[1])])
        return out

    def set_quota(self, s, path, limits):
        err, _ = s.call(zw.OP_EXISTS, zw.w_str(path) + zw.w_bool(False))
        if err:
            return ["does not exist", err]
        qp = QUOTA_ROOT + path
        # a quota on a descendant or an ancestor refuses (checkIfChildQuota, checkIfParentQuota)
        todo = [qp]
        while todo:
            p = todo.pop()
            err, kids = self._kids(s, p)
            if p != qp and "zookeeper_limits" in kids:
                return ["has a child with a quota", self.rel(p[len(QUOTA_ROOT):])]
            todo.extend(f"{p}/{k}" for k in sorted(kids))
        pre = QUOTA_ROOT
        for part in path.split("/")[1:]:
            pre += "/" + part
            err, kids = self._kids(s, pre)
            if err or not kids:
                break
            if pre != qp and "zookeeper_limits" in kids:
                return ["has a parent with a quota", self.rel(pre[len(QUOTA_ROOT):])]
        steps = []
        pre = QUOTA_ROOT
        for part in path.split("/")[1:]:
            pre += "/" + part
            if not self._exists(s, pre):
                steps.append(s.call(zw.OP_CREATE, zw.enc_create(pre, None, ACLS["open"], 0))[0])
        lp, sp = qp + "/zookeeper_limits", qp + "/zookeeper_stats"
        if not self._exists(s, lp):
            steps.append(s.call(zw.OP_CREATE, zw.enc_create(lp, stats_text(limits).encode(), ACLS["open"], 0))[0])
            steps.append(s.call(zw.OP_CREATE, zw.enc_create(sp, b"count=0,bytes=0", ACLS["open"], 0))[0])
        else:
            err, res = s.call(zw.OP_GETDATA, zw.w_str(lp) + zw.w_bool(False))
            cur = stats_track((res[0] or b"").decode()) if not err else {}
            cur.update({k: v for k, v in limits.items() if v > -1})
            steps.append(s.call(zw.OP_SETDATA, zw.w_str(lp) + zw.w_buf(stats_text(cur).encode())
                                + zw.w_int(-1))[0])
        return ["steps", steps] + self._quota_contents(s, qp)

    def del_quota(self, s, path, fields):
        qp = QUOTA_ROOT + path
        lp = qp + "/zookeeper_limits"
        if not self._exists(s, lp):
            return ["no quota"]
        err, res = s.call(zw.OP_GETDATA, zw.w_str(lp) + zw.w_bool(False))
        if err:
            return ["getData", err]
        steps = []
        if fields is None:
            # the quota's nodes, then every quota-tree node left without children up to /zookeeper/quota
            err, kids = self._kids(s, qp)
            for k in sorted(kids):
                steps.append(s.call(zw.OP_DELETE, zw.w_str(f"{qp}/{k}") + zw.w_int(-1))[0])
            p = qp
            while p != QUOTA_ROOT:
                err, kids = self._kids(s, p)
                if err or kids:
                    break
                steps.append(s.call(zw.OP_DELETE, zw.w_str(p) + zw.w_int(-1))[0])
                p = p.rsplit("/", 1)[0]
        else:
            cur = stats_track((res[0] or b"").decode())
            cur.update({k: -1 for k in fields})
            steps.append(s.call(zw.OP_SETDATA, zw.w_str(lp) + zw.w_buf(stats_text(cur).encode())
                                + zw.w_int(-1))[0])
        return ["steps", steps] + self._quota_contents(s, qp)

    def _run_plain(self, op, slot, s):
        k = op["op"]
        if k == "multi" or k == "multiRead":
            body = b""
            for sub in op["ops"]:
                opcode, rec = self.encode(sub)
                body += zw.w_int(opcode) + zw.w_bool(False) + zw.w_int(-1) + rec
            body += zw.w_int(-1) + zw.w_bool(True) + zw.w_int(-1)
            err, res = s.call(zw.OP_MULTI if k == "multi" else zw.OP_MULTI_READ, body)
            if err:
                return ["err", err]
            return ["ok", [self.norm_sub(x) for x in res]]
        opcode, rec = self.encode(op)
        err, res = s.call(opcode, rec)
        self.track(slot, op, err)
        if err:
            return ["err", err]
        return ["ok", self.norm(opcode, res)]

    def encode(self, op):
        k = op["op"]
        p = self.abs(op["path"]) if "path" in op else None
        if k == "create":
            flags, opcode = op["mode"], op["opcode"]
            return opcode, zw.enc_create(p, enc_data(op["data"]), ACLS[op["acl"]], flags,
                                         op["ttl"] if opcode == zw.OP_CREATE_TTL else None)
        if k == "delete":
            return zw.OP_DELETE, zw.w_str(p) + zw.w_int(op["version"])
        if k == "setData":
            return zw.OP_SETDATA, zw.w_str(p) + zw.w_buf(enc_data(op["data"])) + zw.w_int(op["version"])
        if k == "check":
            return zw.OP_CHECK, zw.w_str(p) + zw.w_int(op["version"])
        if k in ("getData", "exists", "getChildren", "getChildren2"):
            opcode = {"getData": zw.OP_GETDATA, "exists": zw.OP_EXISTS, "getChildren": zw.OP_GETCHILDREN,
                      "getChildren2": zw.OP_GETCHILDREN2}[k]
            return opcode, zw.w_str(p) + zw.w_bool(op.get("watch", False))
        if k == "getACL":
            return zw.OP_GETACL, zw.w_str(p)
        if k == "setACL":
            return zw.OP_SETACL, zw.w_str(p) + zw.w_acls(ACLS[op["acl"]]) + zw.w_int(op["version"])
        if k == "sync":
            return zw.OP_SYNC, zw.w_str(p)
        if k == "getAllChildrenNumber":
            return zw.OP_GET_ALL_CHILDREN_NUMBER, zw.w_str(p)
        if k == "addWatch":
            return zw.OP_ADD_WATCH, zw.w_str(p) + zw.w_int(op["mode"])
        if k == "removeWatches":
            return zw.OP_REMOVE_WATCHES, zw.w_str(p) + zw.w_int(op["type"])
        if k == "checkWatches":
            return zw.OP_CHECK_WATCHES, zw.w_str(p) + zw.w_int(op["type"])
        if k == "whoAmI":
            return zw.OP_WHO_AM_I, b""
        if k == "getEphemerals":
            return zw.OP_GET_EPHEMERALS, zw.w_str(self.base + op["prefix"])
        raise ValueError(f"unknown op {k}")

    def norm(self, opcode, res):
        if opcode == zw.OP_CREATE or opcode == zw.OP_SYNC:
            return self.rel(res)
        if opcode in (zw.OP_CREATE2, zw.OP_CREATE_CONTAINER, zw.OP_CREATE_TTL):
            return [self.rel(res[0]), self.stat(res[1])]
        if opcode == zw.OP_GETDATA:
            return [None if res[0] is None else res[0].decode("latin-1"), self.stat(res[1])]
        if opcode in (zw.OP_EXISTS, zw.OP_SETDATA, zw.OP_SETACL):
            return self.stat(res)
        if opcode == zw.OP_GETACL:
            acl = [list(a) for a in res[0]] if res[0] is not None else None
            if acl and sum(1 for a in acl if a[1] in ("digest", "sasl")) >= 2:
                acl = sorted(acl)                                         # AUTH_ACL_ORDER
            return [acl, self.stat(res[1])]
        if opcode == zw.OP_GETCHILDREN:
            return sorted(res) if res is not None else None              # CHILD_ORDER
        if opcode == zw.OP_GETCHILDREN2:
            return [sorted(res[0]) if res[0] is not None else None, self.stat(res[1])]  # CHILD_ORDER
        if opcode == zw.OP_WHO_AM_I:
            return sorted(res)                                            # AUTH_ID_ORDER
        if opcode == zw.OP_GET_EPHEMERALS:
            return sorted(self.rel(p) for p in res) if res is not None else None    # CHILD_ORDER
        return res

    def norm_sub(self, x):
        t = x[0]
        if t == "create":
            return [t, self.rel(x[1])]
        if t == "create2":
            return [t, self.rel(x[1]), self.stat(x[2])]
        if t == "setData":
            return [t, self.stat(x[1])]
        if t == "getData":
            return [t, None if x[1] is None else x[1].decode("latin-1"), self.stat(x[2])]
        if t == "getChildren":
            return [t, sorted(x[1]) if x[1] is not None else None]           # CHILD_ORDER
        return list(x)


class Resolver:
    """Turns an op's dynamic parts into concrete values using ZooKeeper's current state, read through
    a super-authenticated session that sets no watches (so it changes nothing either server sees):
    {"child_of": P, "k": i} -> the i-th child (sorted) of P, or P + "/z" if there is none;
    {"existing": i} -> the i-th (mod count, sorted) node under the base, or "/a" if there is none;
    "cur" / "cur+1" versions -> the node's current version (aversion for setACL), or 0 if missing.
    Both servers then get the same concrete op."""

    def __init__(self, host, port, base):
        self.base = base
        self.s = zw.Session(host, port)
        self.s.auth("digest", ADMIN_SUPER)

    READS = {"getData", "exists", "getChildren", "getChildren2", "getACL", "sync", "getEphemerals",
             "getAllChildrenNumber", "multiRead", "addWatch", "removeWatches", "checkWatches", "addAuth",
             "saslLogin", "setQuota", "delQuota"}   # the quota ops write only under /zookeeper/quota

    def after(self, op):
        """Forget the cached node list when `op` may have changed the tree."""
        if op["op"] not in self.READS:
            self.cache = None

    def all_nodes(self):
        if getattr(self, "cache", None) is None:
            self.cache = self._all_nodes()
        return self.cache

    def _all_nodes(self):
        out, todo = [], ["/"]
        while todo:
            p = todo.pop()
            err, kids = self.s.call(zw.OP_GETCHILDREN, zw.w_str(self.abs(p)) + zw.w_bool(False))
            for k in (kids or []) if not err else []:
                c = ("" if p == "/" else p) + "/" + k
                out.append(c)
                todo.append(c)
        return sorted(out)

    def path(self, p):
        if isinstance(p, str):
            return p
        if "quota_root" in p:
            roots = self.quota_roots()
            return roots[p["quota_root"] % len(roots)] if roots else "/a"
        if "quota_of" in p:
            target = self.path(p["quota_of"])
            return "!" + QUOTA_ROOT + self.abs(target) + (f"/{p['node']}" if p["node"] else "")
        if "existing" in p:
            nodes = self.all_nodes()
            return nodes[p["existing"] % len(nodes)] if nodes else "/a"
        parent = p["child_of"]
        err, kids = self.s.call(zw.OP_GETCHILDREN, zw.w_str(self.abs(parent)) + zw.w_bool(False))
        kids = sorted(kids) if not err and kids else []
        prefix = "" if parent == "/" else parent
        if not kids:
            return prefix + "/z"
        return prefix + "/" + kids[p["k"] % len(kids)]

    def abs(self, p):
        if p.startswith("!"):
            return p[1:]
        return self.base if p == "/" else self.base + p

    def version(self, v, path, field):
        if isinstance(v, int):
            return v
        err, st = self.s.call(zw.OP_EXISTS, zw.w_str(self.abs(path)) + zw.w_bool(False))
        cur = st[field] if not err and st else 0
        return cur if v == "cur" else cur + 1

    def resolve(self, op):
        op = dict(op)
        if "path" in op:
            op["path"] = self.path(op["path"])
        if "version" in op:
            op["version"] = self.version(op["version"], op["path"].rstrip("/") or "/",
                                         "aversion" if op["op"] == "setACL" else "version")
        if "ops" in op:
            op["ops"] = [self.resolve(x) for x in op["ops"]]
            if op["op"] == "pipeline":
                op["ops"] = self.quota_pipeline(op["ops"])
        if "meanwhile" in op:
            resolved = []
            for x in op["meanwhile"]:
                resolved.append(self.resolve(x))
                self.after(x)
            op["meanwhile"] = resolved
        return op

    def quota_roots(self):
        """The paths (relative to the base) that have a zookeeper_limits node, sorted."""
        out, todo = [], ["/"]
        while todo:
            p = todo.pop()
            err, kids = self.s.call(zw.OP_GETCHILDREN, zw.w_str(QUOTA_ROOT + self.abs(p)) + zw.w_bool(False))
            for k in (kids or []) if not err else []:
                if k == "zookeeper_limits":
                    out.append(p)
                elif k != "zookeeper_stats":
                    todo.append(("" if p == "/" else p) + "/" + k)
        return sorted(out)

    def hard_quota_prefix(self, p):
        """The path at or above `p` (relative to the base) whose quota has a hard limit, or None."""
        if p.startswith("!") or not p.startswith("/"):
            return None
        cur = p.rstrip("/") or "/"
        while True:
            err, res = self.s.call(zw.OP_GETDATA, zw.w_str(QUOTA_ROOT + self.abs(cur) + "/zookeeper_limits")
                                   + zw.w_bool(False))
            if not err:
                # the deepest quota is the one that counts (getMaxPrefixWithQuota)
                limits = stats_track((res[0] or b"").decode())
                hard = limits.get("countHardLimit", -1) > -1 or limits.get("byteHardLimit", -1) > -1
                return cur if hard else None
            if cur == "/":
                return None
            cur = cur.rsplit("/", 1)[0] or "/"

    def quota_pipeline(self, ops):
        """QUOTA_PIPELINE: ZooKeeper checks a quota against its committed tree, and a pipelined write
        is checked while the writes sent before it may not be committed yet: whether the second of two
        pipelined writes under one hard limit passes depends on timing (seen both ways). So in a
        pipeline only the first write under each hard-limited quota stays a write; a later create or
        setData under it becomes an exists of its path."""
        if self.s.call(zw.OP_EXISTS, zw.w_str(QUOTA_ROOT + self.base) + zw.w_bool(False))[0]:
            return ops      # this sequence has set no quota
        seen, out = set(), []
        for x in ops:
            if x["op"] in ("create", "setData", "delete"):
                prefix = self.hard_quota_prefix(x["path"])
                if prefix is not None:
                    if prefix in seen and x["op"] != "delete":
                        x = {"op": "exists", "path": x["path"], "watch": False, "was": x["op"]}
                    seen.add(prefix)
            out.append(x)
        return out

    def close(self):
        self.s.close_session()


_trial_counter = itertools.count(1)
_coverage_lock = threading.Lock()
# (op kind, outcome) -> count, from ZooKeeper's side of every compared op: shows what a run exercised.
COVERAGE = {}


def outcome(op, r):
    if r[0] == "err":
        return f"err {r[1]}"
    if op["op"] in ("multi", "multiRead") and r[0] == "ok":
        errs = [x[1] for x in r[1] if x[0] == "error" and x[1] not in (0, -2)]
        return f"failed {errs[0]}" if errs else "ok"
    if op["op"] in ("setQuota", "delQuota", "saslLogin"):
        return f"{r[0]} {r[1]}"
    return str(r[0]) if r[0] != "closed" else "ok"


def run_trial(zk, pd, ops, run_id):
    """Runs `ops` on fresh namespaces. Returns (ops compared equal, mismatch dict or None)."""
    base = f"/b2b-{run_id}-{next(_trial_counter)}"
    servers = []
    for name, (host, port) in (("zookeeper", zk), ("paddock", pd)):
        setup = zw.Session(host, port)
        err, _ = setup.call(zw.OP_CREATE, zw.enc_create(base, b"", ACLS["open"], 0))
        setup.close_session()
        if err:
            raise RuntimeError(f"{name}: cannot create base {base}: err {err}")
        servers.append(Server(name, host, port, base))
    resolver = Resolver(zk[0], zk[1], base)
    z, p = servers
    try:
        for srv in servers:
            for i in range(SLOTS):
                srv.open_slot(i)
        resolved = []
        for idx, raw in enumerate(ops):
            op = resolver.resolve(raw)
            resolved.append(op)
            rz = z.run(op)
            rp = p.run(op)
            resolver.after(op)
            ez = z.drain()
            ep = p.drain()
            if op["op"] == "close":
                # EPHEMERAL_CLEANUP_ORDER: ZooKeeper deletes a closed session's ephemerals in the
                # iteration order of a HashSet (undefined); compare those events as multisets.
                ez = [sorted(e, key=fmt) for e in ez]
                ep = [sorted(e, key=fmt) for e in ep]
            with _coverage_lock:
                key = (op["op"], outcome(op, rz))
                COVERAGE[key] = COVERAGE.get(key, 0) + 1
                for evs in ez:
                    for e in evs:
                        k2 = ("event", str(e[0]))
                        COVERAGE[k2] = COVERAGE.get(k2, 0) + 1
            if rz != rp or ez != ep:
                return idx, {"index": idx, "op": op, "zookeeper": {"result": rz, "events": ez},
                             "paddock": {"result": rp, "events": ep},
                             "kind": (op["op"], "result" if rz != rp else "events"), "resolved": resolved}
        return len(ops), None
    finally:
        for srv in servers:
            try:
                srv.close_all()
            except zw.ConnectionClosed:
                pass
        resolver.close()


def shrink(zk, pd, ops, kind, run_id, budget_s):
    """Delta debugging over the op list: drop chunks (halves down to single ops) while a mismatch of
    the same kind (op name, result-or-events) still shows; truncate after the mismatching op."""
    deadline = time.monotonic() + budget_s
    best = list(ops)
    best_mm = None
    trials = 0

    def attempt(cand):
        nonlocal best, best_mm, trials
        trials += 1
        try:
            n, mm = run_trial(zk, pd, cand, run_id)
        except (OSError, zw.ConnectionClosed, RuntimeError) as e:
            print(f"  shrinking stopped: {e!r} (did a server die?)", file=sys.stderr)
            return None
        if mm is not None and tuple(mm["kind"]) == tuple(kind):
            best, best_mm = cand[:n + 1], mm
            return True
        return False

    # Cheap passes first: all reads that leave nothing behind at once, then each other slot's ops.
    quiet = {"getACL", "sync", "whoAmI", "getEphemerals", "getAllChildrenNumber", "multiRead", "checkWatches"}
    keep = [op for op in best[:-1] if not (op["op"] in quiet or (op["op"] in Generator.READ_KINDS
                                                                  and not op.get("watch")))]
    if len(keep) < len(best) - 1 and attempt(keep + best[-1:]) is None:
        return best, best_mm, trials, False
    for slot in range(SLOTS):
        if slot == best[-1].get("s"):
            continue
        cand = [op for op in best[:-1] if op.get("s") != slot] + best[-1:]
        if len(cand) < len(best) and attempt(cand) is None:
            return best, best_mm, trials, False
    chunk = max(1, len(best) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        i = 0
        progressed = False
        while i < len(best) - 1 and time.monotonic() < deadline:
            cand = best[:i] + best[i + chunk:]
            if not cand:
                i += chunk
                continue
            trials += 1
            try:
                n, mm = run_trial(zk, pd, cand, run_id)
            except (OSError, zw.ConnectionClosed, RuntimeError) as e:
                print(f"  shrinking stopped: {e!r} (did a server die?)", file=sys.stderr)
                return best, best_mm, trials, False
            if mm is not None and tuple(mm["kind"]) == tuple(kind):
                best = cand[:n + 1]
                best_mm = mm
                progressed = True
            else:
                i += chunk
        if not progressed:
            if chunk == 1:
                break
            chunk = max(1, chunk // 2)
    # then drop sub-ops of the multis, last op first
    for j in range(len(best) - 1, -1, -1):
        i = 0
        while "ops" in best[j] and len(best[j]["ops"]) > 1 and i < len(best[j]["ops"]) \
                and time.monotonic() < deadline:
            op = dict(best[j])
            op["ops"] = op["ops"][:i] + op["ops"][i + 1:]
            cand = best[:j] + [op] + best[j + 1:]
            trials += 1
            try:
                n, mm = run_trial(zk, pd, cand, run_id)
            except (OSError, zw.ConnectionClosed, RuntimeError) as e:
                print(f"  shrinking stopped: {e!r} (did a server die?)", file=sys.stderr)
                return best, best_mm, trials, False
            if mm is not None and tuple(mm["kind"]) == tuple(kind) and n == len(cand) - 1:
                best, best_mm = cand, mm
            else:
                i += 1
    if best_mm is None:
        _, best_mm = run_trial(zk, pd, best, run_id)
    return best, best_mm, trials, time.monotonic() < deadline


def _show(x):
    if isinstance(x, bytes):
        return x.decode("latin-1")
    return str(x)


def fmt(x):
    return json.dumps(x, separators=(",", ":"), default=_show)


def print_mismatch(mm, out):
    print(f"  op #{mm['index']}: {fmt(mm['op'])}", file=out)
    for side in ("zookeeper", "paddock"):
        print(f"    {side:9} result: {fmt(mm[side]['result'])}", file=out)
        print(f"    {side:9} events: {fmt(mm[side]['events'])}", file=out)


def wait_ready(host, port, timeout=60.0):
    """ZooKeeper answers `ruok` a moment before it accepts sessions; retry a session until it does."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            zw.Session(host, port).close_session()
            return
        except (zw.ConnectionClosed, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def main():
    global SLOTS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zk", required=True, help="host:port of Apache ZooKeeper")
    ap.add_argument("--paddock", required=True, help="host:port of paddock")
    ap.add_argument("--ops", type=int, default=20000, help="ops to compare in total")
    ap.add_argument("--seed", type=int, default=1, help="seed of the first sequence; sequence k uses seed+k")
    ap.add_argument("--seq-len", type=int, default=500, help="ops per independent sequence")
    ap.add_argument("--fresh-ops", type=int, default=None,
                    help="besides the fixed corpus (--seed, --ops), this many ops from a seed drawn now "
                    "(printed with the command that replays it); default a tenth of --ops, at least 500; "
                    "0 for none")
    ap.add_argument("--fresh-seed", type=int, help="the fresh block's seed instead of a drawn one")
    ap.add_argument("--exclude", default="", help="comma-separated op kinds the generator leaves out")
    ap.add_argument("--shrink-budget", type=float, default=90.0, help="seconds of shrinking per mismatch")
    ap.add_argument("--max-mismatches", type=int, default=5, help="shrink at most this many mismatches")
    ap.add_argument("--jobs", type=int, default=4, help="sequences run at the same time")
    ap.add_argument("--counts-file", help="write 'sequences-equal sequences-failed ops-compared ops-mismatching ops-not-run' here")
    ap.add_argument("--coverage", action="store_true", help="print outcome counts per op kind at the end")
    ap.add_argument("--save-dir", help="write each shrunk sequence here as JSON (for --ops-file)")
    ap.add_argument("--ops-file", help="replay this JSON list of ops (one sequence) instead of generating")
    ap.add_argument("--slots", type=int, default=SLOTS, help="sessions per server in a sequence")
    ap.add_argument("--no-config-node", action="store_true",
                    help="leave /zookeeper/config out of the special paths: its content differs by design "
                    "when one side is a standalone server and the other an ensemble member")
    a = ap.parse_args()
    SLOTS = max(2, a.slots)
    if a.no_config_node:
        for paths in (SPECIAL_PATHS, READ_SPECIAL_PATHS, COUNT_SPECIAL_PATHS):
            paths.remove("!/zookeeper/config")

    def hp(s):
        h, p = s.rsplit(":", 1)
        return h, int(p)

    zk, pd = hp(a.zk), hp(a.paddock)
    for hostport in (zk, pd):
        wait_ready(*hostport)
    exclude = [x for x in a.exclude.split(",") if x]
    if "sasl" in exclude:
        SLOT_AUTH[1] = [x for x in SLOT_AUTH[1] if x[0] != "sasl"]
    run_id = f"{a.seed}-{int(time.time())}"
    jobs = []
    if a.ops_file:
        with open(a.ops_file) as f:
            ops = json.load(f)
        jobs.append((a.seed, ops))
    else:
        remaining, k = a.ops, 0
        while remaining > 0:
            n = min(a.seq_len, remaining)
            jobs.append((a.seed + k, generate(a.seed + k, n, exclude)))
            remaining -= n
            k += 1
        fresh = a.fresh_ops if a.fresh_ops is not None else max(500, a.ops // 10)
        if fresh > 0:
            # Far above any fixed corpus's seeds; drawn from the OS, so every run compares new sequences.
            fresh_seed = a.fresh_seed if a.fresh_seed is not None else random.SystemRandom().randrange(10**6, 10**9)
            print(f"b2b: fresh seed {fresh_seed}, {fresh} ops besides the fixed corpus (replay alone: "
                  f"compat-tests/b2b/run.sh --seed {fresh_seed} --ops {fresh} --seq-len {a.seq_len} "
                  f"--fresh-ops 0" + (f" --exclude {a.exclude}" if a.exclude else "") + ")", flush=True)
            remaining, k = fresh, 0
            while remaining > 0:
                n = min(a.seq_len, remaining)
                jobs.append((fresh_seed + k, generate(fresh_seed + k, n, exclude)))
                remaining -= n
                k += 1
    t0 = time.monotonic()

    def one(job):
        seed, ops = job
        try:
            done, mm = run_trial(zk, pd, ops, run_id)
        except (OSError, zw.ConnectionClosed, RuntimeError) as e:
            print(f"ABORT seed={seed}: a server stopped answering ({e!r})", file=sys.stderr)
            return seed, ops, 0, {"abort": repr(e)}
        print(f"sequence seed={seed}: {done}/{len(ops)} ops equal ({time.monotonic() - t0:.0f}s)",
              file=sys.stderr)
        return seed, ops, done, mm

    # Sequences are independent (own namespace, own sessions), so --jobs of them share the servers.
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        results = list(pool.map(one, jobs))
    # Ops and sequences are counted apart: a sequence is a test (it passes when every op of it was equal),
    # an op is one comparison; compat-tests/lib.sh's row counts the tests, report_ops the operations.
    passed = failed = skipped = 0
    seq_passed = seq_failed = 0
    mismatches = 0
    out = sys.stdout
    for seed, ops, done, mm in results:
        n = len(ops)
        passed += done
        if mm is None:
            seq_passed += 1
            continue
        seq_failed += 1
        failed += 1
        skipped += n - done - 1
        if "abort" in mm:
            print(f"ABORT seed={seed} at op {done}: a server stopped answering: {mm['abort']}", file=out)
            continue
        mismatches += 1
        print(f"MISMATCH seed={seed} seq-len={n} op-index={done} kind={mm['kind']}", file=out)
        print_mismatch(mm, out)
        print(f"  reproduce: compat-tests/b2b/run.sh --seed {seed} --ops {done + 1} --seq-len {n} --fresh-ops 0"
              + (f" --exclude {a.exclude}" if a.exclude else ""), file=out)
        if mismatches > a.max_mismatches:
            print("  (not shrunk: --max-mismatches reached)", file=out)
            continue
        best, bmm, trials, in_time = shrink(zk, pd, ops[:done + 1], mm["kind"], run_id, a.shrink_budget)
        print(f"  shrunk to {len(best)} ops in {trials} trials"
              + ("" if in_time else " (time budget hit; may not be minimal)") + ":", file=out)
        if bmm is None:
            print("  NOT REPRODUCED: no replay showed this mismatch again (timing dependent?)", file=out)
        shown = bmm["resolved"] if bmm is not None else best
        for i, op in enumerate(shown):
            print(f"    [{i}] {fmt(op)}", file=out)
        if bmm is not None:
            if a.save_dir:
                name = f"{a.save_dir}/mismatch-seed{seed}.json"
                with open(name, "w") as f:
                    json.dump(bmm["resolved"], f)
                print(f"  saved the shrunk sequence to {name} (replay: run.sh --ops-file FILE)", file=out)
            print("  shrunk sequence's mismatch:", file=out)
            print_mismatch(bmm, out)
        out.flush()
    k = len(jobs)
    dt = time.monotonic() - t0
    if a.coverage:
        print("coverage (ZooKeeper's outcomes, all trials including shrinking):")
        for (kind, oc), c in sorted(COVERAGE.items()):
            print(f"  {kind:22} {oc:12} {c}")
    print(f"b2b: {passed + failed} ops compared in {dt:.1f}s over {k} sequences "
          f"({passed} equal, {failed} mismatching, {skipped} not run after a mismatch); "
          f"sequences: {seq_passed} equal, {seq_failed} with a mismatch or an abort")
    if a.counts_file:
        with open(a.counts_file, "w") as f:
            # sequences equal, sequences not, ops compared, ops mismatching, ops not run after a mismatch
            f.write(f"{seq_passed} {seq_failed} {passed + failed} {failed} {skipped}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
