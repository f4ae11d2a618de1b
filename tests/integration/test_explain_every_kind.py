"""`shardscope explain` names the shape id /stats files each command kind under, the getMore and
killCursors of a cursor included: explain cannot target those offline (their shards are the
cursor's), but the proxy forwards and files them, so the error still names the shape and id.
Before: `{"error": "cannot classify: ..."}` alone, so nothing joined those rows of /stats and
/metrics to explain's answer.

Real pymongo through build/shardscope (six-shard routing file) to FerretDB, then the same commands
typed as a person would for `explain`.
"""
from __future__ import annotations

import json
import subprocess

import pymongo
import pytest

from stats_helpers import ROUTING_FILE, get_stats

pytestmark = pytest.mark.needs_proxy

TYPED = [
    ('{find: "orders", filter: {customerId: "C1"}, sort: {orderDate: -1}, $db: "shop"}', "find"),
    ('{aggregate: "orders", pipeline: [{$match: {customerId: "C1"}}, {$group: {_id: "$status", n: {$sum: 1}}}], '
     'cursor: {}, $db: "shop"}', "aggregate"),
    ('{count: "orders", query: {status: "a"}, $db: "shop"}', "count"),
    ('{distinct: "orders", key: "status", query: {customerId: "C2"}, $db: "shop"}', "distinct"),
    ('{update: "orders", updates: [{q: {customerId: "C3"}, u: {$set: {status: "b"}}}], $db: "shop"}', "update"),
    ('{update: "orders", updates: [{q: {status: "b"}, u: {$set: {status: "c"}}, multi: true}], $db: "shop"}', "update"),
    ('{delete: "orders", deletes: [{q: {customerId: "C4"}, limit: 1}], $db: "shop"}', "delete"),
    ('{delete: "orders", deletes: [{q: {status: "zz"}, limit: 0}], $db: "shop"}', "delete"),
    ('{findAndModify: "orders", query: {customerId: "C5"}, update: {$set: {status: "d"}}, $db: "shop"}', "findAndModify"),
    ('{findAndModify: "orders", query: {customerId: "C6"}, remove: true, $db: "shop"}', "findAndModify"),
    ('{insert: "orders", documents: [{_id: 1, customerId: "C1"}], $db: "shop"}', "insert"),
    ('{getMore: NumberLong(5), collection: "orders", $db: "shop"}', "getMore"),
    ('{killCursors: "orders", cursors: [NumberLong(5)], $db: "shop"}', "killCursors"),
]


def test_explain_names_the_id_stats_files_every_command_kind_under(ferretdb, proxy, shardscope_binary):
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        coll = client.shop.orders
        coll.drop()
        coll.insert_many([{"_id": i, "customerId": "C%d" % i, "status": "a"} for i in range(30)])
        list(coll.find({"customerId": "C1"}).sort("orderDate", -1))
        list(coll.aggregate([{"$match": {"customerId": "C1"}}, {"$group": {"_id": "$status", "n": {"$sum": 1}}}]))
        client.shop.command("count", "orders", query={"status": "a"})
        coll.distinct("status", {"customerId": "C2"})
        coll.update_one({"customerId": "C3"}, {"$set": {"status": "b"}})
        coll.update_many({"status": "b"}, {"$set": {"status": "c"}})
        coll.delete_one({"customerId": "C4"})
        coll.delete_many({"status": "zz"})
        coll.find_one_and_update({"customerId": "C5"}, {"$set": {"status": "d"}})
        coll.find_one_and_delete({"customerId": "C6"})
        cursor = coll.find({"status": "a"}).batch_size(2)
        next(cursor), next(cursor), next(cursor)  # a getMore
        cursor.close()  # a killCursors
    rows = {s["id"]: s for s in get_stats(p.admin_url)["shapes"]}

    for command, name in TYPED:
        r = subprocess.run([str(shardscope_binary), "explain", "--routing", str(ROUTING_FILE), "--command", command],
                           capture_output=True, text=True, timeout=60)
        explained = json.loads(r.stdout)
        assert "shapeId" in explained, (command, explained)
        row = rows.get(explained["shapeId"])
        assert row is not None, (command, explained, [(s["command"], s["shape"]) for s in rows.values()])
        assert (row["ns"], row["command"], row["shape"]) == ("shop.orders", name, explained["shape"]), (row, explained)
