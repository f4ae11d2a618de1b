"""What a client teaches the lookup rewrite, and what it asks of it, is bounded (issue 28, items 2, 3).

Real pymongo (and raw OP_MSG frames for the hostile request) through build/shardscope to FerretDB.

2. The mapping is bounded in bytes. Before, it was bounded in entries only: 3,000 orders with 16 KB
   orderId and customerId kept +187 MiB after the client left (64 KB per entry). Now a long
   lookup key is kept as a digest, an added value over 512 bytes is not learned (counted), and a
   rule's `max_bytes=` bounds what it holds; `bytes` is shown in /rewrite and /metrics.
3. The rewrite of a `$in` is linear and charged to the request's analysis budget. Before, 20,000
   known orders over 8,000 customers in one `$in` held the event loop 410-640 ms (values x
   customers); past the budget the command is now sent as written and counted under its reason.
   The stall check compares a healthy client's pings with a control frame of the same size that
   nothing analyses (tests/support/latency.py), never with an absolute time.
"""
from __future__ import annotations

import json
import os
import socket
import struct
import time
import urllib.request

import bson
import pymongo
import pytest
from bson.son import SON

from harness import REPO_ROOT
from latency import assert_action_does_not_stall

pytestmark = pytest.mark.needs_proxy

SANITIZED = "ASAN_OPTIONS" in os.environ or "TSAN_OPTIONS" in os.environ
MIB = 1 << 20
OP_MSG = 2013
ROUTING = str(REPO_ROOT / "tests" / "data" / "routing" / "orders_6shards.json")
# One document per orderId in every test here (as a unique index would keep it, and as the rule
# assumes by default: docs/rewrite.md).
RULE = "shop.orders: orderId -> customerId"
OVER_BUDGET = "too many lookup values to map (over the per-request analysis budget): sent as written"


def _rss(pid: int) -> int:
    time.sleep(1.0)  # settled: the client has left
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) * 1024


def _admin(px, path: str, method: str = "GET"):
    req = urllib.request.Request(px.admin_url + path, method=method)
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read().decode()


def _rule(px) -> dict:
    return next(r for r in json.loads(_admin(px, "/rewrite")) if r["ns"] == "shop.orders")


def _metric(px, name: str) -> float:
    for line in _admin(px, "/metrics").splitlines():
        if line.startswith(name + '{ns="shop.orders"}'):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


def _warm(px) -> int:
    """RSS once pools, threads and pages exist: what the test's inputs add is measured from here."""
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=20_000) as c:
        c.shop.orders.insert_one({"_id": "warm", "orderId": "warm", "customerId": "warm"})
        c.shop.orders.find_one({"orderId": "warm"})
    _admin(px, "/metrics")
    _admin(px, "/rewrite")
    return _rss(px.process.pid)


# ---- item 2: the mapping is bounded in bytes ------------------------------------------------------

@pytest.mark.both_allocators
@pytest.mark.skipif(SANITIZED, reason="a sanitizer's quarantine keeps freed memory resident")
def test_orders_with_16_kb_ids_leave_no_memory_behind(ferretdb, proxy):
    px = proxy(ferretdb.uri, "--rewrite-rule", RULE, "--evaluation.enabled", "false", admin=True)
    before = _warm(px)
    n = 1_000  # x (16 KB + 16 KB): +62 MiB kept before
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=20_000) as c:
        docs = [{"_id": i, "orderId": f"{i:05d}" + "o" * 16_384, "customerId": f"{i:05d}" + "c" * 16_384}
                for i in range(n)]
        for i in range(0, n, 100):
            c.shop.orders.insert_many(docs[i:i + 100])
        # Lookups by a long id still find their order (sent as written: nothing was learned).
        assert c.shop.orders.find_one({"orderId": docs[7]["orderId"]}) == docs[7]
    grown = _rss(px.process.pid) - before
    mapping = _rule(px)["mapping"]
    assert mapping["valuesTooLong"] >= n, mapping  # the inserts (and the find's reply, also learned from)
    assert mapping["size"] <= 1 and mapping["bytes"] < 64 * 1024, mapping
    assert grown < 8 * MIB, f"+{grown / MIB:.1f} MiB kept after 1,000 orders with 16 KB ids left"


@pytest.mark.both_allocators
@pytest.mark.skipif(SANITIZED, reason="a sanitizer's quarantine keeps freed memory resident")
def test_mapping_bytes_stay_within_the_configured_bound(ferretdb, proxy):
    bound = 2 * MIB
    px = proxy(ferretdb.uri, "--rewrite-rule", f"{RULE} max_bytes=2m", "--evaluation.enabled", "false", admin=True)
    before = _warm(px)
    # 20,000 orders of 60-byte ids, each with its own 300-byte customer: ~20 MB of mapping unbounded.
    n = 20_000
    order = lambda i: f"O{i:06d}".ljust(60, "o")  # noqa: E731
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=20_000) as c:
        docs = [{"_id": i, "orderId": order(i), "customerId": f"C{i:06d}".ljust(300, "c")} for i in range(n)]
        for i in range(0, n, 1_000):
            c.shop.orders.insert_many(docs[i:i + 1_000])
        peak = _rule(px)["mapping"]
        # The most recent orders are still rewritten, and answered as written.
        applied = _rule(px)["applied"]
        assert c.shop.orders.find_one({"orderId": order(n - 1)}) == docs[n - 1]
        assert _rule(px)["applied"] == applied + 1
        # An evicted one is sent as written, with the same answer.
        assert c.shop.orders.find_one({"orderId": order(0)}) == docs[0]
    grown = _rss(px.process.pid) - before
    mapping = _rule(px)["mapping"]
    assert mapping["maxBytes"] == bound
    assert peak["bytes"] <= bound and mapping["bytes"] <= bound, (peak, mapping)
    assert mapping["evicted"] > 0 and mapping["size"] < n, mapping
    assert _metric(px, "shardscope_rewrite_mapping_bytes") == mapping["bytes"]
    assert grown < bound + 8 * MIB, f"+{grown / MIB:.1f} MiB kept with a {bound / MIB:.0f} MiB mapping bound"

    _admin(px, "/rewrite/reset", "POST")
    assert _rule(px)["mapping"]["bytes"] == 0


# ---- item 3: the $in rewrite is linear and within the request's budget ----------------------------

def _op_msg(body: bytes) -> bytes:
    payload = struct.pack("<I", 0) + b"\x00" + body
    return struct.pack("<iiii", 16 + len(payload), 1, 0, OP_MSG) + payload


def _send(port: int, frame: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        s.sendall(frame)
        s.recv(16)


def _control_like(frame: bytes) -> bytes:
    """A frame of the same size that nothing analyses: a ping with one long comment."""
    pad = len(frame) - len(_op_msg(bson.encode(SON([("ping", 1), ("comment", ""), ("$db", "admin")]))))
    return _op_msg(bson.encode(SON([("ping", 1), ("comment", "x" * max(0, pad)), ("$db", "admin")])))


def _learn(px, n: int, customers: int) -> list[dict]:
    docs = [{"_id": i, "orderId": f"O{i:07d}", "customerId": f"C{i % customers:06d}"} for i in range(n)]
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=20_000) as c:
        for i in range(0, n, 2_000):
            c.shop.orders.insert_many(docs[i:i + 2_000])
    return docs


def test_in_of_20000_known_orders_is_sent_as_written_without_holding_the_loop(ferretdb, proxy):
    px = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", RULE, "--threads", "1", admin=True)
    docs = _learn(px, 20_000, 8_000)  # the case
    assert _rule(px)["mapping"]["size"] == 20_000
    # batchSize -1: FerretDB refuses it at once, so only the proxy's own work on the request counts.
    frame = _op_msg(bson.encode(SON([("find", "orders"), ("filter", {"orderId": {"$in": [d["orderId"] for d in docs]}}),
                                     ("batchSize", -1), ("$db", "shop")])))
    sends = 3
    assert_action_does_not_stall(px.uri, lambda: [_send(px.port, frame) for _ in range(sends)],
                                 lambda: _send(px.port, _control_like(frame)), "three $in of 20,000 known orders")
    rule = _rule(px)
    assert rule["skipped"].get(OVER_BUDGET) == sends, rule["skipped"]
    assert rule["applied"] == 0, rule

    # Within the budget a $in is rewritten, and answers what the client asked for.
    wanted = [d["orderId"] for d in docs[:1_000:3]]
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=20_000) as c:
        # Sorted by _id: a batch size keeps the first documents, so their order must be fixed.
        got = list(c.shop.orders.find({"orderId": {"$in": wanted}}, batch_size=1_000).sort("_id", 1))
    assert sorted(d["orderId"] for d in got) == sorted(wanted)
    rule = _rule(px)
    assert rule["applied"] == 1 and sum(rule["fallbacks"].values()) == 0, rule
