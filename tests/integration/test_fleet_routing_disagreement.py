"""A fleet merge (`shardscope evaluate --from A --from B`) of sidecars whose routing tables shard one
namespace on different keys (a refine or reshard that one sidecar has reloaded and the other not)
has no single current key to judge against. Before: each export's currentKey overwrote the last,
so the verdict depended on the order of --from and nothing said the sidecars disagreed. Now the
merge refuses, naming the namespace and both keys.

Real pymongo through two build/shardscope sidecars to FerretDB: one routed by orders_6shards.json
({customerId: 1, orderDate: 1}), one by orders_3shards.yaml ({customerId: 1}).
"""
from __future__ import annotations

import datetime as dt
import subprocess

import pymongo
import pytest

from harness import REPO_ROOT

pytestmark = pytest.mark.needs_proxy

ROUTING = REPO_ROOT / "tests" / "data" / "routing"


def _evaluate(binary, *urls: str) -> subprocess.CompletedProcess:
    args = [a for u in urls for a in ("--from", u)]
    return subprocess.run([str(binary), "evaluate", *args], capture_output=True, text=True, timeout=300)


def test_sidecars_on_different_routing_tables_are_not_merged_into_one_verdict(ferretdb, proxy, shardscope_binary):
    a = proxy(ferretdb.uri, "--routing", str(ROUTING / "orders_6shards.json"), admin=True)
    b = proxy(ferretdb.uri, "--routing", str(ROUTING / "orders_3shards.yaml"), admin=True)
    with pymongo.MongoClient(a.uri, serverSelectionTimeoutMS=20000) as client:
        client.shop.orders.drop()
    base = dt.datetime(2024, 1, 1)
    for n, p in enumerate((a, b)):
        with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
            coll = client.shop.orders
            coll.insert_many([{"_id": n * 1000 + i, "customerId": "C%04d" % (i % 40), "orderDate": base + dt.timedelta(hours=i)}
                              for i in range(200)])
            for i in range(40):
                coll.find_one({"customerId": "C%04d" % i})

    for order in ((a, b), (b, a)):
        r = _evaluate(shardscope_binary, *(p.admin_url for p in order))
        assert r.returncode == 1, r.stdout[:2000]
        assert "shop.orders is sharded on" in r.stderr and "routing tables differ" in r.stderr, r.stderr
        assert '"customerId": 1, "orderDate": 1' in r.stderr or "orderDate" in r.stderr, r.stderr
    # Each sidecar alone still evaluates.
    assert _evaluate(shardscope_binary, a.admin_url).returncode == 0
    assert _evaluate(shardscope_binary, b.admin_url).returncode == 0
