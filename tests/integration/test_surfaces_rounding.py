"""The same figure prints the same digits on the page (a real Chromium) and in `shardscope stats
--once` (the surfaces3 probe): both format /stats' one number, and they must round it alike.

- An exact tie: 49 targeted of 400 sharded operations is 12.25%. JavaScript's toFixed rounds it up
  (12.3%), the CLI's printf to the even digit (12.2%): the page and the CLI disagreed.
- A share under 0.1%: the page printed two decimals (0.09%), the CLI one (0.1%).
Through a real proxy to FerretDB with pymongo.
"""
from __future__ import annotations

import json
import re
import subprocess

import pymongo
import pytest

from harness import REPO_ROOT
from stats_helpers import (CUSTOMERS, ROUTING_FILE, chromium_binary, dump_dom, get_stats, http_request, seed_orders,
                           seeded_client_for_the_page)

pytestmark = pytest.mark.needs_proxy


def _printf_pct(x: float) -> str:
    """A share as printf("%.1f%%") / ("%.2f%%" under 0.1%) writes it (Python rounds exact ties to even, as glibc)."""
    return f"{100 * x:.2f}%" if 0 < x < 0.001 else f"{100 * x:.1f}%"


def test_page_and_cli_print_the_same_digits_for_one_share(ferretdb, proxy, shardscope_binary):
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with seeded_client_for_the_page(p) as client:
        coll = client.shop.orders
        for i in range(49):  # targeted: the shard-key prefix
            coll.find_one({"customerId": CUSTOMERS[i % len(CUSTOMERS)]})
        for _ in range(350):  # broadcast, and the aggregate below (351)
            coll.find_one({"status": "none"})
        for _ in range(700):  # no collection: more operations, so one of them is under 0.1%
            client.admin.command("ping")
        coll.count_documents({"region": "eu"})  # one operation of its own shape (an aggregate, broadcast)
    stats = get_stats(p.admin_url)
    t = stats["totals"]
    assert (t["shardedOps"], t["hostsTargeted"]["oneShard"]) == (400, 49), t
    rare = next(s for s in stats["shapes"] if s["command"] == "aggregate" and s["ns"] == "shop.orders")
    assert rare["count"] == 1 and rare["share"] < 0.001, rare

    dom = dump_dom(p.admin_url + "/")
    assert 'data-loaded="true"' in dom
    once = subprocess.run([str(shardscope_binary), "stats", "--admin", p.admin_url, "--once", "--top", "100"],
                          capture_output=True, text=True, timeout=60, check=True).stdout
    assert get_stats(p.admin_url)["totals"]["ops"] == t["ops"], "traffic changed under the comparison"

    targeted = re.search(r'id="targeted-share"[^>]*>([^<]*)<', dom).group(1)
    assert targeted == _printf_pct(t["targetedShare"]) == "12.2%", targeted
    assert f"targeted {targeted} (oneShard)" in once, once
    row = re.search(r'<tr class="shape"[^>]*data-shape-id="%s"[^>]*>(.*?)</tr>' % rare["id"], dom, re.S).group(1)
    page_share = re.search(r'data-field="share"[^>]*>([^<]*)<', row).group(1)
    cli_line = next(l for l in once.splitlines() if l.split()[:1] == ["1"] and "shop.orders aggregate" in l)
    assert page_share == cli_line.split()[1] == _printf_pct(rare["share"]), (page_share, cli_line)


def test_demo_screen_prints_the_shares_stats_computed(ferretdb, proxy, shardscope_binary):
    """The demo's last screen (workload/demo_summary.py) recomputed the targeted share from the counts
    as 100 * n / d: 23 of 80 is 28.75 there (28.8%) but 28.749999999999996 as 100 times /stats' share
    (28.7% on the page and in the CLI). It now prints /stats' own figures, as the page does."""
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with seeded_client_for_the_page(p) as client:
        coll = client.shop.orders
        for i in range(23):
            coll.find_one({"customerId": CUSTOMERS[i % len(CUSTOMERS)]})
        for _ in range(57):
            coll.find_one({"status": "none"})
    stats = get_stats(p.admin_url)
    assert (stats["totals"]["shardedOps"], stats["totals"]["hostsTargeted"]["oneShard"]) == (80, 23), stats["totals"]
    summary = subprocess.run(["python3", str(REPO_ROOT / "workload" / "demo_summary.py")], input=json.dumps(stats),
                             capture_output=True, text=True, check=True).stdout
    dom = dump_dom(p.admin_url + "/")
    once = subprocess.run([str(shardscope_binary), "stats", "--admin", p.admin_url, "--once"],
                          capture_output=True, text=True, timeout=60, check=True).stdout
    targeted = re.search(r'id="targeted-share"[^>]*>([^<]*)<', dom).group(1)
    broadcast = re.search(r'id="broadcast-share"[^>]*>([^<]*)<', dom).group(1)
    assert f"targeted {targeted} (oneShard)  broadcast {broadcast} (allShards" in once, once
    assert f"targeted {targeted} (oneShard)  broadcast {broadcast} (allShards)" in summary, (targeted, summary)
    for shard in stats["shards"]:  # per shard: the CLI's figure and the screen's
        line = next(l for l in summary.splitlines() if l.split()[:1] == [shard["name"]])
        assert f"  {shard['name']} {shard['ops']} ({line.split()[2]})" in once, (line, once)


def test_stats_and_metrics_carry_one_share_to_the_same_printed_digit(ferretdb, proxy, shardscope_binary):
    """/stats wrote shares with 6 significant digits, /metrics with every digit: 836 targeted of 1003
    is 0.8334995..., 83.3% from /metrics (a Grafana panel at one decimal) but 0.8335 in /stats, 83.4% on
    the page and in the CLI. /stats now writes the double exactly as /metrics does."""
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with seeded_client_for_the_page(p) as client:
        coll = client.shop.orders
        for i in range(836):
            coll.find_one({"customerId": CUSTOMERS[i % len(CUSTOMERS)]})
        for _ in range(167):
            coll.find_one({"status": "none"})
    stats = get_stats(p.admin_url)
    t = stats["totals"]
    assert (t["shardedOps"], t["hostsTargeted"]["oneShard"]) == (1003, 836), t
    status, _, body = http_request(p.admin_url, path="/metrics")
    assert status == 200
    scraped = float(re.search(r"^shardscope_targeted_share (\S+)$", body.decode(), re.M).group(1))
    assert t["targetedShare"] == scraped == 836 / 1003, (t["targetedShare"], scraped)
    dom = dump_dom(p.admin_url + "/")
    once = subprocess.run([str(shardscope_binary), "stats", "--admin", p.admin_url, "--once"],
                          capture_output=True, text=True, timeout=60, check=True).stdout
    targeted = re.search(r'id="targeted-share"[^>]*>([^<]*)<', dom).group(1)
    assert targeted == _printf_pct(scraped) == "83.3%", targeted
    assert f"targeted {targeted} (oneShard)" in once, once


def test_a_shape_without_sharded_operations_shows_no_broadcast_share(ferretdb, proxy, shardscope_binary):
    """A shape that never reached a sharded collection (ping, an unsharded namespace) was "0.0%"
    broadcast on the page and in the CLI: 0 of 0, an unknown shown as a figure. /stats writes null
    (as the totals' shares without a sharded operation), the page and the CLI show "-"."""
    if chromium_binary() is None:
        pytest.fail("chromium not installed (Debian package chromium)")
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        client.shop.other.insert_one({"x": 1})  # not in the routing file: unsharded
        client.shop.other.find_one({"x": 1})
    stats = get_stats(p.admin_url)
    unsharded = next(s for s in stats["shapes"] if s["ns"] == "shop.other" and s["command"] == "find")
    sharded = next(s for s in stats["shapes"] if s["ns"] == "shop.orders" and s["command"] == "insert")
    assert unsharded["shardedOps"] == 0 and unsharded["broadcastShare"] is None, unsharded
    assert unsharded["targetedShare"] is None and unsharded["allShardsShare"] is None, unsharded
    assert sharded["shardedOps"] > 0 and sharded["broadcastShare"] == 1, sharded
    dom = dump_dom(p.admin_url + "/")
    once = subprocess.run([str(shardscope_binary), "stats", "--admin", p.admin_url, "--once", "--top", "100"],
                          capture_output=True, text=True, timeout=60, check=True).stdout
    for shape, shown in ((unsharded, "-"), (sharded, "100.0%")):
        row = re.search(r'<tr class="shape"[^>]*data-shape-id="%s"[^>]*>(.*?)</tr>' % shape["id"], dom, re.S).group(1)
        assert re.search(r'data-field="broadcast"[^>]*>([^<]*)<', row).group(1) == shown, (shape, row)
        line = next(l for l in once.splitlines() if f"{shape['ns']} {shape['command']}" in l)
        assert line.split()[3] == shown, (shape, line)


def _number(text: str) -> str:
    """The digits of a printed latency ("1.23 ms", "1.23ms", "12 µs", "12us"): what must agree."""
    return re.match(r"[\d.]+", text).group(0)


def test_shards_reached_and_latencies_print_the_same_digits_on_the_page_and_in_the_cli(ferretdb, proxy,
                                                                                     shardscope_binary):
    """A shape's mean shards reached and its latencies, on the page and in `stats --once`. Before: the
    page wrote the mean with toFixed (2.25 shards: 2.3, printf 2.2) and latencies with its own
    precision (1.23 ms beside the CLI's 1.2ms; 300 ns beside 0us)."""
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with seeded_client_for_the_page(p) as client:
        coll = client.shop.orders
        # One shape ({customerId: {$in: [...]}}): 1, 2, 3 and 3 chunk owners reached, 2.25 on average.
        for customers in (["C0100"], ["C0100", "C1000"], ["C0100", "C1000", "C2000"], ["C0100", "C1000", "C2000"]):
            list(coll.find({"customerId": {"$in": customers}}))
    stats = get_stats(p.admin_url)
    shape = next(s for s in stats["shapes"] if s["command"] == "find" and "$in" in s["shape"])
    assert shape["count"] == 4 and shape["shardsTouched"]["mean"] == 2.25, shape
    dom = dump_dom(p.admin_url + "/")
    assert 'data-loaded="true"' in dom
    once = subprocess.run([str(shardscope_binary), "stats", "--admin", p.admin_url, "--once", "--top", "100"],
                          capture_output=True, text=True, timeout=60, check=True).stdout
    assert get_stats(p.admin_url)["shapes"] == stats["shapes"], "traffic changed under the comparison"

    row = re.search(r'<tr class="shape"[^>]*data-shape-id="%s"[^>]*>(.*?)</tr>' % shape["id"], dom, re.S).group(1)
    cell = lambda field: re.search(r'data-field="%s"[^>]*>([^<]*)<' % field, row).group(1)  # noqa: E731
    cli = next(l for l in once.splitlines() if "shop.orders find" in l and "$in" in l).split()
    # COUNT SHARE CLASS BCAST REACHED SHARDS P50 P99 ERR ...
    assert cli[0] == "4", cli
    assert cell("shards") == "2.2 / 3" and cli[5] == "2.2/3", (cell("shards"), cli)
    for field, column in (("p50", 6), ("p99", 7)):
        assert _number(cell(field)) == _number(cli[column]), (field, cell(field), cli[column], shape["latency"])
