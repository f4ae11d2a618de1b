"""What the evaluation counts of writes is what their replies prove happened (docs/evaluation.md,
"Where it comes from"): real pymongo through build/shardscope to FerretDB.

A batch of replacements of which only some matched: the reply's n does not say which, so none is
taken as a replaced document (main fed both replacement documents into the key figures, the one
that replaced nothing included). The error cases (statements in writeErrors, an ordered batch's
statements after its first error) are in tests/evaluation/write_outcomes_test.cpp: FerretDB's
error replies carry no nModified, which real servers always send.
"""
from __future__ import annotations

import json
import urllib.request

import pymongo
from pymongo import ReplaceOne

from harness import REPO_ROOT

ROUTING = str(REPO_ROOT / "tests" / "data" / "routing" / "orders_6shards.json")


def namespace(proxy, ns="shop.orders"):
    with urllib.request.urlopen(proxy.admin_url + "/evaluate", timeout=20) as r:
        report = json.load(r)
    return next(n for n in report["namespaces"] if n["ns"] == ns)


def test_replacements_count_only_when_the_reply_proves_they_matched(ferretdb, proxy):
    p = proxy(ferretdb.uri, "--routing", ROUTING, admin=True)
    with pymongo.MongoClient(p.uri) as client:
        orders = client.shop.orders
        orders.insert_many([{"_id": i, "customerId": "C%04d" % i} for i in range(5)])
        # One of two matched (n = 1): which one, the reply does not say.
        r = orders.bulk_write([ReplaceOne({"_id": 1}, {"customerId": "C0001", "v": 1}),
                               ReplaceOne({"_id": 999}, {"customerId": "C9999", "v": 2})])
        assert r.matched_count == 1
        assert namespace(p)["replacements"] == 0  # main: 2
        # Both matched (n = 2): both replaced.
        r = orders.bulk_write([ReplaceOne({"_id": 1}, {"customerId": "C0001", "v": 3}),
                               ReplaceOne({"_id": 2}, {"customerId": "C0002", "v": 3})])
        assert r.matched_count == 2
        assert namespace(p)["replacements"] == 2
        # One statement: its n says.
        assert orders.replace_one({"_id": 3}, {"customerId": "C0003", "v": 4}).matched_count == 1
        assert orders.replace_one({"_id": 998}, {"customerId": "C0998", "v": 4}).matched_count == 0
        ns = namespace(p)
        assert ns["replacements"] == 3
        assert ns["inserts"] == 5 and ns["upserted"] == 0 and ns["upsertsMatched"] == 0
