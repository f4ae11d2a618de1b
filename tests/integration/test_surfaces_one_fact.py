"""One set of facts, computed once, behind every surface: the same traffic (pymongo through the real
proxy, FerretDB upstream, the six-shard routing file) read back from /stats, /metrics, /evaluate (JSON
and text), /chunks, the dashboard, `shardscope stats`, `shardscope evaluate --from` and
`shardscope explain`.

- A shape has one id and one count wherever it is shown; a namespace one name.
- A figure with one name has one value on every surface. /evaluate's candidates once carried a
  `targetedShare` (analyzeShardKey's single- plus multi-shard share of sampled reads and writes)
  beside /stats' `targetedShare` (oneShard of every operation on a sharded collection): the same
  name for two figures that differ on the same traffic.
- The verdict the CLI prints is the engine's.
- Every surface says which load of the routing table it read (routing.generation): after a reload
  /stats, /chunks, /evaluate, /metrics and the page state the same generation and time.
"""
from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import time
import urllib.request

import pymongo
import pytest

from stats_helpers import (CUSTOMERS, ROUTING_FILE, chromium_binary, dump_dom, get_stats, http_request, run_profile,
                           seed_orders, wait_for)

pytestmark = pytest.mark.needs_proxy

RULE = "shop.orders: orderId -> customerId"


def _get_json(url: str, path: str):
    status, _, body = http_request(url, path=path)
    assert status == 200, (path, status, body[:300])
    return json.loads(body)


def _metric_samples(url: str) -> list[tuple[str, dict[str, str], float]]:
    status, _, body = http_request(url, path="/metrics")
    assert status == 200
    out = []
    for line in body.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        series, value = line.rsplit(" ", 1)
        name, _, labels = series.partition("{")
        out.append((name, dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels)), float(value)))
    return out


def _cli(binary, *args: str) -> str:
    r = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def _keys_anywhere(doc, found: dict[str, list]) -> dict[str, list]:
    """Every key of a JSON document, with every value it has anywhere in it."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            found.setdefault(k, []).append(v)
            _keys_anywhere(v, found)
    elif isinstance(doc, list):
        for v in doc:
            _keys_anywhere(v, found)
    return found


@pytest.fixture
def busy(ferretdb, proxy):
    """The order profile with the lookup rewrite on, some targeted updates and an unsharded namespace;
    every client closed before the surfaces are read."""
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), "--rewrite-rule", RULE, admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client, 120)
        run_profile(client, 2)
        for i in range(20):
            client.shop.orders.update_one({"orderId": f"O{i:05d}"}, {"$set": {"status": "paid"}})
        for i in range(5):  # a batch's later statements: shapes of /evaluate's alone (docs/stats-schema.md)
            client.shop.orders.bulk_write([pymongo.UpdateOne({"orderId": f"O{i:05d}"}, {"$set": {"status": "x"}}),
                                           pymongo.UpdateOne({"status": "y"}, {"$inc": {"n": 1}})])
        client.shop.other.insert_one({"x": 1})
        client.shop.other.find_one({"x": 1})
    assert wait_for(lambda: get_stats(p.admin_url)["process"]["connectionsActive"] == 0)
    return p


def test_a_shape_has_one_id_and_one_count_on_every_surface(busy):
    url = busy.admin_url
    stats = get_stats(url)
    samples = _metric_samples(url)
    evaluate = _get_json(url, "/evaluate")
    assert get_stats(url)["totals"]["ops"] == stats["totals"]["ops"], "traffic changed under the comparison"

    by_id = {s["id"]: s for s in stats["shapes"]}
    assert len(by_id) == len(stats["shapes"]), "two /stats rows with one id"
    # /metrics: each exported shape's text and count under the same id, namespace and command.
    info = {lab["shape_id"]: lab for name, lab, _ in samples if name == "shardscope_shape_info"}
    counted: dict[str, float] = {}
    for name, lab, v in samples:
        if name == "shardscope_shape_ops_total" and lab["shape_id"] != "rest":
            counted[lab["shape_id"]] = counted.get(lab["shape_id"], 0) + v
    assert info and counted
    for sid, lab in info.items():
        s = by_id[sid]
        assert (lab["ns"], lab["command"]) == (s["ns"], s["command"]), (lab, s)
        assert counted[sid] == s["count"], (sid, counted[sid], s["count"])
    # Per namespace: /stats' operations = the metric's, by the same name.
    for ns in stats["namespaces"]:
        ops = sum(v for name, lab, v in samples if name == "shardscope_ops_total" and lab["ns"] == ns["ns"])
        assert ops == ns["ops"], (ns["ns"], ops, ns["ops"])
    # /evaluate: every shape a command was counted under is a /stats shape, same id, namespace,
    # command, text and number of commands (the evaluation sees every read and write /stats counts);
    # a batch's later statements are shapes of their own there, with no command of their own.
    seen = later = 0
    for n in evaluate["namespaces"]:
        assert n["ns"] in {x["ns"] for x in stats["namespaces"]}, n["ns"]
        for c in n["candidates"]:
            for b in c.get("byShape", []):
                if b["commands"] == 0:
                    assert b["id"] not in by_id and b["statements"] > 0, b
                    later += 1
                    continue
                s = by_id[b["id"]]
                assert (s["ns"], s["command"], s["shape"]) == (n["ns"], b["command"], b["shape"]), (s, b)
                assert b["commands"] == s["count"], (b, s["count"])
                seen += 1
    assert seen > 0 and later > 0


def test_a_name_means_one_figure_on_every_surface(busy, shardscope_binary):
    """A share named alike in /stats and /evaluate is one figure with one value. On main /evaluate's
    candidates had `targetedShare` 0.51 beside /stats' `targetedShare` 0.62 for the same traffic."""
    url = busy.admin_url
    stats = get_stats(url)
    evaluate = _get_json(url, "/evaluate")
    t = stats["totals"]
    stat_shares = {k: v for k, v in t.items() if k.endswith("Share") and not isinstance(v, dict)}
    assert {"targetedShare", "allShardsShare"} <= stat_shares.keys()
    # A candidate keeps its figure's earlier name, `targetedShare`, for readers of earlier releases
    # (docs/evaluation.md): the same value as `singleOrMultiShardShare`, set apart from this check.
    aliases = 0
    for n in evaluate["namespaces"]:
        for c in n.get("candidates", []):
            if "singleOrMultiShardShare" in c:
                assert c.pop("targetedShare") == c["singleOrMultiShardShare"], c["key"]
                aliases += 1
    assert aliases > 0
    for key, values in _keys_anywhere(evaluate, {}).items():
        if key in stat_shares:
            for v in values:
                assert v == stat_shares[key], f"/evaluate {key} = {v}, /stats totals.{key} = {stat_shares[key]}"
    # The metric and the CLI show /stats' figure under its name.
    m = {name: v for name, lab, v in _metric_samples(url) if not lab}
    assert m["shardscope_targeted_share"] == t["targetedShare"]
    once = _cli(shardscope_binary, "stats", "--admin", url, "--once")
    assert f"targeted {100 * t['targetedShare']:.1f}% (oneShard)" in once, once
    # The candidate's own figure, under its own name, as the text names it.
    orders = next(n for n in evaluate["namespaces"] if n["ns"] == "shop.orders")
    current = next(c for c in orders["candidates"] if "current" in c["sources"])
    share = current["singleOrMultiShardShare"]
    text = _cli(shardscope_binary, "evaluate", "--from", url)
    assert f"{100 * share:.1f}% of reads and writes targeted" in text, text


def test_the_cli_verdict_is_the_engines(busy, shardscope_binary):
    url = busy.admin_url
    engine = _get_json(url, "/evaluate")
    cli = json.loads(_cli(shardscope_binary, "evaluate", "--from", url, "--json"))
    assert [n["ns"] for n in cli["namespaces"]] == [n["ns"] for n in engine["namespaces"]]
    for e, c in zip(engine["namespaces"], cli["namespaces"]):
        assert e["verdict"] == c["verdict"], e["ns"]
        assert [x["key"] for x in e["candidates"]] == [x["key"] for x in c["candidates"]], e["ns"]
        for x, y in zip(e["candidates"], c["candidates"]):
            assert x.get("singleOrMultiShardShare") == y.get("singleOrMultiShardShare"), x["key"]
    status, _, text = http_request(url, path="/evaluate?format=text")
    assert status == 200
    assert _cli(shardscope_binary, "evaluate", "--from", url) == text.decode()


def test_explain_and_stats_name_the_same_shards(ferretdb, proxy, shardscope_binary):
    """Each customer's finds reach the shard `explain` names, and only that one (per namespace, /stats)."""
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        assert http_request(p.admin_url, "POST", "/stats/reset")[0] == 200
        for i, customer in enumerate(CUSTOMERS[:3]):
            for _ in range(i + 1):
                client.shop.orders.find_one({"customerId": customer})
    expected: dict[str, int] = {}
    for i, customer in enumerate(CUSTOMERS[:3]):
        command = json.dumps({"find": "orders", "filter": {"customerId": customer}, "$db": "shop"})
        out = json.loads(_cli(shardscope_binary, "explain", "--routing", str(ROUTING_FILE), "--command", command))
        assert out["targeting"] == "single" and len(out["shards"]) == 1, out
        expected[out["shards"][0]] = expected.get(out["shards"][0], 0) + i + 1
    ns = next(n for n in get_stats(p.admin_url)["namespaces"] if n["ns"] == "shop.orders")
    assert {s["name"]: s["targetedOps"] for s in ns["shards"] if s["targetedOps"]} == expected, ns


def _reload(url: str) -> None:
    req = urllib.request.Request(url + "/config/reload", method="POST", data=b"")
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200


def test_every_surface_names_the_routing_table_it_read(ferretdb, proxy, workdir, shardscope_binary):
    """After a reload that moves a customer's chunk, /stats, /chunks, /evaluate, /metrics, `stats` and
    the page say which load of the routing table they computed against: the same generation and time."""
    routing = json.loads(ROUTING_FILE.read_text())
    config = workdir / "shardscope.yaml"
    config.write_text(f"routing:\n  file: {ROUTING_FILE}\n")
    p = proxy(ferretdb.uri, "--config", str(config), admin=True)
    url = p.admin_url

    def loads() -> dict[str, dict]:
        m = {name: v for name, lab, v in _metric_samples(url) if not lab}
        return {"stats": get_stats(url)["routing"], "chunks": _get_json(url, "/chunks")["routing"],
                "evaluate": _get_json(url, "/evaluate")["routing"],
                "metrics": {"generation": int(m["shardscope_routing_generation"]),
                            "loadedAtMs": round(1000 * m["shardscope_routing_loaded_timestamp_seconds"])}}

    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
    first = loads()
    assert first["stats"]["generation"] == 1 and first["stats"]["source"] == "file", first
    for what in ("chunks", "evaluate"):
        assert first[what] == first["stats"], (what, first)
    assert first["metrics"]["generation"] == 1

    # The first chunk (CUSTOMERS[0]'s) moves from shardA to shardB.
    moved = json.loads(json.dumps(routing))
    moved["collections"][0]["chunks"][0]["shard"] = "shardB"
    changed = workdir / "moved.json"
    changed.write_text(json.dumps(moved))
    config.write_text(f"routing:\n  file: {changed}\n")
    time.sleep(0.01)
    _reload(url)
    after = loads()
    assert after["stats"]["generation"] == 2 and after["stats"]["loadedAt"] > first["stats"]["loadedAt"], after
    for what in ("chunks", "evaluate"):
        assert after[what] == after["stats"], (what, after)
    assert after["metrics"]["generation"] == 2
    stats_ms = round(1000 * dt.datetime.fromisoformat(after["stats"]["loadedAt"].replace("Z", "+00:00")).timestamp())
    assert after["metrics"]["loadedAtMs"] == stats_ms, after
    assert _get_json(url, "/chunks")["namespaces"][0]["ranges"][0]["shard"] == "shardB"
    assert p.stderr_has("routing table load 2 in force (from file)"), p.stderr_text()[-2000:]
    once = _cli(shardscope_binary, "stats", "--admin", url, "--once")
    assert f"routing table: load 2 (file), published {after['stats']['loadedAt']}" in once, once

    if chromium_binary() is None:
        pytest.fail("chromium not installed (Debian package chromium)")
    dom = dump_dom(url + "/")
    tag = re.search(r'<div [^>]*id="routing-load"[^>]*>([^<]*)<', dom)
    assert tag, dom[-3000:]
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', tag.group(0)))
    assert attrs["data-generation"] == attrs["data-chunks-generation"] == attrs["data-evaluate-generation"] == "2", attrs
    assert "load 2 (file)" in tag.group(1) and after["stats"]["loadedAt"] in tag.group(1), tag.group(1)


def test_a_discovery_refresh_is_one_new_load_on_every_surface(proxy):
    """With routing discovery from the scripted mongos stand-in (tests/support/mongos_standin.py): a
    chunk migration is one new load, stated alike by /stats, /chunks, /evaluate and /metrics; the
    refreshes that find nothing new publish none."""
    from mongos_standin import MongosStandIn
    s = MongosStandIn(catalog="5.0").start()
    try:
        s.shard_collection("shop.orders", "k", [10, 20, 30], ["shardA", "shardB"])
        p = proxy(s.uri, "--routing.discovery", "true", "--routing.discovery_interval_s", "1", admin=True)
        url = p.admin_url

        def loads() -> list[dict]:
            m = {name: v for name, lab, v in _metric_samples(url) if not lab}
            return [get_stats(url)["routing"], _get_json(url, "/chunks")["routing"],
                    _get_json(url, "/evaluate")["routing"], {"generation": int(m["shardscope_routing_generation"])}]

        assert wait_for(lambda: get_stats(url)["routing"]["generation"] == 1)
        refreshes = get_stats(url)["discovery"]["refreshes"]
        assert wait_for(lambda: get_stats(url)["discovery"]["refreshes"] >= refreshes + 2)
        first = loads()
        assert first[0]["generation"] == 1 and first[0]["source"] == "discovery", first  # unchanged: no new load
        assert first[1] == first[2] == first[0] and first[3]["generation"] == 1, first

        s.migrate("shop.orders", 20, "shardC")
        assert wait_for(lambda: get_stats(url)["routing"]["generation"] == 2), get_stats(url)["routing"]
        after = loads()
        assert after[1] == after[2] == after[0] and after[3]["generation"] == 2, after
        assert after[0]["source"] == "discovery" and after[0]["loadedAt"] > first[0]["loadedAt"], after
        assert "shardC" in _get_json(url, "/chunks")["shards"]
    finally:
        s.stop()


def test_per_shard_rates_keep_their_shard_after_a_reload_reorders_the_list(ferretdb, proxy, workdir):
    """The same routing with its shard list in another order: /stats, /metrics and /history must
    name the shard that took the operations alike. On main /history named shardA's 50 finds
    "shardF" (it labelled the counts, kept by name, with the reloaded table's list by position)."""
    routing = json.loads(ROUTING_FILE.read_text())
    routing["shards"] = list(reversed(routing["shards"]))
    reordered = workdir / "reordered.json"
    reordered.write_text(json.dumps(routing))
    config = workdir / "shardscope.yaml"
    config.write_text(f"routing:\n  file: {ROUTING_FILE}\n")
    p = proxy(ferretdb.uri, "--config", str(config), admin=True)
    config.write_text(f"routing:\n  file: {reordered}\n")
    _reload(p.admin_url)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        for _ in range(50):
            client.shop.orders.find_one({"customerId": CUSTOMERS[0]})  # shardA's chunk
    url = p.admin_url
    stats = {s["name"]: s["ops"] for s in get_stats(url)["shards"]}
    assert stats["shardA"] == 50 and sum(stats.values()) == 50, stats
    metric = {lab["shard"]: v for name, lab, v in _metric_samples(url) if name == "shardscope_shard_ops_total"}
    assert metric == stats

    def window():
        h = _get_json(url, "/history")
        return h if sum(h["rates"]["window"]["shards"].values()) > 0 else None
    assert wait_for(window, timeout=30)
    h = window()
    per_shard = {name: sum(s["shards"][i] for s in h["samples"]) for i, name in enumerate(h["shards"])}
    assert per_shard.get("shardA") == 50 and sum(per_shard.values()) == 50, (h["shards"], per_shard)
    rates = h["rates"]["window"]["shards"]
    assert rates["shardA"] > 0 and all(v == 0 for k, v in rates.items() if k != "shardA"), rates


def test_a_down_mongos_shows_beside_the_cli_verdict_too(ferretdb, proxy, shardscope_binary):
    """`stats`, the page and /metrics say the mongos is down (test_surfaces_agree.py); `evaluate --from`
    printed its verdict as if nothing were wrong. It now warns on stderr, from the same /stats health,
    and its report stays the sidecar's /evaluate?format=text."""
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        run_profile(client)
    ferretdb.kill()
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=2000, connectTimeoutMS=2000) as client:
        with pytest.raises(pymongo.errors.PyMongoError):
            client.shop.orders.find_one({"customerId": CUSTOMERS[0]})
    assert wait_for(lambda: get_stats(p.admin_url)["health"]["state"] == "down", timeout=60)
    detail = get_stats(p.admin_url)["health"]["components"][0]["detail"]
    r = subprocess.run([str(shardscope_binary), "evaluate", "--from", p.admin_url], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"warning: {p.admin_url} health DOWN (upstream down: {detail})" in r.stderr, r.stderr
    status, _, text = http_request(p.admin_url, path="/evaluate?format=text")
    assert status == 200 and r.stdout == text.decode()
