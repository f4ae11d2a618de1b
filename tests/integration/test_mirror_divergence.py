"""Mirroring to a second FerretDB: no divergence when both hold the same data; divergences
detected, counted per shape and shown without values when the shadow's data differs."""
from __future__ import annotations

import pymongo
import pytest

from mirror_helpers import get_metrics, mirror_args, mirror_stats, wait_mirror

pytestmark = pytest.mark.needs_proxy


def seed(uri: str, extra: list[dict] | None = None) -> None:
    c = pymongo.MongoClient(uri)
    docs = [{"_id": i, "customerId": f"C{i % 7}", "total": i * 10} for i in range(300)]
    c.shop.orders.insert_many(docs + (extra or []))
    c.close()


def workload(uri: str) -> int:
    """Reads through the proxy; returns how many operations are compared (cursors count once)."""
    c = pymongo.MongoClient(uri)
    coll = c.shop.orders
    n = 0
    for k in range(7):
        assert len(list(coll.find({"customerId": f"C{k}"}))) > 0
        n += 1
    assert len(list(coll.find({}, batch_size=50))) >= 300  # several getMores: one comparison
    n += 1
    coll.count_documents({"total": {"$gte": 100}})  # aggregate under the hood
    n += 1
    coll.distinct("customerId")
    n += 1
    list(coll.aggregate([{"$match": {"total": {"$lt": 500}}}, {"$group": {"_id": "$customerId", "n": {"$sum": 1}}}]))
    n += 1
    c.close()
    return n


def test_same_data_no_divergence(ferretdb_factory, proxy):
    primary, shadow = ferretdb_factory(), ferretdb_factory()
    seed(primary.uri)
    seed(shadow.uri)
    px = proxy(primary.uri, *mirror_args(shadow.uri), admin=True)
    n = workload(px.uri)
    m = wait_mirror(px.admin_url, lambda m: m["counters"]["compared"] >= n)
    assert m["counters"]["divergent"] == 0, m
    assert m["counters"]["shadowErrors"] == 0, m
    assert m["counters"]["droppedQueueFull"] == 0, m
    assert m["mode"] == "reads"
    find_all = [s for s in m["shapes"] if s["command"] == "find" and s["shape"] == "{}"]
    assert find_all and find_all[0]["compared"] == 1, m["shapes"]  # getMores folded into one comparison
    assert find_all[0]["shadowLatency"]["count"] == 1


def test_divergence_detected_and_counted_per_shape(ferretdb_factory, proxy):
    primary, shadow = ferretdb_factory(), ferretdb_factory()
    seed(primary.uri)
    seed(shadow.uri, extra=[{"_id": 1000, "customerId": "C3", "total": 5}])
    px = proxy(primary.uri, *mirror_args(shadow.uri), admin=True)
    n = workload(px.uri)
    m = wait_mirror(px.admin_url, lambda m: m["counters"]["compared"] >= n)
    assert m["counters"]["divergent"] >= 3, m  # C3's find, find-all, count, the aggregate
    assert m["divergences"]["docCount"] >= 2, m
    shapes = {(s["command"], s["shape"]): s for s in m["shapes"]}
    eq = shapes[("find", '{"customerId":"<string>"}')]
    assert eq["divergent"] == 1 and eq["compared"] == 7, eq
    example = eq["examples"][0]
    assert example["kinds"] == ["docCount"]
    assert "C3" not in str(m), "values must not appear unless mirror.record_values is set"
    assert "command" not in example
    metrics = get_metrics(px.admin_url)
    assert 'shardscope_mirror_requests_total{outcome="mirrored"}' in metrics
    assert "shardscope_mirror_shape_divergences_total{" in metrics


def test_record_values_keeps_examples_with_values(ferretdb_factory, proxy):
    primary, shadow = ferretdb_factory(), ferretdb_factory()
    seed(primary.uri)
    seed(shadow.uri, extra=[{"_id": 1000, "customerId": "C3", "total": 5}])
    px = proxy(primary.uri, *mirror_args(shadow.uri, record_values=True), admin=True)
    c = pymongo.MongoClient(px.uri)
    list(c.shop.orders.find({"customerId": "C3"}))
    m = wait_mirror(px.admin_url, lambda m: m["counters"]["divergent"] >= 1)
    ex = [s for s in m["shapes"] if s["divergent"]][0]["examples"][0]
    assert ex["command"]["filter"] == {"customerId": "C3"}


def test_reads_mode_skips_writes_all_mode_mirrors_them(ferretdb_factory, proxy):
    primary, shadow = ferretdb_factory(), ferretdb_factory()
    px = proxy(primary.uri, *mirror_args(shadow.uri), admin=True)
    c = pymongo.MongoClient(px.uri)
    c.shop.items.insert_many([{"_id": i} for i in range(10)])
    m = wait_mirror(px.admin_url, lambda m: m["counters"]["skippedWrites"] >= 1)
    assert pymongo.MongoClient(shadow.uri).shop.items.count_documents({}) == 0
    c.close()

    px2 = proxy(primary.uri, *mirror_args(shadow.uri, mode="all"), admin=True)
    c2 = pymongo.MongoClient(px2.uri)
    c2.shop.more.insert_many([{"_id": i, "v": i} for i in range(10)])
    c2.shop.more.update_many({"v": {"$gte": 5}}, {"$set": {"big": True}})
    c2.shop.more.delete_one({"_id": 0})
    m = wait_mirror(px2.admin_url, lambda m: m["counters"]["compared"] >= 3)
    assert m["counters"]["divergent"] == 0, m
    s = pymongo.MongoClient(shadow.uri).shop.more
    assert s.count_documents({}) == 9 and s.count_documents({"big": True}) == 5


def test_namespace_filter(ferretdb_factory, proxy):
    primary, shadow = ferretdb_factory(), ferretdb_factory()
    seed(primary.uri)
    px = proxy(primary.uri, *mirror_args(shadow.uri, namespaces="other.*"), admin=True)
    c = pymongo.MongoClient(px.uri)
    list(c.shop.orders.find({"customerId": "C1"}))
    m = wait_mirror(px.admin_url, lambda m: m["counters"]["filteredNamespace"] >= 1)
    assert m["counters"]["mirrored"] == 0
