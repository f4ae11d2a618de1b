"""Lookup rewrite (issue 5): orderId lookups gain customerId from a learned mapping, so mongos
would target one shard, without the client seeing any difference.

Real pymongo through build/shardscope to FerretDB, routed with orders_6shards.json
(shop.orders on {customerId: 1, orderDate: 1} over six shards). Results through a proxy with the
rule are compared with a proxy without it, on the same data.
"""
from __future__ import annotations

import datetime as dt
import time
import json
import subprocess
import urllib.request

import pymongo
import pytest

from harness import REPO_ROOT

ROUTING = str(REPO_ROOT / "tests" / "data" / "routing" / "orders_6shards.json")
RULE = "shop.orders: orderId -> customerId"
SHAPE_BY_ORDER_ID = '{"orderId":"<string>"}'


def orders(n=120):
    base = dt.datetime(2026, 1, 1)
    return [{"_id": i, "orderId": "O%05d" % i, "customerId": "C%04d" % (100 + (i * 37) % 9000),
             "orderDate": base + dt.timedelta(hours=i), "status": "new", "total": i} for i in range(n)]


def admin_json(proxy, path):
    with urllib.request.urlopen(proxy.admin_url + path, timeout=10) as r:
        return json.load(r)


def shape_entry(proxy, shape):
    stats = admin_json(proxy, "/stats")
    found = [s for s in stats["shapes"] if s["ns"] == "shop.orders" and s["shape"] == shape and s["command"] == "find"]
    assert found, [s["shape"] for s in stats["shapes"]]
    return found[0]


@pytest.fixture
def pair(ferretdb, proxy):
    """(client through a proxy with the rule, its proxy, client through a proxy without it)."""
    with_rule = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", RULE, admin=True)
    without = proxy(ferretdb.uri, "--routing", ROUTING, admin=True)
    a = pymongo.MongoClient(with_rule.uri, serverSelectionTimeoutMS=10000)
    b = pymongo.MongoClient(without.uri, serverSelectionTimeoutMS=10000)
    yield a, with_rule, b, without
    a.close()
    b.close()


def test_lookups_return_identical_documents_and_become_single_shard(pair):
    a, with_rule, b, without = pair
    a.shop.orders.insert_many(orders())  # inserts through the sidecar teach the mapping
    for i in range(0, 120, 7):
        oid = "O%05d" % i
        assert a.shop.orders.find_one({"orderId": oid}) == b.shop.orders.find_one({"orderId": oid})
        assert a.shop.orders.count_documents({"orderId": oid}) == b.shop.orders.count_documents({"orderId": oid}) == 1
    assert list(a.shop.orders.aggregate([{"$match": {"orderId": "O00003"}}, {"$project": {"total": 1}}])) == \
        list(b.shop.orders.aggregate([{"$match": {"orderId": "O00003"}}, {"$project": {"total": 1}}]))
    ids = ["O00001", "O00002", "O00050"]
    assert sorted(d["_id"] for d in a.shop.orders.find({"orderId": {"$in": ids}})) == [1, 2, 50]

    lookups = len(range(0, 120, 7))
    on = shape_entry(with_rule, SHAPE_BY_ORDER_ID)
    off = shape_entry(without, SHAPE_BY_ORDER_ID)
    assert off["targeting"]["broadcast"] == lookups and off["targeting"]["single"] == 0
    assert on["targeting"]["single"] == lookups and on["targeting"]["broadcast"] == 0
    assert on["rewrite"]["applied"] == lookups
    assert on["rewrite"]["targetingBefore"]["broadcast"] == lookups
    assert on["rewrite"]["fallbacks"] == 0
    assert on["shardsTouched"]["max"] == 1 and off["shardsTouched"]["max"] == 6

    rule = admin_json(with_rule, "/rewrite")[0]
    assert rule["mapping"]["size"] == 120
    assert rule["targetingAfter"]["single"] >= lookups + 1
    assert rule["fallbacks"]["empty_read"] == 0


def test_stale_mapping_still_returns_the_right_document_and_is_corrected(pair, ferretdb):
    a, with_rule, b, _ = pair
    a.shop.orders.insert_many(orders(20))
    assert a.shop.orders.find_one({"orderId": "O00007"})["customerId"] == "C0359"
    # Another client, not behind this sidecar, moves the order to another customer.
    direct = pymongo.MongoClient(ferretdb.uri)
    direct.shop.orders.update_one({"orderId": "O00007"}, {"$set": {"customerId": "C8888"}})
    got = a.shop.orders.find_one({"orderId": "O00007"})
    assert got == b.shop.orders.find_one({"orderId": "O00007"})
    assert got["customerId"] == "C8888"
    rule = admin_json(with_rule, "/rewrite")[0]
    assert rule["fallbacks"]["empty_read"] == 1
    assert rule["mapping"]["corrected"] >= 1
    # The corrected mapping targets again, with no further fallback.
    assert a.shop.orders.find_one({"orderId": "O00007"})["customerId"] == "C8888"
    assert admin_json(with_rule, "/rewrite")[0]["fallbacks"]["empty_read"] == 1
    direct.close()


def run_writes(client):
    coll = client.shop.orders
    coll.insert_many(orders(40))
    coll.update_one({"orderId": "O00003"}, {"$set": {"status": "paid"}})
    coll.update_many({"orderId": "O00004"}, {"$inc": {"total": 5}})
    coll.delete_one({"orderId": "O00005"})
    coll.delete_many({"orderId": {"$in": ["O00006", "O00007"]}})
    coll.find_one_and_update({"orderId": "O00008"}, {"$set": {"status": "shipped"}})
    # The customer of an order changes through the sidecar: the mapping must follow.
    coll.update_one({"orderId": "O00009"}, {"$set": {"customerId": "C7777"}})
    coll.update_one({"orderId": "O00009"}, {"$set": {"status": "moved"}})
    return sorted(coll.find({}, {"_id": 1, "customerId": 1, "status": 1, "total": 1}), key=lambda d: d["_id"])


def test_writes_have_the_same_effect_with_and_without_the_rule(ferretdb_factory, proxy):
    f1, f2 = ferretdb_factory(), ferretdb_factory()
    with_rule = proxy(f1.uri, "--routing", ROUTING, "--rewrite-rule", RULE, admin=True)
    without = proxy(f2.uri, "--routing", ROUTING)
    a = pymongo.MongoClient(with_rule.uri)
    b = pymongo.MongoClient(without.uri)
    assert run_writes(a) == run_writes(b)
    rule = admin_json(with_rule, "/rewrite")[0]
    assert rule["applied"] >= 4  # update_one, update_many, delete_one, findAndModify (no txnNumber on a standalone)
    assert rule["fallbacks"]["no_match_write"] == 0
    # After the customer change, the status update was not sent with the old customer.
    doc = a.shop.orders.find_one({"orderId": "O00009"})
    assert doc["customerId"] == "C7777" and doc["status"] == "moved"


def test_write_falls_back_when_the_mapping_is_stale(ferretdb, proxy):
    p = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", RULE, admin=True)
    a = pymongo.MongoClient(p.uri)
    a.shop.orders.insert_many(orders(10))
    pymongo.MongoClient(ferretdb.uri).shop.orders.update_one({"orderId": "O00002"}, {"$set": {"customerId": "C0001"}})
    result = a.shop.orders.update_one({"orderId": "O00002"}, {"$inc": {"total": 1}})
    assert result.matched_count == 1 and result.modified_count == 1
    assert pymongo.MongoClient(ferretdb.uri).shop.orders.find_one({"orderId": "O00002"})["total"] == 3
    assert admin_json(p, "/rewrite")[0]["fallbacks"]["no_match_write"] == 1


def test_mapping_file_loads_and_bad_lines_are_refused_with_the_line_number(ferretdb, proxy, workdir, shardscope_binary):
    good = workdir / "map.jsonl"
    good.write_text('{"orderId": "O00001", "customerId": "C0137"}\n\n{"orderId": "O00002", "customerId": "C0174"}\n')
    p = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", f"{RULE} file={good}", admin=True)
    assert admin_json(p, "/rewrite")[0]["mapping"]["size"] == 2

    bad = workdir / "bad.jsonl"
    bad.write_text('{"orderId": "O1", "customerId": "C1"}\n{"orderId": "O2"}\n')
    run = subprocess.run([str(shardscope_binary), "proxy", "--listen", "127.0.0.1:0", "--upstream", ferretdb.uri,
                          "--rewrite-rule", f"{RULE} file={bad}"], capture_output=True, text=True, timeout=20)
    assert run.returncode == 2
    assert f"{bad}:2" in run.stderr and "customerId" in run.stderr

    broken = workdir / "broken.jsonl"
    broken.write_text('{"orderId": "O1", "customerId": "C1"}\n{"orderId": \n')
    run = subprocess.run([str(shardscope_binary), "proxy", "--listen", "127.0.0.1:0", "--upstream", ferretdb.uri,
                          "--rewrite-rule", f"{RULE} file={broken}"], capture_output=True, text=True, timeout=20)
    assert run.returncode == 2 and f"{broken}:2: not a JSON document" in run.stderr


def test_invalid_rules_are_refused_at_start(ferretdb, shardscope_binary):
    for spec, needle in [("orders: orderId -> customerId", "db.collection"),
                         ("shop.orders: orderId", "expected"),
                         ("shop.orders: orderId -> customerId capacity=0", "capacity"),
                         ("shop.orders: orderId -> customerId colour=red", "unknown option")]:
        run = subprocess.run([str(shardscope_binary), "proxy", "--upstream", ferretdb.uri, "--rewrite-rule", spec],
                             capture_output=True, text=True, timeout=20)
        assert run.returncode == 2, spec
        assert "rewrite.rules" in run.stderr and needle in run.stderr, run.stderr


def test_mapping_collection_is_shared_between_sidecars(ferretdb, proxy):
    rule = f"{RULE} collection=shardscope.orderCustomers"
    first = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", rule, admin=True)
    second = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", rule, admin=True)
    pymongo.MongoClient(first.uri).shop.orders.insert_many(orders(30))  # teaches the first sidecar
    direct = pymongo.MongoClient(ferretdb.uri)
    deadline = time.time() + 10
    while direct.shardscope.orderCustomers.count_documents({}) < 30 and time.time() < deadline:
        time.sleep(0.1)
    assert direct.shardscope.orderCustomers.find_one({"_id": "O00004"})["customerId"] == "C0248"

    b = pymongo.MongoClient(second.uri)
    # The second sidecar has seen no insert: its first lookup misses (broadcast) and reads through...
    assert b.shop.orders.find_one({"orderId": "O00004"})["_id"] == 4
    deadline = time.time() + 10
    while admin_json(second, "/rewrite")[0]["mappingCollection"]["found"] < 1 and time.time() < deadline:
        time.sleep(0.1)
    # ...and the next one is targeted.
    assert b.shop.orders.find_one({"orderId": "O00004"})["_id"] == 4
    r = admin_json(second, "/rewrite")[0]
    assert r["applied"] == 1 and r["mappingCollection"]["found"] >= 1


def test_unreachable_mapping_collection_degrades_to_no_rewrite(ferretdb, proxy):
    from harness import free_port
    dead = f"mongodb://127.0.0.1:{free_port()}/"
    p = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", f"{RULE} collection=s.m uri={dead}", admin=True)
    client = pymongo.MongoClient(p.uri)
    pymongo.MongoClient(ferretdb.uri).shop.orders.insert_many(orders(5))  # behind the sidecar's back: no mapping
    for _ in range(3):
        assert client.shop.orders.find_one({"orderId": "O00001"})["_id"] == 1  # never an error to the client
    deadline = time.time() + 15
    while admin_json(p, "/rewrite")[0]["mappingCollection"]["errors"] < 1 and time.time() < deadline:
        time.sleep(0.2)
    r = admin_json(p, "/rewrite")[0]
    assert r["mappingCollection"]["errors"] >= 1
    # Without the collection the sidecar still learns from replies: the first lookup broadcast and
    # taught the mapping, the next two were targeted.
    assert r["applied"] == 2 and r["fallbacks"]["empty_read"] == 0


def test_explain_shows_what_a_rule_would_do(shardscope_binary, workdir):
    mapping = workdir / "map.jsonl"
    mapping.write_text('{"orderId": "O0000042", "customerId": "C0042"}\n')
    base = [str(shardscope_binary), "explain", "--routing", ROUTING, "--rewrite-rule", f"{RULE} file={mapping}"]
    run = subprocess.run(base + ["--command", '{"find": "orders", "filter": {"orderId": "O0000042"}, "$db": "shop"}'],
                         capture_output=True, text=True, timeout=20)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["targeting"] == "single" and out["rewrite"]["applied"] is True
    assert out["rewrite"]["before"]["targeting"] == "broadcast" and len(out["rewrite"]["before"]["shards"]) == 6
    assert out["rewrite"]["command"]["filter"] == {"orderId": "O0000042", "customerId": "C0042"}
    run = subprocess.run(base + ["--command", '{"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"}'],
                         capture_output=True, text=True, timeout=20)
    out = json.loads(run.stdout)
    assert out["targeting"] == "broadcast" and out["rewrite"]["applied"] is False
    assert "no mapping" in out["rewrite"]["skipped"]
