"""`shardscope stats` (the refreshing table) when the sidecar stops answering (the surfaces3 probe):
the last table, its "health: ok" line included, stayed the last thing on stdout, with the error on
stderr only, so a terminal or a log of it kept saying the upstream was up. The page says NO DATA in
that case (test_surfaces_agree.py); the CLI now prints the same words, once per outage.
"""
from __future__ import annotations

import subprocess
import time

import pymongo
import pytest

from stats_helpers import ROUTING_FILE, seed_orders, wait_for

pytestmark = pytest.mark.needs_proxy


def test_stats_table_says_no_data_once_the_sidecar_stops_answering(ferretdb, proxy, shardscope_binary, tmp_path):
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
    out_path = tmp_path / "stats.out"
    with open(out_path, "w") as out:
        cli = subprocess.Popen([str(shardscope_binary), "stats", "--admin", p.admin_url, "--interval", "0.2"],
                               stdout=out, stderr=subprocess.DEVNULL)
        try:
            assert wait_for(lambda: "health: ok" in out_path.read_text(), timeout=30), out_path.read_text()
            p.kill()
            assert wait_for(lambda: "NO DATA" in out_path.read_text(), timeout=30), out_path.read_text()[-2000:]
            time.sleep(1)  # several more failed refreshes
        finally:
            cli.terminate()
            cli.wait(timeout=10)
    text = out_path.read_text()
    tail = text[text.rindex("health: ok"):]
    assert "!! health: NO DATA: " + p.admin_url in tail and "upstream health unknown" in tail, tail[-1500:]
    assert tail.count("NO DATA") == 1, tail[-1500:]  # once per outage, not a line per refresh
