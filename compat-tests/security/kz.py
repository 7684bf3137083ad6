"""kazoo operations of the quorum-security suite, one member at a time (no failover between members).

    kz.py serving H:P H:P...      through each member: create /sec/serving-<random>-<i>; then through each
                                  member: sync and read every one back. Exit 0 if all match, else 1 with why.
    kz.py put H:P PATH DATA       create PATH (and its parents) with DATA
    kz.py get H:P PATH            print PATH's data (exit 1 if it cannot be read)
"""

import logging
import secrets
import sys

from kazoo.client import KazooClient

logging.basicConfig(level=logging.CRITICAL)


def client(hp):
    zk = KazooClient(hosts=hp, timeout=10, connection_retry={"max_tries": 3, "delay": 0.2},
                     command_retry={"max_tries": 0})
    zk.start(timeout=15)
    return zk


def serving(members):
    tag = secrets.token_hex(6)
    written = {}
    for i, hp in enumerate(members):
        path = f"/sec/serving-{tag}-{i}"
        data = f"{tag}-{i}".encode()
        try:
            zk = client(hp)
        except Exception as e:  # kazoo raises its own timeout types and OSError
            print(f"cannot open a session on {hp}: {type(e).__name__}: {e}")
            return 1
        try:
            zk.create(path, data, makepath=True)
        except Exception as e:
            print(f"create {path} through {hp} failed: {type(e).__name__}: {e}")
            return 1
        finally:
            zk.stop()
            zk.close()
        written[path] = data
    for hp in members:
        zk = client(hp)
        try:
            for path, data in written.items():
                zk.sync(path)
                got, _ = zk.get(path)
                if got != data:
                    print(f"{path} read through {hp}: {got!r}, expected {data!r}")
                    return 1
        except Exception as e:
            print(f"reading through {hp} failed: {type(e).__name__}: {e}")
            return 1
        finally:
            zk.stop()
            zk.close()
    return 0


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "serving":
        return serving(args)
    hp, path = args[0], args[1]
    try:
        zk = client(hp)
    except Exception as e:
        print(f"cannot open a session on {hp}: {type(e).__name__}: {e}")
        return 1
    try:
        if cmd == "put":
            zk.create(path, args[2].encode(), makepath=True)
        elif cmd == "get":
            zk.sync(path)
            print(zk.get(path)[0].decode())
        else:
            print(f"unknown command {cmd}")
            return 2
    except Exception as e:
        print(f"{cmd} {path} through {hp} failed: {type(e).__name__}: {e}")
        return 1
    finally:
        zk.stop()
        zk.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
