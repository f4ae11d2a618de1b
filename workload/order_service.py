#!/usr/bin/env python3
"""Seed 003's order service as a seeded, repeatable workload driven through a real driver (pymongo).

Customers have a heavy-tailed order count (Zipf-like; the top customer holds --top-share of the
orders). The query profile is the seed's: 62% orders of one customer (recent first), 21% one order
by orderId, 9% a date range, 6% by status, 2% a revenue aggregation; plus status updates.
Prints one JSON object with what it did, so tests can compare counts with the proxy's statistics.
"""
import argparse
import datetime
import json
import random
import sys
import time

from bson import ObjectId
from pymongo import ASCENDING, DESCENDING, IndexModel, MongoClient

STATUSES = ["new", "paid", "shipped", "delivered", "returned"]
PROFILE = [("by_customer", 62), ("by_order_id", 21), ("date_range", 9), ("by_status", 6), ("revenue", 2)]
EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
# The indexes the order service's queries need, as its application would create them: one customer's
# orders newest first, one order by id (unique), date ranges (and the revenue $match), status.
INDEXES = [
    IndexModel([("customerId", ASCENDING), ("orderDate", DESCENDING)], name="customerId_1_orderDate_-1"),
    IndexModel([("orderId", ASCENDING)], name="orderId_1", unique=True),
    IndexModel([("orderDate", ASCENDING)], name="orderDate_1"),
    IndexModel([("status", ASCENDING)], name="status_1"),
]


def customer_id(i):
    return "C%04d" % i


def customer_weights(customers, top_share, seed=3):
    """Heavy-tailed weights: one customer holds exactly top_share; the others share the rest as
    1/(i+10) (top 20 together ~25%, as in seed 003), so no tail customer outweighs the top one.
    Weights are assigned to customer ids in a seeded random order: id and size are unrelated."""
    tail = [1.0 / (i + 10) for i in range(1, customers)]
    tail_total = sum(tail)
    weights = [top_share] + [w / tail_total * (1.0 - top_share) for w in tail]
    random.Random(seed * 7919 + customers).shuffle(weights)
    return weights


def make_orders(rng, customers, orders, top_share, seed):
    weights = customer_weights(customers, top_share, seed)
    picks = rng.choices(range(customers), weights=weights, k=orders)
    docs = []
    for n, c in enumerate(picks):
        created = EPOCH + datetime.timedelta(minutes=n)  # monotonic, as real order times are
        docs.append({
            "_id": ObjectId(),
            "orderId": "O%07d" % n,
            "customerId": customer_id(c),
            "orderDate": created,
            "status": rng.choice(STATUSES),
            "total": round(rng.uniform(5, 500), 2),
        })
    return docs


def run(args):
    rng = random.Random(args.seed)
    client = MongoClient(args.uri, serverSelectionTimeoutMS=10000)
    coll = client[args.db][args.collection]
    done = {"inserted": 0, "by_customer": 0, "by_order_id": 0, "date_range": 0, "by_status": 0, "revenue": 0,
            "status_updates": 0, "errors": 0}
    if args.drop:
        coll.drop()
    if args.indexes:
        done["indexes"] = coll.create_indexes(INDEXES)
    orders = make_orders(rng, args.customers, args.orders, args.top_share, args.seed)
    for i in range(0, len(orders), args.batch):
        coll.insert_many(orders[i:i + args.batch], ordered=False)
    done["inserted"] = len(orders)

    weights = customer_weights(args.customers, args.top_share, args.seed)
    by_order = {d["orderId"]: d["_id"] for d in orders}

    def lookup(order_id):
        # --lookup-field _id reproduces seed 003's "find one order by order_id" as an _id lookup.
        return {"_id": by_order[order_id]} if args.lookup_field == "_id" else {"orderId": order_id}

    kinds = [k for k, _ in PROFILE]
    shares = [w for _, w in PROFILE]
    started = time.time()
    for _ in range(args.ops):
        kind = rng.choices(kinds, weights=shares)[0]
        if kind == "by_customer":
            c = customer_id(rng.choices(range(args.customers), weights=weights)[0])
            list(coll.find({"customerId": c}).sort("orderDate", -1).limit(20))
        elif kind == "by_order_id":
            coll.find_one(lookup("O%07d" % rng.randrange(len(orders))))
        elif kind == "date_range":
            start = EPOCH + datetime.timedelta(minutes=rng.randrange(len(orders)))
            list(coll.find({"orderDate": {"$gte": start, "$lt": start + datetime.timedelta(minutes=60)}}))
        elif kind == "by_status":
            list(coll.find({"status": rng.choice(STATUSES)}).limit(50))
        else:
            start = EPOCH + datetime.timedelta(minutes=rng.randrange(len(orders)))
            list(coll.aggregate([{"$match": {"orderDate": {"$gte": start}}},
                                 {"$group": {"_id": "$customerId", "revenue": {"$sum": "$total"}}}]))
        done[kind] += 1
        if rng.random() < args.update_share:
            coll.update_one(lookup("O%07d" % rng.randrange(len(orders))), {"$set": {"status": rng.choice(STATUSES)}})
            done["status_updates"] += 1
    done["seconds"] = round(time.time() - started, 3)
    return done


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--uri", required=True)
    p.add_argument("--db", default="shop")
    p.add_argument("--collection", default="orders")
    p.add_argument("--customers", type=int, default=500)
    p.add_argument("--orders", type=int, default=5000)
    p.add_argument("--ops", type=int, default=2000)
    p.add_argument("--top-share", type=float, default=0.03, help="share of orders held by the top customer")
    p.add_argument("--update-share", type=float, default=0.1, help="chance of a status update after each query")
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--lookup-field", choices=["orderId", "_id"], default="orderId",
                   help="field of the one-order lookups and status updates")
    p.add_argument("--drop", action="store_true", help="drop the collection first")
    p.add_argument("--indexes", action="store_true",
                   help="create the indexes the queries need (customerId+orderDate, orderId, orderDate, status) first")
    json.dump(run(p.parse_args()), sys.stdout)
    print()


if __name__ == "__main__":
    main()
