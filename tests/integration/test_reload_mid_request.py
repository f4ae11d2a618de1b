"""A routing reload while a request is on its way: the request is counted against the table it was
routed with, on every surface.

A streamed insert (issue 29) is targeted against the table in force when its head arrived, one
document at a time as they pass; a reload that reorders the shards' list before its last byte
arrives must neither end the connection nor file the insert under the new table's shard at the
old position: /stats, /metrics and the namespace's per-shard row all name the shard that owns
the documents' chunk.
"""
from __future__ import annotations

import json
import signal
import struct
import time
import urllib.request

import bson
import pymongo
import pytest

from stats_helpers import wait_for
from wire_peer import OP_MSG, RawClient, header, next_request_id

pytestmark = pytest.mark.needs_proxy


def _get_json(px, path: str) -> dict:
    with urllib.request.urlopen(px.admin_url + path, timeout=10) as r:
        return json.load(r)


def _routing(shards: list[str], owner_of_low: str) -> dict:
    """shop.orders on {customerId: 1}: customers below C5000 on `owner_of_low`, the rest on the other shard."""
    other = next(s for s in shards if s != owner_of_low)
    key = lambda v: {"customerId": v}  # noqa: E731
    return {"shards": shards, "collections": [{
        "ns": "shop.orders", "key": {"customerId": 1}, "unique": False, "defaultCollation": None,
        "chunks": [{"min": key({"$minKey": 1}), "max": key("C5000"), "shard": owner_of_low},
                   {"min": key("C5000"), "max": key({"$maxKey": 1}), "shard": other}]}]}


def _insert_frame(docs: list[dict]) -> bytes:
    body = bson.encode({"insert": "orders", "$db": "shop", "ordered": True})
    seq = b"documents\x00" + b"".join(bson.encode(d) for d in docs)
    payload = struct.pack("<I", 0) + b"\x00" + body + b"\x01" + struct.pack("<i", 4 + len(seq)) + seq
    return header(16 + len(payload), next_request_id(), 0, OP_MSG) + payload


def test_a_streamed_insert_spanning_a_reload_counts_under_the_table_it_was_routed_with(ferretdb, proxy, workdir):
    before, after = workdir / "before.json", workdir / "after.json"
    # The same owner (shardA) before and after; only the list's order changes, so position 0 is
    # shardA before the reload and shardB after it.
    before.write_text(json.dumps(_routing(["shardA", "shardB"], "shardA")))
    after.write_text(json.dumps(_routing(["shardB", "shardA"], "shardA")))
    config = workdir / "shardscope.yaml"
    config.write_text(f"routing:\n  file: {before}\n")
    px = proxy(ferretdb.uri, "--config", str(config), admin=True)
    with pymongo.MongoClient(ferretdb.uri) as direct:
        direct.shop.orders.delete_many({"_id": {"$in": [9001, 9002]}})
    docs = [{"_id": 9000 + i, "customerId": "C0100", "pad": "p" * 1_200_000} for i in (1, 2)]
    frame = _insert_frame(docs)
    assert len(frame) > (1 << 20)  # streamed: at least 1 MiB
    with RawClient.for_address(px.address, timeout=30) as rc:
        rc.hello()
        half = len(frame) // 2  # the head and part of the first document
        rc.send(frame[:half])
        time.sleep(0.3)  # let the proxy decode the head against the first table (a sync point, not a check)
        config.write_text(f"routing:\n  file: {after}\n")
        px.process.send_signal(signal.SIGHUP)
        assert wait_for(lambda: _get_json(px, "/stats")["routing"]["generation"] == 2)
        rc.send(frame[half:])
        reply = rc.recv_message(timeout=30)
        assert reply is not None, "the proxy closed the connection of an insert that spanned a reload"
        assert reply.effective.body.get("ok") == 1.0 and reply.effective.body.get("n") == 2, reply.effective.body
    with pymongo.MongoClient(ferretdb.uri) as direct:
        assert direct.shop.orders.count_documents({"_id": {"$in": [9001, 9002]}}) == 2
    stats = _get_json(px, "/stats")
    inserts = [s for s in stats["shapes"] if s["ns"] == "shop.orders" and s["command"] == "insert"]
    # Targeted by its documents' key (before: "internal error while targeting", the folded documents
    # judged against the new table's collection).
    assert len(inserts) == 1 and inserts[0]["targeting"]["single"] == 1, inserts
    ops = {s["name"]: s["ops"] for s in stats["shards"]}
    assert ops == {"shardA": 1, "shardB": 0}, ops
    with urllib.request.urlopen(px.admin_url + "/metrics", timeout=10) as r:
        metrics = r.read().decode()
    assert 'shardscope_shard_ops_total{shard="shardA"} 1\n' in metrics, metrics
    assert 'shardscope_shard_ops_total{shard="shardB"} 0\n' in metrics, metrics
    assert px.alive()
