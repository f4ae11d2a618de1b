"""Temporary (not committed): saves /evaluate/sketches exports of several workloads for a
before/after byte comparison of `shardscope evaluate --file`."""
import json, subprocess, sys, urllib.request, random
from pathlib import Path
import pytest
REPO = Path(__file__).resolve().parents[2]
OUT = Path("/tmp/split_exports")
pytestmark = [pytest.mark.needs_proxy]

def _get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()

def _run(script, uri, *args, drop=True):
    subprocess.run([sys.executable, str(REPO / "workload" / script), "--uri", uri, *(["--drop"] if drop else []), *args],
                   check=True, capture_output=True, text=True, timeout=300)

def _save(p, name):
    OUT.mkdir(exist_ok=True)
    (OUT / f"{name}.json").write_text(_get(p.admin_url + "/evaluate/sketches"))

def test_orders(proxy, ferretdb):
    p = proxy(ferretdb.uri, "--evaluation.allow_values", "true", admin=True)
    _run("order_service.py", p.uri, "--orders", "1000", "--customers", "150", "--ops", "300", "--top-share", "0.4")
    _save(p, "orders")

def test_orders_rewrite(proxy, ferretdb):
    p = proxy(ferretdb.uri, "--evaluation.allow_values", "true", "--rewrite.rules", "shop.orders: orderId -> customerId", admin=True)
    _run("order_service.py", p.uri, "--orders", "1000", "--customers", "150", "--ops", "200")
    _save(p, "orders_rewrite")

def test_telemetry(proxy, ferretdb):
    p = proxy(ferretdb.uri, admin=True)
    _run("telemetry.py", p.uri, "--sensors", "2000", "--seconds", "10", "--queries", "40")
    _save(p, "telemetry")

def test_inventory(proxy, ferretdb):
    import pymongo
    p = proxy(ferretdb.uri, "--evaluation.candidates",
              'retail.inventory: {"warehouseLocation.country": 1, "warehouseId": 1};'
              'retail.inventory: {"warehouseId": 1, "quantity": 1}', admin=True)
    coll = pymongo.MongoClient(p.uri)["retail"]["inventory"]
    coll.drop()
    rng = random.Random(4)
    countries = ["US"] * 40 + ["DE"] * 15 + ["FR"] * 10
    warehouses = [(f"WH-{i:05d}", rng.choice(countries)) for i in range(300)]
    docs = [{"itemId": f"I-{rng.randrange(100000)}", "warehouseId": w, "warehouseLocation": {"country": c},
             "tags": ["a", "b"] if i % 7 == 0 else "x", "quantity": rng.randrange(500)}
            for i, (w, c) in enumerate(rng.choice(warehouses) for _ in range(1500))]
    coll.insert_many(docs)
    for _ in range(40):
        w, c = rng.choice(warehouses)
        list(coll.find({"warehouseLocation.country": c, "warehouseId": w}))
        coll.update_one({"warehouseLocation.country": c, "warehouseId": w}, {"$inc": {"quantity": -1}})
        coll.update_one({"itemId": "nope"}, {"$set": {"quantity": 1}}, upsert=True)
        coll.update_many({"quantity": {"$gt": 400}}, {"$set": {"hot": True}})
        coll.replace_one({"warehouseId": w}, {"warehouseId": w, "quantity": 3})
        coll.delete_one({"itemId": "gone"})
    _save(p, "inventory")
