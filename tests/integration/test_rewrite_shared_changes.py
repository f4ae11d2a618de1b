"""Lookup rewrite with the shared mapping collection: a change made through one sidecar that may
split an order reaches the other sidecars (they had learned the order before the change).

Two sidecars with the same rule and collection= in front of one FerretDB (real pymongo); every
answer through the first sidecar is compared with the same query sent directly. The other
sidecar's change is published as a marker the first polls each second: the answers must agree
within a few polls (main deleted the shared mapping only, and the first sidecar answered part of
the order for as long as it ran).
"""
from __future__ import annotations

import json
import time
import urllib.request

import pymongo
import pytest

from harness import REPO_ROOT

ROUTING = str(REPO_ROOT / "tests" / "data" / "routing" / "orders_6shards.json")
RULE = "shop.orders: orderId -> customerId collection=shardscope.orderCustomers"


def ids(cursor):
    return sorted(d["_id"] for d in cursor)


def rewrite_page(proxy):
    with urllib.request.urlopen(proxy.admin_url + "/rewrite", timeout=10) as r:
        return json.load(r)[0]


@pytest.fixture
def two_sidecars(ferretdb, proxy):
    first = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", RULE, admin=True)
    second = proxy(ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", RULE, admin=True)
    clients = [pymongo.MongoClient(u, serverSelectionTimeoutMS=10000) for u in (first.uri, second.uri, ferretdb.uri)]
    yield clients[0].shop.orders, clients[1].shop.orders, clients[2].shop.orders, first
    for c in clients:
        c.close()


def agree_within(a, direct, flt, seconds=10.0):
    """The first sidecar's answer once it agrees with the server's (or the last one seen)."""
    deadline = time.time() + seconds
    while True:
        got, want = ids(a.find(flt)), ids(direct.find(flt))
        if got == want or time.time() > deadline:
            return got, want
        time.sleep(0.25)


@pytest.mark.parametrize("change", ["one line moved", "lines joined from another order", "moved by _id"])
def test_a_change_through_another_sidecar_reaches_this_one(two_sidecars, change):
    a, b, direct, first = two_sidecars
    a.insert_many([{"_id": i, "orderId": "X", "line": i, "customerId": "c1"} for i in range(3)] +
                  [{"_id": 10, "orderId": "W", "customerId": "c2"}])
    assert ids(a.find({"orderId": "X"})) == [0, 1, 2]  # X -> c1 learned by the first sidecar and used
    applied = rewrite_page(first)["applied"]
    assert applied >= 1
    if change == "one line moved":
        b.update_one({"orderId": "X", "line": 0}, {"$set": {"customerId": "c9"}})
    elif change == "lines joined from another order":
        b.update_one({"orderId": "W"}, {"$set": {"orderId": "X"}})  # X gains a c2 line
    else:
        b.update_one({"_id": 1}, {"$set": {"customerId": "c9"}})  # names no order: any may be split
    got, want = agree_within(a, direct, {"orderId": "X"})
    assert got == want  # main: [1, 2] (or [0, 1, 2] without W's line) for good
    assert a.count_documents({"orderId": "X"}) == direct.count_documents({"orderId": "X"})
