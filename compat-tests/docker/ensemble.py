"""kazoo against the compose ensemble, for compat-tests/docker/run.sh.

  ensemble.py write HOSTS PREFIX FIRST COUNT   creates PREFIX/n-FIRST.. (parents made), each "v<n>";
                                               retries through a leader change for up to 60 s
  ensemble.py count HOST PREFIX                sync, then prints how many children PREFIX has on HOST
                                               and checks every one holds "v<n>"
"""
import sys
import time

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NodeExistsError, SessionExpiredError
from kazoo.handlers.threading import KazooTimeoutError


def client(hosts):
    zk = KazooClient(hosts=hosts, timeout=10, connection_retry={"max_tries": -1, "delay": 0.2, "max_delay": 1})
    zk.start(timeout=30)
    return zk


def write(hosts, prefix, first, count):
    zk = client(hosts)
    zk.ensure_path(prefix)
    deadline = time.monotonic() + 60
    n = first
    while n < first + count:
        try:
            zk.create(f"{prefix}/n-{n:04d}", f"v{n}".encode())
            n += 1
        except NodeExistsError:
            # The create went through before a connection loss hid the reply.
            n += 1
        except (ConnectionLoss, SessionExpiredError, KazooTimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    zk.stop()
    print(f"wrote {count} under {prefix}")


def count(host, prefix):
    zk = client(host)
    zk.sync(prefix)
    kids = sorted(zk.get_children(prefix))
    for k in kids:
        data, _ = zk.get(f"{prefix}/{k}")
        want = f"v{int(k.split('-')[1])}".encode()
        if data != want:
            sys.exit(f"{host}: {prefix}/{k} holds {data!r}, not {want!r}")
    zk.stop()
    print(len(kids))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1] == "count":
        count(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
