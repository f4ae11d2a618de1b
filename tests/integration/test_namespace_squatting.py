"""One client cannot blind the proxy to the collections that matter (namespace squatting).

A client that touches 300 made-up namespaces (finds on db.junk0..db.junk299: no credentials
needed, the server answers each with an empty cursor) used to fill the statistics catalog (256
namespaces) and the evaluation (64) until restart: the sharded shop.orders, configured in the
routing table, arrived later and was counted under ns "<other>" in /stats and /metrics and never
evaluated. Now the routing table's namespaces always get their rows; invented names stay bounded
and what they lost is counted (`opsInOtherNamespace`, `shardscope_stats_other_namespace_ops_total`).
"""
from __future__ import annotations

import json
import time
import urllib.request

import pymongo
import pytest

from harness import REPO_ROOT

pytestmark = pytest.mark.needs_proxy

ROUTING = REPO_ROOT / "examples" / "routing" / "orders_6shards.json"


def _get(admin_url: str, path: str) -> str:
    with urllib.request.urlopen(admin_url + path, timeout=30) as r:
        return r.read().decode()


def test_made_up_namespaces_cannot_push_the_sharded_collection_out(ferretdb, proxy):
    px = proxy(ferretdb.uri, "--routing", str(ROUTING), admin=True)
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=20_000) as client:
        for i in range(300):
            client.db[f"junk{i}"].find_one({"a": 1})
        for i in range(20):
            client.shop.orders.find_one({"customerId": f"C{i:04d}"})

    stats = json.loads(_get(px.admin_url, "/stats"))
    assert "shop.orders" in {n["ns"] for n in stats["namespaces"]}, "the sharded collection got no row"
    orders = [s for s in stats["shapes"] if s["ns"] == "shop.orders"]
    assert sum(s["count"] for s in orders) == 20
    assert not any(s["other"] for s in orders), orders
    # The made-up names stay bounded, and what they lost is said.
    assert len([n for n in stats["namespaces"] if n["ns"].startswith("db.junk")]) <= 256
    assert stats["shapeCap"]["opsInOtherNamespace"] >= 300 - 256
    page = _get(px.admin_url, "/metrics")
    counted = [line for line in page.splitlines() if line.startswith("shardscope_stats_other_namespace_ops_total ")]
    assert counted and float(counted[0].split()[1]) >= 300 - 256, counted

    # The evaluation (64 made-up namespaces) evaluates the sharded collection too.
    deadline = time.monotonic() + 10
    while '"shop.orders"' not in (evaluate := _get(px.admin_url, "/evaluate")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert '"shop.orders"' in evaluate, "the sharded collection was not evaluated"
