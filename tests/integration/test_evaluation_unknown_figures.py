"""The evaluation's text (the verdict the dashboard shows, /evaluate?format=text and `shardscope
evaluate`) claims no share of nothing (the surfaces3 probe): with only inserts observed it said
"it targets 0.0% of reads and writes", "Reads: 0.0% single-shard, 0.0% multi-shard, 0.0%
scatter-gather" and, before the simulated cluster had inserts, "the busiest takes 0.0% of
inserts". Unknown is said as such, as /stats' null shares are shown "-". Through a real proxy to
FerretDB with pymongo.
"""
from __future__ import annotations

import json
import subprocess
import urllib.request

import pymongo
import pytest

pytestmark = pytest.mark.needs_proxy


def _get_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def test_insert_only_traffic_claims_no_targeted_share(ferretdb, proxy, shardscope_binary):
    p = proxy(ferretdb.uri, "--evaluation.candidates", "shop.items: {sku: 1}", admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        client.shop.items.insert_many([{"sku": f"S{i}", "qty": i} for i in range(5)])
    local = _get_text(p.admin_url + "/evaluate?format=text")
    cli = subprocess.run([str(shardscope_binary), "evaluate", "--from", p.admin_url], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert cli == local
    verdict = next(n for n in json.loads(_get_text(p.admin_url + "/evaluate"))["namespaces"] if n["ns"] == "shop.items")
    for what, text in (("text", local), ("verdict", verdict["verdict"]["text"])):
        assert "0.0% of reads and writes" not in text, (what, text)
        assert "0.0% targeted" not in text and "Reads: 0.0%" not in text, (what, text)
        assert "busiest takes 0.0%" not in text, (what, text)
    assert "No read or write was observed yet" in verdict["verdict"]["text"], verdict["verdict"]["text"]
    assert "Routes       no read or write observed yet." in local, local
