"""MongoDB's count-based classes (serverStatus().shardingStatistics.numHostsTargeted: oneShard /
manyShards / allShards / unsharded) next to the reason-based ones, end to end: pymongo through
build/shardscope to FerretDB with the six-shard routing file. /stats, /metrics and
`shardscope stats` (JSON and table) show the same counts and the same targeted share, /metrics is
promtool-clean and carries the process_* metrics and build info."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time

import pymongo
import pytest

from stats_helpers import (ROUTING_FILE, canned_stats, chromium_binary, dump_dom, find_shape, get_stats,  # noqa: F401
                           http_request, run_profile, seed_orders)

pytestmark = pytest.mark.needs_proxy

RANGE_SHAPE = '{"customerId":{"$gte":"<string>"}}'
CLASSES = ("oneShard", "manyShards", "allShards", "unsharded")


def metric(body: str, name: str) -> float:
    m = re.search(r"^" + re.escape(name) + r" (\S+)$", body, re.M)
    assert m, name
    return float(m.group(1))


def test_counts_and_targeted_share_agree_everywhere(ferretdb, proxy, shardscope_binary):
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        client.shop.carts.drop()
        client.shop.carts.insert_one({"_id": 1})
        assert http_request(p.admin_url, "POST", "/stats/reset")[0] == 200
        run_profile(client)
        # A range on the key prefix that reaches 6 of 6 shards, read in batches: the find and each
        # getMore are `multi` by reason and `allShards` by count.
        docs = list(client.shop.orders.find({"customerId": {"$gte": "A"}}).batch_size(10))
        assert len(docs) == 60
        for _ in range(3):
            client.shop.carts.find_one({"_id": 1})  # not in the routing file: unsharded

    stats = get_stats(p.admin_url)
    hosts = stats["totals"]["hostsTargeted"]
    assert hosts["oneShard"] == 62, hosts        # the customer equality
    assert hosts["manyShards"] == 0, hosts
    assert hosts["unsharded"] == 3, hosts
    getmores = hosts["allShards"] - 38 - 1       # 38 broadcasts of the profile, the range find
    assert getmores >= 5, hosts                  # 60 documents in batches of 10
    rng = find_shape(stats, "find", RANGE_SHAPE)
    assert rng and rng["class"] == "multi" and rng["countClass"] == "allShards", rng
    gm = [s for s in stats["shapes"] if s["command"] == "getMore"]
    assert gm and all(s["countClass"] == "allShards" and s["class"] == "multi" for s in gm), gm
    share = stats["totals"]["targetedShare"]
    assert share == pytest.approx(62 / (62 + hosts["allShards"]))

    status, _, body = http_request(p.admin_url, path="/metrics")
    assert status == 200
    text = body.decode()
    for c in CLASSES:
        assert metric(text, f'shardscope_hosts_targeted_total{{hosts="{c}"}}') == hosts[c], c
    assert metric(text, "shardscope_targeted_share") == pytest.approx(share)

    r = subprocess.run([str(shardscope_binary), "stats", "--admin", p.admin_url, "--json"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)["totals"]
    assert {c: cli["hostsTargeted"][c] for c in CLASSES} == {c: hosts[c] for c in CLASSES}
    assert cli["targetedShare"] == pytest.approx(share)

    r = subprocess.run([str(shardscope_binary), "stats", "--admin", p.admin_url, "--once", "--top", "20"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    line = next(l for l in r.stdout.splitlines() if l.startswith("shards reached"))
    assert f"oneShard 62 " in line and f"allShards {hosts['allShards']} " in line, line
    line = next(l for l in r.stdout.splitlines() if "ops on sharded collections" in l)
    assert f"targeted {100 * share:.1f}% (oneShard)" in line, line
    row = next(l for l in r.stdout.splitlines() if RANGE_SHAPE in l)
    assert row.split()[2] == "multi" and row.split()[4] == "allShards", row

    # The page shows the same share (read from /stats, not recomputed) and the count class per shape.
    if chromium_binary() is None:
        pytest.fail("chromium not installed (Debian package chromium)")
    dom = dump_dom(p.admin_url + "/")
    assert 'data-loaded="true"' in dom, dom[-3000:]
    card = re.search(r'id="targeted-share">([^<]*)<', dom).group(1)
    assert card == f"{100 * share:.1f}%", card
    for c in CLASSES:
        assert f'data-hosts="{c}" data-count="{hosts[c]}"' in dom, c
    assert '<td data-field="hosts">allShards</td>' in dom


def test_metrics_are_promtool_clean_with_process_metrics(ferretdb, proxy):
    test_started = time.time()
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        client.shop.orders.find_one({"customerId": "C0100"})
    status, _, body = http_request(p.admin_url, path="/metrics")
    assert status == 200
    text = body.decode()
    tool = shutil.which("promtool")
    if tool is None:
        pytest.fail("promtool not found (Debian package prometheus; scripts/setup.sh installs it)")
    lint = subprocess.run([tool, "check", "metrics"], input=body, capture_output=True, timeout=60)
    assert lint.returncode == 0, lint.stdout.decode() + lint.stderr.decode()

    with open(f"/proc/{p.process.pid}/status") as f:
        rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) * 1024
    reported = metric(text, "process_resident_memory_bytes")
    assert 0.5 * rss < reported < 2 * rss, (reported, rss)
    assert metric(text, "process_virtual_memory_bytes") >= reported
    fds = metric(text, "process_open_fds")
    assert 3 <= fds < metric(text, "process_max_fds")
    # The process started during this test, and cannot have used more CPU than its cores had since.
    start = metric(text, "process_start_time_seconds")
    assert test_started - 1 <= start <= time.time(), (test_started, start)  # stamped in whole seconds
    assert 0 <= metric(text, "process_cpu_seconds_total") <= (time.time() - start + 1) * os.cpu_count()
    assert re.search(r'^shardscope_build_info\{version="\d+\.\d+\.\d+"\} 1$', text, re.M), text[-500:]


def _canned(n_one: int, n_all: int, n_unsharded: int, uptime: float) -> dict:
    return {"resetAt": "2026-01-01T00:00:00Z", "uptimeSeconds": uptime, "windowSeconds": uptime,
            "totals": {"ops": n_one + n_all + n_unsharded, "errors": 0,
                       "targeting": {"single": n_one, "multi": 0, "broadcast": n_all},
                       "hostsTargeted": {"oneShard": n_one, "manyShards": 0, "allShards": n_all,
                                         "unsharded": n_unsharded, "none": 0}},
            "shards": [], "shapes": []}


def test_watch_prints_the_intervals_targeted_share_by_the_same_definition(shardscope_binary, canned_stats):
    docs, url = canned_stats
    docs += [_canned(80, 20, 10, 10), _canned(200, 100, 60, 12)]  # interval: +120 oneShard, +80 allShards, +50 unsharded
    r = subprocess.run([str(shardscope_binary), "stats", "--admin", url, "--watch", "0.1", "--count", "1"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "targeted 60.0%" in r.stdout.splitlines()[0], r.stdout  # 120 / (120 + 80): unsharded outside


def test_no_share_is_claimed_without_operations_on_sharded_collections(ferretdb, proxy, shardscope_binary):
    """Only an unsharded collection's traffic: every surface says the share is unknown (the page and
    the CLI "-", /stats null, /metrics no sample), none of them 0%."""
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        client.shop.carts.insert_one({"x": 1})
        client.shop.carts.find_one({"x": 1})
    totals = get_stats(p.admin_url)["totals"]
    assert totals["hostsTargeted"]["unsharded"] == 2 and totals["shardedOps"] == 0, totals
    assert totals["targetedShare"] is None and totals["allShardsShare"] is None, totals
    assert set(totals["hostsTargetedShare"].values()) == {None}, totals
    text = http_request(p.admin_url, path="/metrics")[2].decode()
    samples = [l for l in text.splitlines() if l.startswith(("shardscope_targeted_share", "shardscope_all_shards_share"))]
    assert samples == [], samples
    once = subprocess.run([str(shardscope_binary), "stats", "--admin", p.admin_url, "--once"], capture_output=True, text=True, check=True).stdout
    assert "of 0 ops on sharded collections: targeted - (oneShard)  broadcast - (allShards" in once, once
    dom = dump_dom(p.admin_url + "/")
    for element_id in ("targeted-share", "broadcast-share"):
        assert re.search(r'id="%s"[^>]*>-<' % element_id, dom), element_id
    assert 'data-hosts="oneShard" data-count="0">oneShard 0<' in dom
