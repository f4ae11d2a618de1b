"""Per-shard statistics keyed by shard name across a reload, live counts of upserts the current key
cannot target, and config sections validated at load (issue 15 items 6-7, issue 16 item 3)."""
from __future__ import annotations

import datetime
import json
import signal
import subprocess
import urllib.error
import urllib.request

import pymongo

from stats_helpers import ROUTING_FILE, wait_for


def get_json(p, path):
    with urllib.request.urlopen(p.admin_url + path, timeout=10) as r:
        return json.load(r)


def metrics(p) -> str:
    with urllib.request.urlopen(p.admin_url + "/metrics", timeout=10) as r:
        return r.read().decode()


def routing(shards, chunks):
    """shop.orders sharded on {customerId: 1}; chunks as (min, max, shard), None for Min/MaxKey."""
    bound = lambda v, k: {"customerId": {k: 1} if v is None else v}  # noqa: E731
    return {"shards": shards, "collections": [{
        "ns": "shop.orders", "key": {"customerId": 1}, "unique": False, "defaultCollation": None,
        "chunks": [{"min": bound(lo, "$minKey"), "max": bound(hi, "$maxKey"), "shard": s} for lo, hi, s in chunks]}]}


def shard_ops(p) -> dict[str, int]:
    return {s["name"]: s["ops"] for s in get_json(p, "/stats")["shards"]}


def test_reload_keeps_each_shards_counts_under_its_name(ferretdb, proxy, workdir):
    before = workdir / "before.json"
    after = workdir / "after.json"
    before.write_text(json.dumps(routing(["shardA", "shardB", "shardC"],
                                         [(None, "C1000", "shardA"), ("C1000", "C2000", "shardB"), ("C2000", None, "shardC")])))
    # shardB removed and the others reordered: position 0 is now shardC.
    after.write_text(json.dumps(routing(["shardC", "shardA"], [(None, "C1000", "shardA"), ("C1000", None, "shardC")])))
    config = workdir / "shardscope.yaml"
    config.write_text(f"routing:\n  file: {before}\n")
    p = proxy(ferretdb.uri, "--config", str(config), admin=True)
    with pymongo.MongoClient(p.uri, maxPoolSize=1) as client:
        orders = client.shop.orders
        for _ in range(3):
            orders.find_one({"customerId": "C1500"})  # shardB
        for _ in range(2):
            orders.find_one({"customerId": "C2500"})  # shardC
        config.write_text(f"routing:\n  file: {after}\n")
        p.process.send_signal(signal.SIGHUP)
        assert wait_for(lambda: get_json(p, "/config")["effective"]["routing"]["file"] == str(after))
        for _ in range(4):
            orders.find_one({"customerId": "C2500"})  # shardC, now at position 0
        orders.find_one({"customerId": "C0500"})  # shardA, now at position 1
    assert shard_ops(p) == {"shardA": 1, "shardB": 3, "shardC": 6}
    text = metrics(p)
    for name, n in (("shardA", 1), ("shardB", 3), ("shardC", 6)):
        assert f'shardscope_shard_ops_total{{shard="{name}"}} {n}\n' in text, text


def test_untargetable_upserts_counted_per_shape_in_stats_and_metrics(ferretdb, proxy):
    # shop.orders is sharded on {customerId: 1, orderDate: 1}.
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    day = datetime.datetime(2024, 3, 1)
    with pymongo.MongoClient(p.uri) as client:
        orders = client.shop.orders
        for i in range(3):
            orders.update_one({"status": "s%d" % i}, {"$set": {"n": i}}, upsert=True)  # no key: counted
        for i in range(2):  # the full key: targetable
            orders.update_one({"customerId": "C%d" % i, "orderDate": day}, {"$set": {"n": i}}, upsert=True)
        orders.update_one({"status": "x"}, {"$set": {"n": 1}})  # not an upsert
        orders.find_one_and_update({"customerId": "C7"}, {"$set": {"n": 1}}, upsert=True)  # prefix only: counted
    shapes = get_json(p, "/stats")["shapes"]
    counted = {(s["command"], s["shape"]): s["untargetableUpserts"] for s in shapes if s["ns"] == "shop.orders"}
    by_command = {}
    for (command, _), n in counted.items():
        by_command[command] = by_command.get(command, 0) + n
    assert by_command == {"update": 3, "findAndModify": 1}, counted
    assert sorted(n for (c, _), n in counted.items() if c == "update") == [0, 0, 3], counted
    text = metrics(p)
    series = [line for line in text.splitlines() if line.startswith("shardscope_untargetable_upserts_total{")]
    assert len(series) == 2, series
    assert any('command="update"' in s and s.endswith(" 3") for s in series), series
    assert any('command="findAndModify"' in s and s.endswith(" 1") for s in series), series


def test_invalid_evaluation_candidate_is_refused_at_start_and_on_reload(ferretdb, proxy, shardscope_binary, workdir):
    bad = 'shop.orders: {"customerId": 2}'  # not 1 or "hashed"
    run = subprocess.run([str(shardscope_binary), "proxy", "--upstream", ferretdb.uri, "--evaluation.candidates", bad],
                         capture_output=True, text=True, timeout=20)
    assert run.returncode == 2, run.stderr
    assert "evaluation.candidates" in run.stderr and "shop.orders" in run.stderr

    config = workdir / "shardscope.yaml"
    config.write_text("evaluation:\n  candidates:\n    - 'shop.orders: {\"customerId\": 1}'\n")
    p = proxy(ferretdb.uri, "--config", str(config), admin=True)
    config.write_text(f"evaluation:\n  candidates:\n    - '{bad}'\n")
    req = urllib.request.Request(p.admin_url + "/config/reload", method="POST", data=b"")
    try:
        urllib.request.urlopen(req, timeout=10)
        raise AssertionError("reload accepted an invalid candidate")
    except urllib.error.HTTPError as e:
        assert e.code == 400
        body = json.load(e)
    assert body["reloaded"] is False and "evaluation.candidates" in body["error"], body
    cfg = get_json(p, "/config")
    assert "evaluation.candidates" in cfg["reload"]["lastError"]
    assert cfg["reload"]["restartRequired"] == []  # nothing of the refused config was taken
