"""Lookup rewrite: a lookup field held in an array, or reached through one.

A document {orderId: ["X", "Y"]} belongs to orders X and Y (an equality on either matches it), and
{order: [{id: "X"}]} is matched by {"order.id": "X"}. Real pymongo through build/shardscope to
FerretDB; every answer through the sidecar is compared with the same query sent directly.
"""
from __future__ import annotations

import pymongo
import pytest

from harness import REPO_ROOT

ROUTING = str(REPO_ROOT / "tests" / "data" / "routing" / "orders_6shards.json")
ROUTING_RULE = "shop.orders: orderId -> customerId"


def ids(cursor):
    return sorted(d["_id"] for d in cursor)


@pytest.fixture
def through_and_direct(ferretdb, proxy):
    def make(rule):
        p = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", rule, admin=True)
        through = pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=10000)
        direct = pymongo.MongoClient(ferretdb.uri, serverSelectionTimeoutMS=10000)
        made.append((through, direct))
        return through, direct
    made = []
    yield make
    for through, direct in made:
        through.close()
        direct.close()


@pytest.mark.parametrize("change", ["update_one", "update_many", "find_one_and_update"])
def test_moving_a_document_of_two_orders_through_one_keeps_the_other_whole(through_and_direct, change):
    """Y has two documents, one of them also in X. Moving X's documents to another customer moves
    Y's shared one too: main unsettled X alone and kept Y -> c1, answering 1 of Y's 2 documents."""
    t, d = through_and_direct(ROUTING_RULE)
    through, direct = t.shop.orders, d.shop.orders
    through.insert_many([{"_id": 1, "orderId": "Y", "customerId": "c1"},
                         {"_id": 2, "orderId": ["X", "Y"], "customerId": "c1"}])
    assert ids(through.find({"orderId": "Y"})) == [1, 2]  # Y -> c1 learned and used
    getattr(through, change)({"orderId": "X"}, {"$set": {"customerId": "c2"}})
    for value in ("Y", "X"):  # Y first: a rewritten read of X would show the shared document
        assert ids(through.find({"orderId": value})) == ids(direct.find({"orderId": value})), value
        assert through.count_documents({"orderId": value}) == direct.count_documents({"orderId": value}), value
    assert ids(through.find({"orderId": "Y"})) == [1, 2]


def test_a_dotted_lookup_field_reached_through_an_array_is_learned(through_and_direct):
    """{order: [{id: "X"}], customerId: "c2"} inserted through the sidecar is a second customer of
    order X ({"order.id": "X"} matches it): main never read its value and kept X -> c1."""
    t, d = through_and_direct("shop.lines: order.id -> customerId")
    through, direct = t.shop.lines, d.shop.lines
    through.insert_many([{"_id": 1, "order": {"id": "X"}, "customerId": "c1"},
                         {"_id": 2, "order": [{"id": "X"}, {"id": "Z"}], "customerId": "c2"},
                         {"_id": 3, "order": {"id": "Z"}, "customerId": "c2"}])
    for value in ("X", "Z"):
        flt = {"order.id": value}
        assert ids(through.find(flt)) == ids(direct.find(flt)), value
        assert through.count_documents(flt) == direct.count_documents(flt), value
    assert ids(through.find({"order.id": "X"})) == [1, 2]
