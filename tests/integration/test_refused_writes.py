"""Writes mongos refuses whatever their filter targets, through the real proxy with pymongo against
FerretDB (which refuses them too): /stats and /metrics file them as unclassified, reaching no shard,
with the server's error, not as the broadcast or single-shard write their filter alone would make.

A replacement-style update with multi:true (README "Targeting"; mongo-semantics.md B "Writes":
update multi:true "cannot be a replacement"): main classified it by its filter (broadcast here).
"""
from __future__ import annotations

import json
import urllib.request

import pymongo

from harness import REPO_ROOT

ROUTING = str(REPO_ROOT / "tests" / "data" / "routing" / "orders_6shards.json")


def _get(p, path: str):
    with urllib.request.urlopen(p.admin_url + path, timeout=20) as r:
        return r.read().decode() if path == "/metrics" else json.load(r)


def test_multi_replacement_is_refused_and_reaches_no_shard(ferretdb, proxy):
    p = proxy(ferretdb.uri, "--routing", ROUTING, admin=True)
    with pymongo.MongoClient(p.uri) as client:
        client.shop.orders.insert_many([{"_id": i, "customerId": "C%04d" % i} for i in range(3)])
        shard_ops_before = {s["name"]: s["ops"] for s in _get(p, "/stats")["shards"]}
        reply = client.shop.command({"update": "orders", "updates": [
            {"q": {"status": "new"}, "u": {"customerId": "C0001", "status": "old"}, "multi": True}]})
        assert reply["writeErrors"][0]["code"] == 9  # FailedToParse: the server refuses it too
        stats = _get(p, "/stats")
        assert client.shop.orders.count_documents({"status": "old"}) == 0
    row = next(s for s in stats["shapes"] if s["command"] == "update")
    assert row["targeting"]["unclassified"] == 1 and row["targeting"]["broadcast"] == 0  # main: broadcast 1
    assert "multi:true" in row["reason"]
    assert row["hostsTargeted"]["none"] == 1
    assert row["shardsTouched"]["max"] == 0
    assert row["errors"]["byCode"] == {"9": 1}
    assert {s["name"]: s["ops"] for s in stats["shards"]} == shard_ops_before  # no shard reached
    metrics = _get(p, "/metrics")
    assert 'shardscope_ops_total{ns="shop.orders",command="update",targeting="unclassified"} 1' in metrics
    assert 'command="update",targeting="broadcast"' not in metrics


def test_a_batch_with_one_refused_statement_reaches_the_shards_of_those_that_run(ferretdb, proxy):
    """mongos gives the refused statement (an array shard-key value) a write error and runs the
    rest: unordered, every other document (here shardA and shardC); ordered, those before it."""
    p = proxy(ferretdb.uri, "--routing", ROUTING, admin=True)
    docs = [{"customerId": "C0001"}, {"customerId": ["C0002", "C0003"]}, {"customerId": "C6000"}]
    with pymongo.MongoClient(p.uri) as client:
        client.shop.orders.insert_many([dict(d) for d in docs], ordered=False)
        unordered = next(s for s in _get(p, "/stats")["shapes"] if s["command"] == "insert")
        client.shop.orders.insert_many([dict(d) for d in docs], ordered=True)
        both = next(s for s in _get(p, "/stats")["shapes"] if s["command"] == "insert")
    assert unordered["targeting"]["multi"] == 1 and unordered["targeting"]["unclassified"] == 0  # main: unclassified
    assert unordered["shardsTouched"]["max"] == 2
    assert "partly refused" in unordered["reason"]
    assert both["targeting"]["single"] == 1 and both["targeting"]["unclassified"] == 0
