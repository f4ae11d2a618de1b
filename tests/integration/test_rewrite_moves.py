"""Lookup rewrite, issue 27: writes that move an order through the sidecar, equal numbers of
different BSON types, and orders that moved behind its back.

Real pymongo through build/shardscope (rule shop.orders: orderId -> customerId, routed with
orders_6shards.json) to FerretDB; every answer through the sidecar is compared with the same
query sent to FerretDB directly, on the same data.
"""
from __future__ import annotations

import json
import urllib.request

import pymongo
from bson.int64 import Int64
import pytest

from harness import REPO_ROOT

ROUTING = str(REPO_ROOT / "tests" / "data" / "routing" / "orders_6shards.json")
RULE = "shop.orders: orderId -> customerId"


def rewrite_page(proxy):
    with urllib.request.urlopen(proxy.admin_url + "/rewrite", timeout=10) as r:
        return json.load(r)[0]


@pytest.fixture
def sides(ferretdb, proxy):
    """(collection through a sidecar with the rule, the same collection directly, the sidecar)."""
    p = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", RULE, admin=True)
    through = pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=10000)
    direct = pymongo.MongoClient(ferretdb.uri, serverSelectionTimeoutMS=10000)
    yield through.shop.orders, direct.shop.orders, p
    through.close()
    direct.close()


def ids(cursor):
    return sorted(d["_id"] for d in cursor)


def assert_same_answers(through, direct, value):
    """find, count and find_one's presence agree through the sidecar and directly."""
    flt = {"orderId": value}
    assert ids(through.find(flt)) == ids(direct.find(flt)), value
    assert through.count_documents(flt) == direct.count_documents(flt), value


def test_equal_numbers_of_different_types_are_one_order(sides):
    """Item 1: NumberLong(9.21e18) and the double 9.21e18 are one orderId to the server (and
    -2^63 as a long and as a double): main filed them under two keys and answered 1 of 2."""
    through, direct, p = sides
    pairs = [(Int64(9210000000000000000), 9.21e18), (Int64(-2**63), float(-2**63)),
             (Int64(9223372036854774784), 9223372036854774784.0)]
    n = 0
    for as_long, as_double in pairs:
        through.insert_one({"_id": n, "orderId": as_long, "customerId": "cust-%04d" % n})
        through.insert_one({"_id": n + 1, "orderId": as_double, "customerId": "cust-%04d" % (n + 500)})
        n += 2
    for as_long, as_double in pairs:
        assert len(list(direct.find({"orderId": as_long}))) == 2  # the server's own view: one order
        for value in (as_long, as_double):
            assert_same_answers(through, direct, value)  # main: 1 document through the sidecar
            assert through.find_one({"orderId": value}) is not None
    # (FerretDB closes the connection on a Decimal128: decimals are covered by tests/rewrite, where a
    # decimal document makes every number it may equal ambiguous and a decimal lookup is left alone.)
    assert sum(rewrite_page(p)["fallbacks"].values()) == 0


def test_a_change_of_order_id_is_noticed(sides):
    """Item 2: $set orderId, a replacement carrying another orderId, and findOneAndUpdate returning
    the before-image move a document into another order: main kept the other order's mapping and
    answered 1 of its 2 documents."""
    through, direct, p = sides
    through.insert_many([{"_id": 1, "orderId": "A", "customerId": "cust-0345"},
                         {"_id": 2, "orderId": "B", "customerId": "cust-0845"},
                         {"_id": 3, "orderId": "C", "customerId": "cust-0346"},
                         {"_id": 4, "orderId": "D", "customerId": "cust-0846"},
                         {"_id": 5, "orderId": "E", "customerId": "cust-0347"},
                         {"_id": 6, "orderId": "F", "customerId": "cust-0847"}])
    assert through.update_one({"orderId": "A"}, {"$set": {"orderId": "B"}}).matched_count == 1
    assert through.replace_one({"orderId": "C"}, {"orderId": "D", "customerId": "cust-0346"}).matched_count == 1
    before = through.find_one_and_update({"orderId": "E"}, {"$set": {"orderId": "F"}})
    assert before["orderId"] == "E"
    for value in "ABCDEF":
        assert_same_answers(through, direct, value)
    assert ids(through.find({"orderId": "B"})) == [1, 2]
    assert ids(through.find({"orderId": "D"})) == [3, 4]
    assert ids(through.find({"orderId": "F"})) == [5, 6]
    assert rewrite_page(p)["mapping"]["ambiguous"] == 3


def test_a_change_that_may_not_cover_the_order_never_replaces_its_mapping(sides):
    """Item 3: updateOne on one line of a multi-line order, findOneAndUpdate on a two-line order and
    updateMany with another predicate: main re-mapped the whole order to the new customer."""
    through, direct, p = sides
    through.insert_many([{"_id": i, "orderId": "X", "line": i, "status": "new", "customerId": "cust-0365"} for i in range(3)] +
                        [{"_id": 10 + i, "orderId": "Y", "line": i, "customerId": "cust-0366"} for i in range(2)] +
                        [{"_id": 20 + i, "orderId": "Z", "line": i, "status": "paid" if i else "new",
                          "customerId": "cust-0367"} for i in range(2)] +
                        [{"_id": 30, "orderId": "W", "customerId": "cust-0368"}])
    through.update_one({"orderId": "X", "line": 0}, {"$set": {"customerId": "cust-0965"}})
    through.find_one_and_update({"orderId": "Y"}, {"$set": {"customerId": "cust-0966"}}, return_document=True)
    through.update_many({"orderId": "Z", "status": "paid"}, {"$set": {"customerId": "cust-0967"}})
    for _ in range(2):  # the second round after whatever the first one taught
        for value in "XYZ":
            assert through.find_one({"orderId": value}) is not None
            assert_same_answers(through, direct, value)  # main: 1 of 3 (X), 1 of 2 (Y, Z)
    assert ids(through.find({"orderId": "X"})) == [0, 1, 2]
    # updateMany on the order alone moves every line: the new customer is learned and used.
    through.update_many({"orderId": "W"}, {"$set": {"customerId": "cust-0968"}})
    applied = rewrite_page(p)["applied"]
    assert ids(through.find({"orderId": "W"})) == [30]
    page = rewrite_page(p)
    assert page["applied"] == applied + 1 and page["fallbacks"]["empty_read"] == 0


def test_a_moved_order_is_learned_again_from_the_fallback_reply(sides):
    """Item 4: an order moved behind the sidecar falls back once; the original's reply shows every
    document with one customer, so the next lookup is rewritten again (main: never again until
    POST /rewrite/reset). An order split between two customers stays ambiguous."""
    through, direct, p = sides
    through.insert_many([{"_id": i, "orderId": "M", "line": i, "customerId": "cust-0100"} for i in range(2)] +
                        [{"_id": 10 + i, "orderId": "S", "line": i, "customerId": "cust-0200"} for i in range(2)])
    direct.update_many({"orderId": "M"}, {"$set": {"customerId": "cust-0777"}})  # behind the sidecar
    direct.update_one({"orderId": "S", "line": 0}, {"$set": {"customerId": "cust-0888"}})
    direct.update_one({"orderId": "S", "line": 1}, {"$set": {"customerId": "cust-0889"}})
    for value in ("M", "S"):
        assert ids(through.find({"orderId": value})) == ids(direct.find({"orderId": value}))
    page = rewrite_page(p)
    assert page["fallbacks"]["empty_read"] == 2
    assert page["mapping"]["ambiguous"] == 1  # S: two customers (main: M and S)
    applied = page["applied"]
    for _ in range(3):
        assert ids(through.find({"orderId": "M"})) == [0, 1]
        assert ids(through.find({"orderId": "S"})) == [10, 11]
    page = rewrite_page(p)
    assert page["applied"] == applied + 3  # M again single-shard (main: never, until a reset); S never
    assert page["fallbacks"]["empty_read"] == 2
    assert page["events"]["learned from a reply holding every document"] == 1


def test_retryable_writes_are_rewritten_only_once_a_targeted_read_confirms_the_mapping(proxy):
    """Item 5: drivers send single-document writes to mongos as retryable writes (txnNumber), which
    can never be re-run: main never rewrote them. Now the sidecar first reads {orderId, customerId}
    (one shard); a document found proves the mapping for the whole order and the rewritten write
    goes out with the client's txnNumber; nothing found sends the client's write as written, for
    the first time. The stand-in mongos answers a repeated (lsid, txnNumber) from its record, as
    mongos does (tests/support/retryable_mongos.py)."""
    from retryable_mongos import RetryableMongos

    peer = RetryableMongos().start()
    try:
        p = proxy(peer.uri, "--routing", ROUTING, "--rewrite-rule", RULE, admin=True)
        coll = pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=10000).shop.orders
        direct = pymongo.MongoClient(peer.uri, serverSelectionTimeoutMS=10000).shop.orders
        coll.insert_many([{"_id": i, "orderId": "R%d" % i, "customerId": "cust-%04d" % i, "n": 0} for i in range(6)])
        assert coll.update_one({"orderId": "R1"}, {"$inc": {"n": 1}}).matched_count == 1
        assert coll.find_one_and_update({"orderId": "R2"}, {"$inc": {"n": 1}})["n"] == 0
        assert coll.delete_one({"orderId": "R3"}).deleted_count == 1
        # Moved behind the sidecar: the confirming read finds nothing, the write goes as written.
        direct.update_one({"orderId": "R4"}, {"$set": {"customerId": "cust-0999"}})
        assert coll.update_one({"orderId": "R4"}, {"$inc": {"n": 1}}).matched_count == 1
        assert coll.find_one_and_update({"orderId": "R4"}, {"$inc": {"n": 1}}) is not None  # not rewritten: ambiguous
        assert direct.find_one({"_id": 1})["n"] == 1 and direct.find_one({"_id": 2})["n"] == 1
        assert direct.find_one({"_id": 3}) is None and direct.find_one({"_id": 4})["n"] == 2

        writes = [e for e in peer.executions if e[0] in ("update", "findAndModify", "delete")]
        # Every write ran once under its own txnNumber; the rewritten ones carried the customer.
        assert all(t is not None for _, _, t in writes)
        assert len({t for _, _, t in writes}) == len(writes) and peer.replayed == 0
        assert [("customerId" in q) for _, q, _ in writes] == [True, True, True, False, False, False]
        page = rewrite_page(p)
        events = page["events"]
        assert events["retryable write: confirmed, sent rewritten"] == 3  # main: no rewrite at all
        assert events["retryable write: not confirmed, sent as written"] == 1
        assert page["fallbacks"]["unconfirmed_retryable_write"] == 1 and page["fallbacks"]["no_match_write"] == 0
        assert page["mapping"]["ambiguous"] == 1  # R4: the original found what the mapping missed
    finally:
        peer.stop()


def test_a_write_the_sidecar_does_not_plan_unsettles_every_order(proxy):
    """An aggregate on another collection whose $out replaces the rule's collection can split any
    order between customers: main kept X -> cust-0001 and answered 1 of X's 2 lines. (FerretDB
    has no $out: the stand-in mongos of tests/support/retryable_mongos.py runs it.)"""
    from retryable_mongos import RetryableMongos

    peer = RetryableMongos().start()
    try:
        p = proxy(peer.uri, "--routing", ROUTING, "--rewrite-rule", RULE, admin=True)
        through = pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=10000).shop.orders
        direct = pymongo.MongoClient(peer.uri, serverSelectionTimeoutMS=10000).shop.orders
        through.insert_many([{"_id": 1, "orderId": "X", "line": 0, "customerId": "cust-0001"},
                             {"_id": 2, "orderId": "Y", "line": 0, "customerId": "cust-0002"}])
        assert ids(through.find({"orderId": "X"})) == [1]
        staging = through.database.staging
        staging.insert_many([{"_id": 1, "orderId": "X", "line": 0, "customerId": "cust-0001"},
                             {"_id": 3, "orderId": "X", "line": 1, "customerId": "cust-0003"},
                             {"_id": 2, "orderId": "Y", "line": 0, "customerId": "cust-0002"}])
        list(staging.aggregate([{"$match": {}}, {"$out": "orders"}]))
        for value in "XY":
            assert through.find_one({"orderId": value}) is not None
            assert_same_answers(through, direct, value)  # main: X answered [1] of [1, 3]
        assert rewrite_page(p)["events"]["all values unsettled by a change that names no lookup value"] == 1
    finally:
        peer.stop()


def test_a_rename_onto_the_rules_collection_unsettles_every_order(sides):
    """renameCollection swaps another collection's documents in under the rule's name (the usual
    way to publish a rebuilt collection): main kept X -> cust-0001 from the documents it replaced
    and answered 1 of X's 2 lines. (FerretDB has no dropTarget: the old collection is dropped first.)"""
    through, direct, p = sides
    through.insert_many([{"_id": 1, "orderId": "X", "line": 0, "customerId": "cust-0001"},
                         {"_id": 2, "orderId": "Y", "line": 0, "customerId": "cust-0002"}])
    assert ids(through.find({"orderId": "X"})) == [1]  # learned, and rewritten
    staging = through.database.staging
    staging.insert_many([{"_id": 1, "orderId": "X", "line": 0, "customerId": "cust-0001"},
                         {"_id": 3, "orderId": "X", "line": 1, "customerId": "cust-0003"},
                         {"_id": 2, "orderId": "Y", "line": 0, "customerId": "cust-0002"}])
    through.drop()
    through.database.client.admin.command("renameCollection", "shop.staging", to="shop.orders")
    for value in "XY":
        assert through.find_one({"orderId": value}) is not None
        assert_same_answers(through, direct, value)  # main: X answered [1] of [1, 3]
    assert rewrite_page(p)["events"]["all values unsettled by a change that names no lookup value"] == 1
