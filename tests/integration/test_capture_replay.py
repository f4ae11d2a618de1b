"""Capture a driver workload through the proxy, replay it onto a fresh FerretDB: the final data
equals the original run's. A truncated or corrupt capture is refused with the offset where it
breaks, and nothing is replayed."""
from __future__ import annotations

import re
import subprocess

import pymongo
import pytest
from bson import ObjectId

from mirror_helpers import dump, get_stats

pytestmark = pytest.mark.needs_proxy


def driver_workload(uri: str) -> None:
    c = pymongo.MongoClient(uri, retryWrites=True)
    shop = c.shop
    shop.orders.insert_many([{"_id": i, "customerId": f"C{i % 5}", "total": i, "items": [i, i + 1]} for i in range(200)])
    shop.orders.insert_one({"_id": ObjectId(), "customerId": "C9", "note": "oid"})
    shop.orders.update_many({"customerId": "C1"}, {"$inc": {"total": 1000}, "$set": {"vip": True}})
    shop.orders.update_one({"_id": 7}, {"$push": {"items": 99}})
    shop.orders.replace_one({"_id": 8}, {"customerId": "C3", "replaced": True})
    shop.orders.delete_many({"total": {"$lt": 20}})
    shop.orders.find_one_and_update({"_id": 50}, {"$set": {"claimed": True}})
    shop.orders.update_one({"_id": 5000}, {"$set": {"upserted": True}}, upsert=True)
    # Reads with cursors (getMore ids differ on replay and must be mapped).
    assert len(list(shop.orders.find({}, batch_size=7))) > 100
    shop.customers.insert_many([{"_id": f"C{i}", "tier": i % 2} for i in range(10)])
    shop.customers.create_index("tier")
    shop.scratch.insert_one({"x": 1})
    shop.scratch.drop()
    c.close()


def run_replay(binary, *args, timeout=120):
    return subprocess.run([str(binary), "replay", *map(str, args)], capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def captured(ferretdb_factory, proxy, workdir):
    original = ferretdb_factory()
    cap = workdir / "traffic.cap"
    px = proxy(original.uri, "--capture.file", str(cap), "--capture.mode", "full", admin=True)
    driver_workload(px.uri)
    stats = get_stats(px.admin_url)
    assert "capture" in stats, sorted(stats)
    px.stop()  # flushes the capture
    return original, cap


def test_replay_reproduces_the_data(captured, ferretdb_factory, shardscope_binary):
    original, cap = captured
    fresh = ferretdb_factory()
    r = run_replay(shardscope_binary, cap, "--upstream", fresh.uri, "--speed", "4")
    assert r.returncode == 0, r.stdout + r.stderr
    want = dump(pymongo.MongoClient(original.uri))
    got = dump(pymongo.MongoClient(fresh.uri))
    assert want.keys() == got.keys()
    assert want == got


def test_truncated_capture_is_refused_with_offset(captured, ferretdb_factory, shardscope_binary, workdir):
    _, cap = captured
    data = cap.read_bytes()
    cut = workdir / "cut.cap"
    cut.write_bytes(data[: len(data) * 2 // 3])
    fresh = ferretdb_factory()
    r = run_replay(shardscope_binary, cut, "--upstream", fresh.uri)
    assert r.returncode == 1, r.stdout + r.stderr  # a failed operation (README), not a usage error
    m = re.search(r"truncated record.* at offset (\d+)", r.stderr)
    assert m, r.stderr
    assert 0 < int(m.group(1)) < len(data) * 2 // 3
    assert dump(pymongo.MongoClient(fresh.uri)) == {}  # nothing was replayed


def test_corrupt_capture_is_refused_with_offset(captured, ferretdb_factory, shardscope_binary, workdir):
    _, cap = captured
    data = bytearray(cap.read_bytes())
    at = len(data) // 2
    data[at] ^= 0xFF
    bad = workdir / "bad.cap"
    bad.write_bytes(bytes(data))
    fresh = ferretdb_factory()
    r = run_replay(shardscope_binary, bad, "--upstream", fresh.uri)
    assert r.returncode == 1, r.stdout + r.stderr  # a failed operation (README), not a usage error
    m = re.search(r"at offset (\d+)", r.stderr)
    assert m, r.stderr
    assert int(m.group(1)) <= at  # the record holding the flipped byte
    assert dump(pymongo.MongoClient(fresh.uri)) == {}


def test_redacted_capture_has_no_values_and_feeds_evaluation(ferretdb, proxy, workdir, shardscope_binary):
    cap = workdir / "redacted.cap"
    px = proxy(ferretdb.uri, "--capture.file", str(cap))  # redacted is the default
    c = pymongo.MongoClient(px.uri)
    c.shop.orders.insert_many([{"_id": i, "customerId": f"secret-customer-{i % 5}"} for i in range(50)])
    list(c.shop.orders.find({"customerId": "secret-customer-3"}))
    c.close()
    px.stop()
    raw = cap.read_bytes()
    assert b"secret-customer" not in raw
    assert b"shop.orders" in raw
    r = run_replay(shardscope_binary, cap, "--validate")
    assert r.returncode == 0 and '"mode": "redacted"' in r.stdout, r.stdout + r.stderr
    r = run_replay(shardscope_binary, cap, "--upstream", ferretdb.uri)
    assert r.returncode != 0 and "redacted" in r.stderr
    r = run_replay(shardscope_binary, cap, "--evaluate", "--json")
    assert r.returncode == 0, r.stderr
    assert "shop.orders" in r.stdout
