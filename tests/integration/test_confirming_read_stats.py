"""A retryable write the lookup rewrite holds (docs/rewrite.md, "Retryable writes") sends the
proxy's confirming read first (one shard), then the rewritten write or, when the read finds
nothing, the client's write as written. /stats files what was actually sent: the read as a read of
its shard (no write there), then the write as it went. Before: an unconfirmed write was filed as
the rewritten single-shard *write* (never sent) plus the original, and a confirmed one without its
read.

Real pymongo through build/shardscope (rule shop.orders: orderId -> customerId, six-shard routing
file) to the stand-in mongos that keeps retryable-write semantics (tests/support/retryable_mongos.py).
"""
from __future__ import annotations

import json

import pymongo
import pytest

from harness import REPO_ROOT
from stats_helpers import get_stats, http_request

pytestmark = pytest.mark.needs_proxy

ROUTING = str(REPO_ROOT / "tests" / "data" / "routing" / "orders_6shards.json")
RULE = "shop.orders: orderId -> customerId"
UPDATE_SHAPE = '{"orderId":"<string>"} update:{"$inc":{"n":"<number>"}}'


def update_row(stats):
    rows = [s for s in stats["shapes"] if s["ns"] == "shop.orders" and s["command"] == "update"
            and s["shape"] == UPDATE_SHAPE]
    assert len(rows) == 1, [s["shape"] for s in stats["shapes"]]
    return rows[0]


def orders_shards(stats):
    ns = [n for n in stats["namespaces"] if n["ns"] == "shop.orders"]
    assert len(ns) == 1
    return {s["name"]: s for s in ns[0]["shards"]}


@pytest.fixture
def held_writes(proxy):
    from retryable_mongos import RetryableMongos

    peer = RetryableMongos().start()
    try:
        p = proxy(peer.uri, "--routing", ROUTING, "--rewrite-rule", RULE, admin=True)
        through = pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=10000)
        direct = pymongo.MongoClient(peer.uri, serverSelectionTimeoutMS=10000)
        through.shop.orders.insert_many(
            [{"_id": i, "orderId": "R%d" % i, "customerId": "cust-%04d" % i, "n": 0} for i in range(4)])
        yield through.shop.orders, direct.shop.orders, p
        through.close()
        direct.close()
    finally:
        peer.stop()


def test_an_unconfirmed_retryable_write_is_filed_as_its_read_and_the_original(held_writes):
    through, direct, p = held_writes
    direct.update_one({"orderId": "R1"}, {"$set": {"customerId": "cust-0999"}})  # behind the sidecar
    assert http_request(p.admin_url, "POST", "/stats/reset")[0] == 200
    assert through.update_one({"orderId": "R1"}, {"$inc": {"n": 1}}).matched_count == 1

    stats = get_stats(p.admin_url)
    row = update_row(stats)
    assert row["count"] == 1
    assert row["rewrite"]["applied"] == 1 and row["rewrite"]["fallbacks"] == 1
    assert row["rewrite"]["confirmingReads"] == 1
    # What went upstream: the read (one shard, oneShard) and the original, under the class the
    # original gets as the client wrote it (no shard key: not oneShard).
    assert row["hostsTargeted"]["oneShard"] == 1 and sum(row["hostsTargeted"].values()) == 2, json.dumps(row)
    assert row["targeting"]["single"] == 1 and sum(row["targeting"].values()) == 2, json.dumps(row)
    # The read's shard got a read, not a write. Before: filed as the rewritten write, writes == 1.
    reached = {name: s for name, s in orders_shards(stats).items() if s["targetedOps"]}
    assert len(reached) == 1, reached
    (read_shard,) = reached.values()
    assert read_shard["targetedOps"] == 1 and read_shard["writes"] == 0, read_shard
    hot = [n for n in stats["hotness"]["namespaces"] if n["ns"] == "shop.orders"]
    assert all(s["writes"] == 0 for n in hot for s in n["shards"] if s["targetedOps"]), hot


def test_a_confirmed_retryable_write_is_filed_with_its_read(held_writes):
    through, _, p = held_writes
    assert http_request(p.admin_url, "POST", "/stats/reset")[0] == 200
    assert through.update_one({"orderId": "R2"}, {"$inc": {"n": 1}}).matched_count == 1

    stats = get_stats(p.admin_url)
    row = update_row(stats)
    assert row["count"] == 1
    assert row["rewrite"]["applied"] == 1 and row["rewrite"]["fallbacks"] == 0
    assert row["rewrite"]["confirmingReads"] == 1
    # The read and the rewritten write, both to the customer's shard. Before: the write alone.
    assert row["targeting"]["single"] == 2 and row["hostsTargeted"]["oneShard"] == 2, row
    shards = orders_shards(stats)
    reached = {name: s for name, s in shards.items() if s["ops"]}
    assert len(reached) == 1, shards
    (only,) = reached.values()
    assert only["ops"] == 2 and only["targetedOps"] == 2 and only["writes"] == 1, only
    assert sum(stats["shards"][i]["ops"] for i in range(len(stats["shards"]))) == 2
