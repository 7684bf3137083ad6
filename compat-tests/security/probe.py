"""A stranger at the peer ports: what does a process that is not a member learn from them?

    probe.py stranger --target T --ports [N@]H:P,... [--cluster-id HEX] [--fingerprint HEX] [--member-id N]...
        For each port (of member N, default 1): connects in plaintext and over TLS without a client certificate, sends what a
        member sends (a Probe hello, then on a new connection a Raft hello; for ZooKeeper also its
        election header), and collects every byte that comes back for 2 s. Fails if any of them holds
        the cluster id, the fingerprint or a member id (each as 8 bytes big-endian), the hello magic
        "PDKN", or (ZooKeeper) a `server.N=` line of the member list; also fails if a TLS handshake
        without a certificate is completed by the server (application bytes came back). Prints the
        attempts that learned something (every attempt with --verbose) and a count.
    probe.py member --target T --port H:P --cert C --key K --ca CA [--expect-id N]
        The positive control: the same probe over TLS with a member's certificate. paddock: a Probe
        hello claiming member 1 must be answered with a hello that carries "PDKN" (prints the cluster
        id and fingerprint it holds). ZooKeeper: an election header and a notification from an unknown
        server id must be answered with the member's vote, which names the leader and the member list.
        So the stranger's checks above look for bytes that do come back to a member.
    probe.py claim --target T --port H:P --cert C --key K --ca CA --claim N --to M
            [--cluster-id HEX --fingerprint HEX]
        The accepting side's check of a member's identity: over TLS with certificate C, opens a link
        claiming to be member N (paddock: a Raft hello from N to M with the right cluster id and
        fingerprint, so that only the certificate can make it fail; ZooKeeper: an election header
        and a vote from N). Prints "accepted" (exit 0: a Reply with tag 0 and a hello; ZooKeeper: its
        vote and member list) or "refused" (exit 1).
    probe.py tls-version --port H:P --cert C --key K --ca CA --version TLSv1.2|TLSv1.3|any
        A TLS handshake with that client certificate, verifying the server's certificate against CA and
        its SAN against H. Prints the negotiated protocol, or "refused: why" (exit 1). Before TLS 1.3,
        a server that refuses the client's certificate fails the handshake; with TLS 1.3 the refusal
        comes after it, so the command then also waits up to 1 s for the server's alert.

The hello's encoding is in one function, `paddock_hello`: keep it in step with consensus/src/net.
"""

import argparse
import socket
import ssl
import struct
import sys
import time

COLLECT_S = 2.0
MAGIC = b"PDKN"
KIND_RAFT, KIND_PROBE = 1, 3


def paddock_hello(kind, sender, receiver, cluster_id=0, fingerprint=0, version=1):
    """A member's first frame (consensus/src/net/mod.rs): u32 length, then the 48-byte Hello."""
    body = (MAGIC + struct.pack(">HBB", version, kind, 0)
            + struct.pack(">QQQQQ", sender, receiver, cluster_id, fingerprint, 0))
    assert len(body) == 48
    return struct.pack(">I", len(body)) + body


def zk_election_header(sid, addr):
    """ZooKeeper's QuorumCnxManager connection header (protocol version -65536, sid, address)."""
    a = addr.encode()
    return struct.pack(">qqi", -65536, sid, len(a)) + a


def zk_notification(sid):
    """A LOOKING vote for `sid` (FastLeaderElection.buildMsg, version 2, empty config), framed."""
    body = struct.pack(">iqqqqii", 0, sid, 0, 1, 0, 2, 0)
    return struct.pack(">i", len(body)) + body


def split(hp):
    host, port = hp.rsplit(":", 1)
    return host, int(port)


def exchange(hostport, payload, tls=None, server_name=None):
    """Connects (optionally TLS), sends payload, returns (bytes received, note)."""
    host, port = split(hostport)
    got = bytearray()
    note = ""
    try:
        raw = socket.create_connection((host, port), timeout=3)
    except OSError as e:
        return bytes(got), f"connect failed: {e}"
    sock = raw
    try:
        if tls is not None:
            try:
                sock = tls.wrap_socket(raw, server_hostname=server_name)
            except (ssl.SSLError, OSError) as e:
                return bytes(got), f"TLS handshake failed: {e}"
            note = f"TLS handshake done ({sock.version()}); "
        try:
            sock.sendall(payload)
        except (ssl.SSLError, OSError) as e:
            note += f"send failed: {e}; "
        deadline = time.monotonic() + COLLECT_S
        while time.monotonic() < deadline:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                break
            except (ssl.SSLError, OSError) as e:
                note += f"read ended: {e}"
                break
            if not chunk:
                note += "closed by the server"
                break
            got += chunk
    finally:
        sock.close()
    return bytes(got), note


def stranger_context():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def member_context(args, version=None):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(args.ca)
    ctx.load_cert_chain(args.cert, args.key)
    if version and version != "any":
        v = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}[version]
        ctx.minimum_version = ctx.maximum_version = v
    return ctx


def secrets(args):
    out = {"magic PDKN": MAGIC}
    if args.cluster_id:
        out["cluster id"] = int(args.cluster_id, 16).to_bytes(8, "big")
    if args.fingerprint:
        out["fingerprint"] = int(args.fingerprint, 16).to_bytes(8, "big")
    for m in args.member_id or []:
        out[f"member id {m}"] = int(m).to_bytes(8, "big")
    if args.target == "zookeeper":
        out["member list (server.N=)"] = b"server."
    return out


def cmd_stranger(args):
    bad = tries = 0
    look_for = secrets(args)
    for entry in args.ports.split(","):
        to, _, hp = entry.rpartition("@")
        to = int(to or 1)
        host, _ = split(hp)
        payloads = [("Probe hello", paddock_hello(KIND_PROBE, 99, to)),
                    ("Raft hello", paddock_hello(KIND_RAFT, 99, to))]
        if args.target == "zookeeper":
            payloads.append(("election header", zk_election_header(99, f"{host}:1") + zk_notification(99)))
        for what, payload in payloads:
            for mode, tls in (("plaintext", None), ("TLS, no certificate", stranger_context())):
                got, note = exchange(hp, payload, tls, host)
                found = [name for name, b in look_for.items() if b in got]
                leaked = tls is not None and note.startswith("TLS handshake done") and len(got) > 0
                verdict = "ok"
                if found:
                    verdict = "LEAK: " + ", ".join(found)
                elif leaked:
                    verdict = "LEAK: the server completed a TLS handshake without a client certificate and answered"
                tries += 1
                if verdict != "ok":
                    bad += 1
                if verdict != "ok" or args.verbose:
                    print(f"  {hp} {mode}, {what}: {len(got)} bytes back ({note.strip('; ')}): {verdict}")
    print(f"  stranger: {tries} attempts, {bad} learned something")
    return 1 if bad else 0


def cmd_member(args):
    host, _ = split(args.port)
    ctx = member_context(args)
    if args.target == "zookeeper":
        got, note = exchange(args.port, zk_election_header(99, f"{host}:1") + zk_notification(99), ctx, host)
        ok = b"server." in got and (args.expect_id is None or int(args.expect_id).to_bytes(8, "big") in got)
        print(f"  {args.port} TLS with a member's certificate, election header: {len(got)} bytes back "
              f"({note.strip('; ')}); member list {'present' if b'server.' in got else 'absent'}")
        return 0 if ok else 1
    got, note = exchange(args.port, paddock_hello(KIND_PROBE, 1, int(args.expect_id or 0)), ctx, host)
    i = got.find(MAGIC)
    if i < 0 or len(got) < i + 48:
        print(f"  {args.port} TLS with a member's certificate, Probe hello: {len(got)} bytes back "
              f"({note.strip('; ')}); no hello in the reply")
        return 1
    hello = got[i:i + 48]
    cluster_id, fingerprint = struct.unpack(">QQ", hello[24:40])
    print(f"  {args.port} TLS with a member's certificate, Probe hello: answered by member "
          f"{struct.unpack('>Q', hello[8:16])[0]}")
    print(f"cluster_id={cluster_id:016x} fingerprint={fingerprint:016x}")
    return 0


def cmd_claim(args):
    """Over TLS with the given certificate, claims to be member --claim: is the link accepted?"""
    host, _ = split(args.port)
    claim, to = int(args.claim), int(args.to)
    if args.target == "zookeeper":
        payload = zk_election_header(claim, f"127.0.0.{claim}:1") + zk_notification(claim)
    else:
        payload = paddock_hello(KIND_RAFT, claim, to, int(args.cluster_id or "0", 16),
                                int(args.fingerprint or "0", 16))
    ctx = member_context(args)
    ctx.check_hostname = False  # the connecting side's check is not what this asks about
    got, note = exchange(args.port, payload, ctx, host)
    if args.target == "zookeeper":
        accepted = b"server." in got  # the member answered the vote with its own and its member list
    else:
        accepted = len(got) >= 9 and got[4] == 0 and got[5:9] == MAGIC  # Reply: tag 0 (accept), hello
    print(("accepted" if accepted else "refused") + f" ({len(got)} bytes back; {note.strip('; ')})")
    return 0 if accepted else 1


def cmd_tls_version(args):
    host, port = split(args.port)
    try:
        with socket.create_connection((host, port), timeout=3) as raw:
            with member_context(args, args.version).wrap_socket(raw, server_hostname=host) as s:
                if s.version() == "TLSv1.3":
                    s.settimeout(1)
                    try:  # a refused client certificate shows here, as an alert or a close
                        if not s.recv(1):
                            print("refused: closed by the server after the handshake")
                            return 1
                    except socket.timeout:
                        pass
                print(s.version())
                return 0
    except (ssl.SSLError, OSError) as e:
        print(f"refused: {e}")
        return 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=["stranger", "member", "claim", "tls-version"])
    p.add_argument("--target", default="paddock", choices=["paddock", "zookeeper"])
    p.add_argument("--ports")
    p.add_argument("--port")
    p.add_argument("--cluster-id")
    p.add_argument("--fingerprint")
    p.add_argument("--member-id", action="append")
    p.add_argument("--expect-id")
    p.add_argument("--claim")
    p.add_argument("--to")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--ca")
    p.add_argument("--version")
    p.add_argument("--verbose", action="store_true", help="stranger: print every attempt, not only leaks")
    args = p.parse_args()
    return {"stranger": cmd_stranger, "member": cmd_member, "claim": cmd_claim,
            "tls-version": cmd_tls_version}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
