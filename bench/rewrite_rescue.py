#!/usr/bin/env python3
"""Issue 27 acceptance: the share of orderId lookups the lookup rewrite answers single-shard
without a re-run, with every answer equal to the server's own.

    python3 bench/rewrite_rescue.py [--binary build/shardscope] [--upstream ferretdb|standin|both]

A seeded order workload through `shardscope proxy --rewrite-rule 'shop.orders: orderId -> customerId'`
(routing tests/data/routing/orders_6shards.json): 150 orders of 1-3 lines inserted through the
sidecar; then 20 orders moved to another customer behind its back, 10 moved whole through it
(updateMany on the order), 10 with one line moved through it (updateOne on a line); then three
rounds over every order of find (no limit), find_one, count_documents, update_one and
find_one_and_update by orderId. Every read is compared with the same read sent to the upstream
directly; writes are checked by their n. `ferretdb`: FerretDB (a standalone: drivers send no
txnNumber). `standin`: tests/support/retryable_mongos.py, which says it is mongos, so pymongo sends
each single-document write as a retryable write (txnNumber), and which answers a repeated
txnNumber from its record as mongos does.

single-shard without a re-run = rewrites applied - fallbacks of every cause - confirmed retryable
writes that then matched nothing, over the lookup phase's orderId commands.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))

import pymongo  # noqa: E402

import harness  # noqa: E402
from retryable_mongos import RetryableMongos  # noqa: E402

RULE = "shop.orders: orderId -> customerId"
ROUTING = str(ROOT / "tests" / "data" / "routing" / "orders_6shards.json")


def page(proxy):
    with urllib.request.urlopen(proxy.admin_url + "/rewrite", timeout=10) as r:
        return json.load(r)[0]


def rescued(p):
    events = p.get("events", {})
    return p["applied"] - sum(p["fallbacks"].values()) - events.get("retryable write: confirmed, then matched nothing", 0)


def run(upstream_uri, binary, workdir):
    rng = random.Random(27)
    proxy = harness.Proxy(upstream_uri, "--routing", ROUTING, "--rewrite-rule", RULE, admin=True,
                          workdir=workdir / "proxy", binary=binary).start()
    try:
        through = pymongo.MongoClient(proxy.uri).shop.orders
        direct = pymongo.MongoClient(upstream_uri).shop.orders
        orders = ["O%04d" % i for i in range(150)]
        docs, _id = [], 0
        for i, o in enumerate(orders):
            for line in range(i % 3 + 1):
                docs.append({"_id": _id, "orderId": o, "line": line, "customerId": "cust-%04d" % (i * 7 % 1000), "n": 0})
                _id += 1
        through.insert_many(docs)
        shuffled = orders[:]
        rng.shuffle(shuffled)
        for o in shuffled[:20]:
            direct.update_many({"orderId": o}, {"$set": {"customerId": "cust-9%03d" % rng.randrange(1000)}})
        for o in shuffled[20:30]:
            through.update_many({"orderId": o}, {"$set": {"customerId": "cust-8%03d" % rng.randrange(1000)}})
        for o in shuffled[30:40]:
            through.update_one({"orderId": o, "line": 0}, {"$set": {"customerId": "cust-7%03d" % rng.randrange(1000)}})
        start = page(proxy)
        lookups = wrong = 0
        for _ in range(3):
            for o in orders:
                f = {"orderId": o}
                want = sorted(d["_id"] for d in direct.find(f))
                wrong += sorted(d["_id"] for d in through.find(f)) != want
                wrong += (through.find_one(f) is None) != (not want)
                wrong += through.count_documents(f) != len(want)
                wrong += through.update_one(f, {"$inc": {"n": 1}}).matched_count != min(1, len(want))
                wrong += (through.find_one_and_update(f, {"$inc": {"n": 1}}) is None) != (not want)
                lookups += 5
        end = page(proxy)
        diff = {"applied": end["applied"] - start["applied"],
                "fallbacks": {k: v - start["fallbacks"].get(k, 0) for k, v in end["fallbacks"].items()},
                "events": {k: v - start.get("events", {}).get(k, 0) for k, v in end.get("events", {}).items()}}
        return {"lookups": lookups, "single_shard_without_rerun": rescued(diff), "wrong_answers": wrong,
                "share": round(rescued(diff) / lookups, 4), "delta": diff}
    finally:
        proxy.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=str(ROOT / "build" / "shardscope"))
    ap.add_argument("--upstream", choices=["ferretdb", "standin", "both"], default="both")
    args = ap.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="rewrite_rescue_") as tmp:
        tmp = Path(tmp)
        if args.upstream in ("ferretdb", "both"):
            f = harness.FerretDB(tmp / "ferretdb").start()
            try:
                results["ferretdb"] = run(f.uri, Path(args.binary).resolve(), tmp / "f")
            finally:
                f.stop()
        if args.upstream in ("standin", "both"):
            peer = RetryableMongos().start()
            try:
                results["standin (retryable writes)"] = run(peer.uri, Path(args.binary).resolve(), tmp / "s")
                results["standin (retryable writes)"]["replayed_txn"] = peer.replayed
            finally:
                peer.stop()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
