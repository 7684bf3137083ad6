"""Four-letter words on the client port, and kazoo's server_version() (which sends `envi`)."""

import re

from conftest import four_letter


def test_ruok_answers_imok():
    assert four_letter("ruok") == "imok"


def test_server_version_reports_3_9(client):
    version = client.server_version()
    assert version[:2] == (3, 9)
    assert all(isinstance(part, int) for part in version)


def test_envi_lists_zookeeper_version(client):
    out = four_letter("envi")
    assert out.startswith("Environment:\n")
    assert re.search(r"^zookeeper\.version=3\.9\.\d+", out, re.M)


def test_srvr_reports_mode_zxid_and_node_count(client, root):
    stat = client.set(root, b"touch")
    out = four_letter("srvr")
    lines = out.splitlines()
    assert re.match(r"Zookeeper version: 3\.9\.\d+-\S+, built on ", lines[0])
    keys = [line.split(":", 1)[0] for line in lines[1:] if line]
    for key in ("Latency min/avg/max", "Received", "Sent", "Connections", "Outstanding", "Zxid", "Mode",
                "Node count"):
        assert key in keys, key
    fields = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    assert fields["Mode"] == "standalone"
    assert int(fields["Zxid"], 16) >= stat.mzxid
    assert int(fields["Node count"]) >= 5  # /, /zookeeper, /zookeeper/config, /zookeeper/quota, our root
