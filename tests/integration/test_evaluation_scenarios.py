"""Shard-key evaluation from live traffic: the seed scenarios driven by real pymongo workloads
through the proxy to FerretDB, evaluated from the proxy's /evaluate endpoints and by
`shardscope evaluate --from URL` (fleet merge of two sidecars).

Skipped until the proxy serves /evaluate (the Evaluator wiring); the offline path of the same
acceptance criteria is tests/evaluation/evaluator_test.cpp.
"""
from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "workload"

pytestmark = [pytest.mark.needs_proxy, pytest.mark.slow]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def _evaluating_proxy(proxy, ferretdb):
    # The fleet merge (`shardscope evaluate --from`) needs the sampled documents and filters, which
    # leave a sidecar only with evaluation.allow_values (hashes and counts otherwise).
    return proxy(ferretdb.uri, "--evaluation.allow_values", "true", admin=True)


# FerretDB's SQLite backend scans the collection for each query (about 4 queries/s over 5,000
# orders on this machine), so the scenarios run at a reduced scale that keeps the seed's shape.
SMALL_ORDERS = ("--orders", "1000", "--customers", "150")


def _run(script: str, uri: str, *args: str, drop: bool = True) -> dict:
    out = subprocess.run([sys.executable, str(WORKLOAD / script), "--uri", uri, *(["--drop"] if drop else []), *args],
                         check=True, capture_output=True, text=True, timeout=300)
    return json.loads(out.stdout)


def _candidate(ns_report: dict, key: dict) -> dict:
    for c in ns_report["candidates"]:
        if c["key"] == key:
            return c
    raise AssertionError(f"candidate {key} not evaluated: {[c['key'] for c in ns_report['candidates']]}")


def _ns(report: dict, ns: str) -> dict:
    return next(n for n in report["namespaces"] if n["ns"] == ns)


def test_order_service_verdict(proxy, ferretdb, shardscope_binary):
    p = _evaluating_proxy(proxy, ferretdb)
    _run("order_service.py", p.uri, *SMALL_ORDERS, "--ops", "300")
    report = json.loads(_get(p.admin_url + "/evaluate"))
    orders = _ns(report, "shop.orders")
    assert orders["verdict"]["key"] == {"customerId": 1, "orderDate": 1}
    assert _candidate(orders, {"_id": 1})["monotonicity"]["pass"] is False
    assert _candidate(orders, {"_id": 1})["simulatedCluster"]["maxShare"] > 0.95
    assert _candidate(orders, {"_id": "hashed"})["singleOrMultiShardShare"] < 0.01
    assert _candidate(orders, {"customerId": 1})["simulatedCluster"]["jumboRisk"] is True
    text = _get(p.admin_url + "/evaluate?format=text")
    assert "Choice: {customerId: 1, orderDate: 1}" in text
    assert "What I am accepting" in text and "What would change my mind" in text
    # The CLI gives the same verdict from the sketches.
    out = subprocess.run([str(shardscope_binary), "evaluate", "--from", p.admin_url, "--json"],
                         check=True, capture_output=True, text=True, timeout=60)
    assert _ns(json.loads(out.stdout), "shop.orders")["verdict"]["key"] == {"customerId": 1, "orderDate": 1}


def test_order_service_heavy_customer_changes_verdict(proxy, ferretdb):
    p = _evaluating_proxy(proxy, ferretdb)
    _run("order_service.py", p.uri, *SMALL_ORDERS, "--ops", "300", "--top-share", "0.4")
    orders = _ns(json.loads(_get(p.admin_url + "/evaluate")), "shop.orders")
    assert orders["verdict"]["key"] != {"customerId": 1, "orderDate": 1}
    assert _candidate(orders, {"customerId": 1, "orderDate": 1})["frequency"]["pass"] is False


def test_telemetry_ranged_vs_hashed(proxy, ferretdb):
    p = _evaluating_proxy(proxy, ferretdb)
    _run("telemetry.py", p.uri, "--sensors", "2000", "--seconds", "10", "--queries", "40")
    readings = _ns(json.loads(_get(p.admin_url + "/evaluate")), "telemetry.readings")
    # Chunks on sensorId value ranges: the fast "Building HQ" sensors make a hot shard (seed 002).
    by_sensor = _candidate(readings, {"sensorId": 1})["simulatedCluster"]["maxMinRatio"]
    hashed = _candidate(readings, {"sensorId": "hashed"})["simulatedCluster"]["maxMinRatio"]
    assert by_sensor > 2.0 and hashed < 1.2, (by_sensor, hashed)
    # Split on the full key, their ranges split by ts too (issue 16 item 4).
    assert _candidate(readings, {"sensorId": 1, "ts": 1})["frequency"]["pass"] is True
    ts = _candidate(readings, {"ts": 1})
    assert ts["monotonicity"]["pass"] is False and ts["simulatedCluster"]["maxShare"] > 0.9


def test_fleet_merge(proxy, ferretdb, shardscope_binary):
    a = _evaluating_proxy(proxy, ferretdb)
    b = proxy(ferretdb.uri, "--evaluation.allow_values", "true", admin=True)
    _run("order_service.py", a.uri, *SMALL_ORDERS, "--ops", "150", "--seed", "3")
    _run("order_service.py", b.uri, *SMALL_ORDERS, "--ops", "150", "--seed", "4", drop=False)
    out = subprocess.run([str(shardscope_binary), "evaluate", "--from", a.admin_url, "--from", b.admin_url],
                         check=True, capture_output=True, text=True, timeout=60)
    assert "shop.orders" in out.stdout and "Choice:" in out.stdout


# ---- issue 16: every way a document comes into being, nested keys, mutability, the rewrite ----

def _mongo(uri: str):
    import pymongo
    return pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000)


def test_upsert_only_bucket_collection(proxy, ferretdb):
    """Seed 000: a bucket collection written only by upserts (updateOne, a bulk of UpdateOnes,
    findOneAndUpdate). The documents the upserts insert are observed, as the reply's `upserted`
    confirms them; upserts that found their bucket are counted apart."""
    import datetime
    import pymongo
    p = _evaluating_proxy(proxy, ferretdb)
    coll = _mongo(p.uri)["telemetry"]["buckets"]
    coll.drop()
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    buckets, upserts = set(), 0
    for minute in range(0, 30, 2):
        ops = []
        for s in range(40):
            ts = start + datetime.timedelta(minutes=minute, seconds=s)
            bucket = ts.replace(minute=ts.minute - ts.minute % 10, second=0)
            sensor = f"sensor-{s * 25:05d}"
            buckets.add((sensor, bucket))
            upserts += 1
            q = {"sensorId": sensor, "bucketStart": bucket}
            u = {"$push": {"readings": {"ts": ts, "v": 1.0}}, "$inc": {"count": 1}, "$setOnInsert": {"created": ts}}
            if s % 3 == 0:
                coll.update_one(q, u, upsert=True)
            elif s % 3 == 1:
                ops.append(pymongo.UpdateOne(q, u, upsert=True))
            else:
                coll.find_one_and_update(q, u, upsert=True)
        coll.bulk_write(ops, ordered=True)
    for s in range(10):
        list(coll.find({"sensorId": f"sensor-{s * 25:05d}"}))
    report = json.loads(_get(p.admin_url + "/evaluate"))
    ns = _ns(report, "telemetry.buckets")
    assert ns["inserts"] == len(buckets), ns["inserts"]
    assert ns["upserted"] == len(buckets)
    assert ns["upsertsMatched"] == upserts - len(buckets)
    key = {"sensorId": 1, "bucketStart": 1}
    c = _candidate(ns, key)
    assert c["writeDistribution"]["percentageOfShardKeyUpdates"] == 0
    assert c["shardscope"]["upsertTargeting"]["percentageOfUpsertsWithoutShardKey"] == 0
    assert "sensorId" in ns["verdict"]["key"]
    assert _candidate(ns, {"_id": "hashed"})["shardscope"]["upsertTargeting"]["pass"] is False
    text = _get(p.admin_url + "/evaluate?format=text")
    assert "by upserts" in text and "no inserts observed" not in text and "no documents observed" not in text


def test_nested_compound_key_and_mutable_field(proxy, ferretdb):
    """Seed 004: {"warehouseLocation.country": 1, warehouseId: 1}; the largest country spreads over
    shards on its warehouseId suffix; a key holding the $inc'ed quantity fails mutability."""
    import random
    p = proxy(ferretdb.uri, "--evaluation.candidates",
              'retail.inventory: {"warehouseLocation.country": 1, "warehouseId": 1};'
              'retail.inventory: {"warehouseId": 1, "quantity": 1}', admin=True)
    coll = _mongo(p.uri)["retail"]["inventory"]
    coll.drop()
    rng = random.Random(4)
    countries = ["US"] * 40 + ["DE"] * 15 + ["FR"] * 10 + ["JP"] * 10 + ["BR"] * 10 + ["IN"] * 8 + ["GB"] * 7
    warehouses = [(f"WH-{i:05d}", rng.choice(countries)) for i in range(800)]
    docs = []
    for i in range(3000):
        wid, country = rng.choice(warehouses)
        docs.append({"itemId": f"ITEM-{rng.randrange(100000)}", "warehouseId": wid,
                     "warehouseLocation": {"country": country, "region": f"R{rng.randrange(30)}"},
                     "quantity": rng.randrange(500)})
    coll.insert_many(docs)
    for _ in range(60):
        wid, country = rng.choice(warehouses)
        list(coll.find({"warehouseLocation.country": country, "warehouseId": wid}))
        coll.update_one({"warehouseLocation.country": country, "warehouseId": wid}, {"$inc": {"quantity": -1}})
    ns = _ns(json.loads(_get(p.admin_url + "/evaluate")), "retail.inventory")
    c = _candidate(ns, {"warehouseLocation.country": 1, "warehouseId": 1})
    assert 5 <= c["cardinality"]["prefixEstimate"] <= 9
    assert 0.33 < c["frequency"]["prefixTopShare"] < 0.47
    assert c["frequency"]["pass"] is True and c["simulatedCluster"]["maxShare"] < 0.4
    m = _candidate(ns, {"warehouseId": 1, "quantity": 1})
    assert m["writeDistribution"]["percentageOfShardKeyUpdates"] > 99 and m["passes"] is False
    assert "quantity" not in ns["verdict"]["key"]
    assert "value  =" not in _get(p.admin_url + "/evaluate?format=text")


def test_rewrite_in_force_shows_both_shares(proxy, ferretdb):
    p = proxy(ferretdb.uri, "--evaluation.allow_values", "true", "--rewrite.rules",
              "shop.orders: orderId -> customerId", admin=True)
    _run("order_service.py", p.uri, *SMALL_ORDERS, "--ops", "200")
    orders = _ns(json.loads(_get(p.admin_url + "/evaluate")), "shop.orders")
    rw = _candidate(orders, {"customerId": 1, "orderDate": 1})["shardscope"]["rewrite"]
    assert rw["inForce"] is True
    assert rw["singleOrMultiShardShareAfterRewrite"] > rw["singleOrMultiShardShareAsSent"] + 0.1, rw
    assert any("orderId" in s for s in rw["rescuedShapes"]), rw
