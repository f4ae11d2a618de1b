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
from bson.int64 import Int64
import pytest

from harness import REPO_ROOT

ROUTING = str(REPO_ROOT / "tests" / "data" / "routing" / "orders_6shards.json")
RULE = "shop.orders: orderId -> customerId"
# orders() holds one document per orderId, as a unique index on it would: the rule's default
# assumption (docs/rewrite.md), so findOne / limit 1 of an order is rewritten with no option given.
SHAPE_BY_ORDER_ID = '{"orderId":"<string>"}'


def orders(n=120):
    base = dt.datetime(2026, 1, 1)
    return [{"_id": i, "orderId": "O%05d" % i, "customerId": "C%04d" % (100 + (i * 37) % 9000),
             "orderDate": base + dt.timedelta(hours=i), "status": "new", "total": i} for i in range(n)]


def find_order(coll, order_id, *projection):
    """The order's document by a find without a limit, which the rewrite takes whatever the rule
    assumes (find_one sends limit: 1: rewritten while one document per order id holds)."""
    docs = list(coll.find({"orderId": order_id}, *projection))
    assert len(docs) <= 1, docs
    return docs[0] if docs else None


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
    assert find_order(b.shop.orders, "O00004")["_id"] == 4
    deadline = time.time() + 10
    while admin_json(second, "/rewrite")[0]["mappingCollection"]["found"] < 1 and time.time() < deadline:
        time.sleep(0.1)
    # ...and the next one is targeted.
    assert find_order(b.shop.orders, "O00004")["_id"] == 4
    r = admin_json(second, "/rewrite")[0]
    assert r["applied"] == 1 and r["mappingCollection"]["found"] >= 1


def test_unreachable_mapping_collection_degrades_to_no_rewrite(ferretdb, proxy):
    from harness import free_port
    dead = f"mongodb://127.0.0.1:{free_port()}/"
    p = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", f"{RULE} collection=s.m uri={dead}", admin=True)
    client = pymongo.MongoClient(p.uri)
    pymongo.MongoClient(ferretdb.uri).shop.orders.insert_many(orders(5))  # behind the sidecar's back: no mapping
    for _ in range(3):
        assert find_order(client.shop.orders, "O00001")["_id"] == 1  # never an error to the client
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


# ---- issue 14: the rewrite must never change an answer (items 9-13) ----------------------------

def stale_rule(workdir, mapping, extra=""):
    """The rule with a mapping file that deliberately disagrees with the data."""
    path = workdir / "stale.jsonl"
    path.write_text("".join(json.dumps({"orderId": k, "customerId": v}) + "\n" for k, v in mapping.items()))
    return f"{RULE} file={path}{extra}"


def rewrite_page(proxy):
    return admin_json(proxy, "/rewrite")[0]


def test_batch_size_zero_with_a_stale_mapping_still_finds_the_document(ferretdb, proxy, workdir):
    """Item 9: an empty first batch with an open cursor proves nothing; batchSize 0 is not rewritten."""
    pymongo.MongoClient(ferretdb.uri).shop.orders.insert_many(orders(5))
    p = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule",
              stale_rule(workdir, {"O00001": "C9999", "O00002": "C9999"}), admin=True)
    db = pymongo.MongoClient(p.uri).shop
    for first in (db.command("find", "orders", filter={"orderId": "O00001"}, batchSize=0),
                  db.command("aggregate", "orders", pipeline=[{"$match": {"orderId": "O00001"}}], cursor={"batchSize": 0})):
        assert first["cursor"]["firstBatch"] == [] and first["cursor"]["id"] != 0
        more = db.command("getMore", first["cursor"]["id"], collection="orders")
        assert [d["_id"] for d in more["cursor"]["nextBatch"]] == [1]  # through main's rewrite: []
    assert rewrite_page(p)["skipped"]["batchSize 0 is not rewritten: an empty first batch cannot show a miss"] == 2
    # A $in whose first batch misses a value falls back; the rewritten cursor is closed on the way
    # and the session goes on answering.
    got = db.command("find", "orders", filter={"orderId": {"$in": ["O00002", "O00003"]}}, batchSize=1)
    ids = [d["_id"] for d in got["cursor"]["firstBatch"]]
    ids += [d["_id"] for d in db.command("getMore", got["cursor"]["id"], collection="orders")["cursor"]["nextBatch"]]
    assert sorted(ids) == [2, 3]
    assert db.command("ping")["ok"] == 1


def test_unacknowledged_writes_with_a_stale_mapping_are_not_lost(ferretdb, proxy, workdir):
    """Item 10: w:0 writes (OP_MSG moreToCome) have no reply to verify: never rewritten."""
    direct = pymongo.MongoClient(ferretdb.uri).shop.orders
    direct.insert_many(orders(5))
    p = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule",
              stale_rule(workdir, {f"O0000{i}": "C9999" for i in range(5)}), admin=True)
    client = pymongo.MongoClient(p.uri)
    unacked = client.shop.get_collection("orders", write_concern=pymongo.WriteConcern(w=0))
    unacked.update_one({"orderId": "O00001"}, {"$set": {"status": "paid"}})
    unacked.delete_one({"orderId": "O00002"})
    deadline = time.time() + 5
    while time.time() < deadline and not (direct.find_one({"_id": 1})["status"] == "paid"
                                          and direct.find_one({"_id": 2}) is None):
        time.sleep(0.05)
    assert direct.find_one({"_id": 1})["status"] == "paid"  # through main's rewrite: still "new"
    assert direct.find_one({"_id": 2}) is None
    # An explicit writeConcern {w: 0} on a command: a server may answer without n, so it is refused too.
    # (Another client: FerretDB answers the moreToCome messages above, which would confuse this one.)
    pymongo.MongoClient(p.uri).shop.command("update", "orders", writeConcern={"w": 0},
                                            updates=[{"q": {"orderId": "O00003"}, "u": {"$set": {"status": "x"}}}])
    skipped = rewrite_page(p)["skipped"]
    assert skipped["unacknowledged requests (moreToCome) are not rewritten: no reply to verify"] == 2
    assert skipped["unacknowledged writes (w: 0) are not rewritten: no reply to verify"] == 1
    assert rewrite_page(p)["applied"] == 0


def test_an_order_seen_with_two_customers_is_never_rewritten(ferretdb, proxy):
    """Item 11: the proxy itself saw one orderId with two customerIds: every command sees both."""
    p = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", RULE, admin=True)
    coll = pymongo.MongoClient(p.uri).shop.orders
    coll.insert_many([{"_id": 1, "orderId": "X", "customerId": "C1", "n": 0},
                      {"_id": 2, "orderId": "X", "customerId": "C2", "n": 0}])
    assert sorted(d["_id"] for d in coll.find({"orderId": "X"})) == [1, 2]  # main: [2]
    assert coll.count_documents({"orderId": "X"}) == 2
    assert sorted(coll.distinct("customerId", {"orderId": "X"})) == ["C1", "C2"]
    assert len(list(coll.aggregate([{"$match": {"orderId": "X"}}]))) == 2
    assert coll.update_many({"orderId": "X"}, {"$inc": {"n": 1}}).modified_count == 2
    assert coll.find_one_and_update({"orderId": "X", "_id": 1}, {"$inc": {"n": 1}})["n"] == 1
    assert coll.delete_many({"orderId": "X"}).deleted_count == 2
    page = rewrite_page(p)
    assert page["applied"] == 0
    assert page["mapping"]["ambiguous"] == 1 and page["mapping"]["corrected"] == 1
    # Until explicitly reset (after the data was fixed).
    request = urllib.request.Request(p.admin_url + "/rewrite/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10) as r:
        assert json.load(r) == {"reset": True}
    assert rewrite_page(p)["mapping"]["ambiguous"] == 0


def test_pipelines_that_can_hide_a_miss_or_write_are_not_rewritten(wire_peer, proxy, workdir):
    """Item 12: $facet / $unionWith never look empty, $out / $merge always do (and would run twice)."""
    peer = wire_peer()
    merges = []

    def aggregate(conn, cmd, seqs, db):
        ns = f"{db}.{cmd['aggregate']}"
        docs = [d for d in peer.store.get(ns, [])]
        for stage in cmd["pipeline"]:
            op, arg = next(iter(stage.items()))
            if op == "$match":
                docs = [d for d in docs if all(d.get(k) == v for k, v in arg.items())]
            elif op == "$facet":
                docs = [{name: docs for name in arg}]
            elif op == "$unionWith":
                docs = docs + list(peer.store.get(f"{db}.{arg}", []))
            elif op in ("$out", "$merge"):
                merges.append(len(docs))
                docs = []
        return {"cursor": {"id": Int64(0), "ns": ns, "firstBatch": docs}, "ok": 1.0}

    peer._cmd_aggregate = aggregate
    direct = pymongo.MongoClient(peer.uri)
    direct.shop.orders.insert_many([{"_id": 1, "orderId": "O1", "customerId": "C1"}])
    direct.shop.other.insert_many([{"_id": 9}])
    p = proxy(peer.uri, "--routing", ROUTING, "--rewrite-rule", stale_rule(workdir, {"O1": "C9", "O2": "C2"}), admin=True)
    through = pymongo.MongoClient(p.uri)
    for pipeline in ([{"$match": {"orderId": "O1"}}, {"$facet": {"a": [{"$match": {}}]}}],
                     [{"$match": {"orderId": "O1"}}, {"$unionWith": "other"}]):
        assert list(through.shop.orders.aggregate(pipeline)) == list(direct.shop.orders.aggregate(pipeline))
    # A right mapping: $merge returns an empty cursor, which main took for a miss and ran twice.
    direct.shop.orders.insert_many([{"_id": 2, "orderId": "O2", "customerId": "C2"}])
    merges.clear()
    through.shop.orders.aggregate([{"$match": {"orderId": "O2"}}, {"$merge": {"into": "copy"}}])
    through.shop.orders.aggregate([{"$match": {"orderId": "O2"}}, {"$out": "copy"}])
    assert merges == [1, 1]
    for f in peer.frames_snapshot():
        cmd = f.message.command or {}
        if "aggregate" in cmd:  # every pipeline reached the server as the client wrote it
            assert "customerId" not in cmd["pipeline"][0]["$match"], cmd
    assert rewrite_page(p)["applied"] == 0


def test_mappings_are_learned_only_from_confirmed_writes(ferretdb, proxy):
    """Item 13: a failed insert teaches nothing, a before-image does not re-teach the old customer,
    a replacement is planned with the mapping that finds its document."""
    p = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", RULE, admin=True)
    coll = pymongo.MongoClient(p.uri).shop.orders
    coll.insert_many(orders(10))
    with pytest.raises(pymongo.errors.DuplicateKeyError):
        coll.insert_one({"_id": 1, "orderId": "O00001", "customerId": "C5555"})
    with pytest.raises(pymongo.errors.BulkWriteError):  # ordered: the third document never runs
        coll.insert_many([{"_id": 20, "orderId": "O00020", "customerId": "C20"}, {"_id": 2, "orderId": "O00002"},
                          {"_id": 21, "orderId": "O00021", "customerId": "C21"}])
    assert coll.find_one({"orderId": "O00001"})["customerId"] == "C0137"
    assert coll.find_one({"orderId": "O00002"})["_id"] == 2  # its failed duplicate had no customerId
    # findOneAndUpdate returns the before-image (old customer): never learned; the order is unsettled
    # until a reply holding every document of it (issue 27 item 3).
    before = coll.find_one_and_update({"orderId": "O00003"}, {"$set": {"customerId": "C8888"}})
    assert before["customerId"] != "C8888"
    assert coll.find_one({"orderId": "O00003"})["customerId"] == "C8888"
    # A replacement that moves the order: rewritten with the old customer, which finds it (then the
    # order is unsettled: one document replaced says nothing of the others).
    r = coll.replace_one({"orderId": "O00004"}, {"orderId": "O00004", "customerId": "C7777", "status": "moved"})
    assert r.matched_count == 1
    assert coll.find_one({"orderId": "O00004"})["status"] == "moved"
    page = rewrite_page(p)
    assert sum(page["fallbacks"].values()) == 0, page["fallbacks"]  # main: a fallback for each case
    assert page["mapping"]["corrected"] == 0 and page["mapping"]["ambiguous"] == 0
    assert page["skipped"].get("no mapping known for the lookup value", 0) == 0
    assert coll.find_one({"orderId": "O00021"}) is None
    assert rewrite_page(p)["skipped"]["no mapping known for the lookup value"] == 1  # O00021 was never learned


def test_a_wrong_mapping_is_dropped_even_when_replies_lack_the_customer(ferretdb, proxy, workdir):
    """Item 13: a fallback whose original found the order proves the mapping wrong, whatever the
    projection; a fallback that finds nothing either is counted as such; both are counted as what
    ran (the rewritten attempt plus the original's broadcast)."""
    pymongo.MongoClient(ferretdb.uri).shop.orders.insert_many(orders(5))
    p = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule",
              stale_rule(workdir, {"O00001": "C9999", "O99999": "C0001"}), admin=True)
    coll = pymongo.MongoClient(p.uri).shop.orders
    for _ in range(3):
        assert find_order(coll, "O00001", {"_id": 1}) == {"_id": 1}
    page = rewrite_page(p)
    assert page["fallbacks"]["empty_read"] == 1  # main: 3, the mapping was never dropped
    assert page["rerunOutcome"] == {"mappingWrong": 1, "foundNothing": 0}
    assert page["targetingRerun"]["broadcast"] == 1
    finds = [s for s in admin_json(p, "/stats")["shapes"] if s["ns"] == "shop.orders" and s["command"] == "find"]
    assert sum(s["targeting"]["single"] for s in finds) == 1
    assert sum(s["targeting"]["broadcast"] for s in finds) == 3  # the re-run and the two unrewritten finds
    # No such order: the right-looking mapping re-runs, is counted, and is kept.
    assert find_order(coll, "O99999") is None
    assert find_order(coll, "O99999") is None
    page = rewrite_page(p)
    assert page["rerunOutcome"] == {"mappingWrong": 1, "foundNothing": 2}
    assert page["mapping"]["ambiguous"] == 1


def test_the_shared_collection_learns_contradictions(ferretdb, proxy):
    """Item 13: after one sidecar finds a mapping wrong, no other sidecar reads it back."""
    rule = f"{RULE} collection=shardscope.orderCustomers"
    first = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", rule, admin=True)
    second = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", rule, admin=True)
    pymongo.MongoClient(first.uri).shop.orders.insert_many(orders(10))
    direct = pymongo.MongoClient(ferretdb.uri)
    shared = direct.shardscope.orderCustomers
    deadline = time.time() + 10
    while shared.count_documents({}) < 10 and time.time() < deadline:
        time.sleep(0.1)
    direct.shop.orders.update_one({"orderId": "O00004"}, {"$set": {"customerId": "C4444"}})  # behind every sidecar
    assert pymongo.MongoClient(first.uri).shop.orders.find_one({"orderId": "O00004"})["customerId"] == "C4444"
    deadline = time.time() + 10
    while not (shared.find_one({"_id": "O00004"}) or {}).get("ambiguous") and time.time() < deadline:
        time.sleep(0.1)
    marker = shared.find_one({"_id": "O00004"})
    assert marker["ambiguous"] is True and "customerId" not in marker
    b = pymongo.MongoClient(second.uri).shop.orders
    assert b.find_one({"orderId": "O00004"})["customerId"] == "C4444"  # a miss: reads the collection through
    deadline = time.time() + 10
    while rewrite_page(second)["mappingCollection"]["found"] < 1 and time.time() < deadline:
        time.sleep(0.1)
    assert b.find_one({"orderId": "O00004"})["customerId"] == "C4444"
    page = rewrite_page(second)
    assert page["applied"] == 0 and sum(page["fallbacks"].values()) == 0  # main: read C0248 back, fell back
    assert page["mapping"]["ambiguous"] == 1


def test_capacity_is_exact(ferretdb, proxy):
    """Item 13: capacity=10 holds 10 mappings (main: 16)."""
    p = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", f"{RULE} capacity=10", admin=True)
    pymongo.MongoClient(p.uri).shop.orders.insert_many(orders(100))
    mapping = rewrite_page(p)["mapping"]
    assert mapping["size"] == 10 and mapping["capacity"] == 10 and mapping["evicted"] == 90


def test_a_contradiction_found_by_another_sidecar_reaches_every_sidecar(ferretdb, proxy):
    """Item 11 across sidecars: the first sidecar learned X -> C1 from its own insert; the second
    inserts X for another customer and finds the shared mapping disagrees; the first stops
    rewriting X once it polls the collection."""
    rule = f"{RULE} collection=shardscope.orderCustomers"
    first = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", rule, admin=True)
    second = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", rule, admin=True)
    a = pymongo.MongoClient(first.uri).shop.orders
    a.insert_one({"_id": 1, "orderId": "X", "customerId": "C1"})
    shared = pymongo.MongoClient(ferretdb.uri).shardscope.orderCustomers
    deadline = time.time() + 10
    while shared.find_one({"_id": "X"}) is None and time.time() < deadline:
        time.sleep(0.1)
    pymongo.MongoClient(second.uri).shop.orders.insert_one({"_id": 2, "orderId": "X", "customerId": "C2"})
    deadline = time.time() + 10
    while rewrite_page(first)["mapping"].get("ambiguous", 0) < 1 and time.time() < deadline:
        time.sleep(0.1)
    assert sorted(d["_id"] for d in a.find({"orderId": "X"})) == [1, 2]  # main: [1]
    assert rewrite_page(first)["mapping"]["ambiguous"] == 1


ORDER_DEPENDENT = ("a read that keeps part of its answer (limit, skip, singleBatch, batchSize, $first...) is "
                   "rewritten only when it pins _id or sorts on _id: otherwise which documents it keeps depends "
                   "on the plan's order, which the added field can change")


def test_a_read_keeping_part_of_a_multi_line_order_is_sent_as_written(ferretdb, proxy):
    """findOne, a limit, a batch size or an unsorted $limit of one order keep its first lines in
    the plan's order, which the added customerId can change (the shard key's index instead of
    orderId's): another line, and the verify cannot see it. Before, only an unsorted $in was
    left alone; now each is sent as written unless _id fixes the order."""
    p = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", RULE, admin=True)
    coll = pymongo.MongoClient(p.uri).shop.orders
    direct = pymongo.MongoClient(ferretdb.uri).shop.orders
    coll.insert_many([{"_id": 10 + line, "orderId": "L1", "customerId": "C0300", "line": line} for line in range(3)])
    assert coll.find_one({"orderId": "L1"}) == direct.find_one({"orderId": "L1"})
    assert list(coll.find({"orderId": "L1"}).limit(2)) == list(direct.find({"orderId": "L1"}).limit(2))
    assert list(coll.find({"orderId": "L1"}, batch_size=1)) == list(direct.find({"orderId": "L1"}, batch_size=1))
    assert list(coll.aggregate([{"$match": {"orderId": "L1"}}, {"$limit": 1}])) == \
        list(direct.aggregate([{"$match": {"orderId": "L1"}}, {"$limit": 1}]))
    page = rewrite_page(p)
    assert page["skipped"].get(ORDER_DEPENDENT) == 4, page["skipped"]
    assert page["applied"] == 0
    # The order fixed by _id (or the whole answer asked for): rewritten, the same lines.
    assert list(coll.find({"orderId": "L1"}).sort("_id", -1).limit(2)) == \
        list(direct.find({"orderId": "L1"}).sort("_id", -1).limit(2))
    assert coll.find_one({"orderId": "L1", "_id": 11}) == direct.find_one({"orderId": "L1", "_id": 11})
    assert sorted(d["_id"] for d in coll.find({"orderId": "L1"})) == [10, 11, 12]
    assert rewrite_page(p)["applied"] == 3
