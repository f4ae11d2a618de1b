"""The demo's pieces fit together: its routing file spreads the workload's customers over every shard
(it used to put all of them in the first chunk, so shardA looked hot), demo.sh installs only what
the proxy needs, and no port it uses is one of MongoDB's defaults."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from harness import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "workload"))
from order_service import customer_id, customer_weights  # noqa: E402

DEMO = (REPO_ROOT / "scripts" / "demo.sh").read_text()


def demo_default(name: str) -> str:
    return re.search(rf'\b{name}="?([^" \n]+)"?', DEMO).group(1)


def owner(chunks, cid):
    for c in chunks:
        lo, hi = c["min"]["customerId"], c["max"]["customerId"]
        if (isinstance(lo, dict) or lo <= cid) and (isinstance(hi, dict) or cid < hi):
            return c["shard"]
    raise AssertionError(cid)


def test_demo_routing_spreads_the_workload_over_every_shard():
    routing = demo_default("routing").replace("$here", str(REPO_ROOT))
    customers = int(re.search(r"--customers (\d+)", DEMO).group(1))
    table = json.loads(open(routing).read())
    chunks = table["collections"][0]["chunks"]
    shards = {c["shard"] for c in chunks}
    weight = dict.fromkeys(shards, 0.0)
    for i, w in enumerate(customer_weights(customers, 0.03, 3)):
        weight[owner(chunks, customer_id(i))] += w
    assert len(shards) == 6 and min(weight.values()) > 0, weight
    assert max(weight.values()) / min(weight.values()) < 1.5, weight  # seed 002's hot-shard threshold


def test_demo_routing_file_is_what_the_generator_makes():
    out = subprocess.run([sys.executable, str(REPO_ROOT / "workload" / "demo_routing.py"), "--customers", "300"],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == json.loads((REPO_ROOT / "examples/routing/demo_orders_6shards.json").read_text())


def test_demo_installs_only_what_the_proxy_needs():
    assert "setup.sh\" --demo" in DEMO
    setup = (REPO_ROOT / "scripts" / "setup.sh").read_text()
    core = re.search(r"apt_packages=\((.*?)\)", setup, re.S).group(1).split()
    for tool in ("chromium", "prometheus", "haproxy", "nodejs", "npm", "clang", "libgtest-dev", "libbenchmark-dev"):
        assert tool not in core, tool
        assert tool in setup, f"{tool}: the full setup (scripts/test.sh) must still install it"
    assert "libcli11-dev" in core


@pytest.mark.parametrize("name", ["listen", "admin", "ferret_port"])
def test_demo_ports_avoid_mongodb_defaults(name):
    port = int(demo_default(name).rsplit(":", 1)[-1])
    assert not 27017 <= port <= 27020, (name, port)


def test_demo_summary_tells_distinct_orders_from_learning_events():
    """Issue 26 item 8: "learned 11444 mappings" while the map held 2000 (learned counts events)."""
    stats = {"shards": [{"name": "shardA", "ops": 10}],
             "totals": {"targeting": {"single": 10}, "shardedOps": 10, "hostsTargeted": {"oneShard": 10, "allShards": 0}},
             "rewrite": [{"ns": "shop.orders", "lookupField": "orderId", "addFields": ["customerId"], "applied": 300,
                          "targetingBefore": {"broadcast": 300}, "targetingAfter": {"single": 300},
                          "fallbacks": {}, "mapping": {"size": 2000, "learned": 11444}}]}
    out = subprocess.run([sys.executable, str(REPO_ROOT / "workload" / "demo_summary.py")], input=json.dumps(stats),
                         capture_output=True, text=True, check=True).stdout
    assert "the map holds 2000 distinct orderId values (11444 learning events)" in out, out
    assert "learned 11444 mappings" not in out


def test_demo_creates_the_indexes_an_application_would_have():
    """Issue 26 item 9: the demo collection had no index for its lookups."""
    assert re.search(r"order_service\.py\" --uri \"mongodb://\$listen/\" [^\n]*--indexes", DEMO), "demo.sh passes --indexes"
    from order_service import INDEXES
    keys = [list(m.document["key"].items()) for m in INDEXES]
    assert [("customerId", 1), ("orderDate", -1)] in keys and [("orderId", 1)] in keys, keys


@pytest.mark.needs_proxy
def test_workload_creates_its_indexes_through_the_proxy(ferretdb, proxy):
    p = proxy(ferretdb.uri, admin=True)
    out = subprocess.run([sys.executable, str(REPO_ROOT / "workload" / "order_service.py"), "--uri", p.uri, "--drop",
                          "--indexes", "--ops", "5", "--orders", "50", "--customers", "10"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    import pymongo
    with pymongo.MongoClient(ferretdb.uri) as c:  # as stored upstream, created before the workload ran
        names = set(c.shop.orders.index_information())
    assert {"customerId_1_orderDate_-1", "orderId_1", "orderDate_1", "status_1"} <= names, names
    assert json.loads(out.stdout)["indexes"] == ["customerId_1_orderDate_-1", "orderId_1", "orderDate_1", "status_1"]
