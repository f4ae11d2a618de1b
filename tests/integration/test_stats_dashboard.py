"""The dashboard page in headless Chromium: it loads /stats by itself, renders the top shapes with
their class, fan-out and latency and the per-shard load; a screenshot is kept as a test artifact."""
from __future__ import annotations

import html
import json
import re
import time

import pymongo
import pytest

from harness import REPO_ROOT
from stats_helpers import (CUSTOMERS, ROUTING_FILE, SECRET_ORDER_ID, SHAPE_BY_CUSTOMER, SHAPE_BY_ORDER_ID, SHAPE_BY_STATUS,
                           chromium_binary, dump_dom, get_stats, http_request, run_profile, screenshot, seed_orders,
                           seeded_client_for_the_page)
from stats_helpers import SEED_RULE

pytestmark = pytest.mark.needs_proxy

ARTIFACT = REPO_ROOT / "build" / "test-artifacts" / "dashboard.png"


@pytest.fixture
def loaded_proxy(ferretdb, proxy):
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with seeded_client_for_the_page(p) as client:
        run_profile(client)
    return p


def rows(dom: str, cls: str) -> list[dict]:
    """Attributes of every <tr class="cls" ...> in the rendered DOM."""
    out = []
    for m in re.finditer(r'<tr class="%s"([^>]*)>(.*?)</tr>' % cls, dom, re.S):
        attrs = {k: html.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', m.group(1))}
        cells = {k: html.unescape(v) for k, v in re.findall(r'data-field="(\w+)"[^>]*>([^<]*)<', m.group(2))}
        attrs["cells"] = cells
        attrs["text"] = html.unescape(re.sub(r"<[^>]+>", " ", m.group(2)))
        out.append(attrs)
    return out


def test_dashboard_renders_live_numbers(loaded_proxy):
    page = http_request(loaded_proxy.admin_url, path="/")
    assert page[0] == 200 and page[1]["content-type"].startswith("text/html")
    assert not re.search(rb'(src|href)="(https?:)?//', page[2]), "the page must not load external assets"

    stats = get_stats(loaded_proxy.admin_url)
    dom = dump_dom(loaded_proxy.admin_url + "/")
    assert 'data-loaded="true"' in dom, dom[-3000:]

    shapes = rows(dom, "shape")
    assert shapes, dom[-3000:]
    top = shapes[0]
    assert top["data-count"] == "62" and top["data-class"] == "single" and top["data-ns"] == "shop.orders"
    assert SHAPE_BY_CUSTOMER in top["text"]
    assert top["cells"]["count"] == "62" and top["cells"]["broadcast"] == "0.0%"
    assert top["cells"]["shards"] == "1.0 / 1"
    by_order = next(r for r in shapes if SHAPE_BY_ORDER_ID in r["text"])
    assert by_order["data-count"] == "21" and by_order["data-class"] == "broadcast"
    assert by_order["cells"]["shards"] == "6.0 / 6" and by_order["cells"]["broadcast"] == "100.0%"
    assert re.fullmatch(r"[\d.]+ (ns|µs|ms|s)", by_order["cells"]["p50"]), by_order["cells"]

    # Per-shard load equals /stats, for every shard of the routing table.
    shard_rows = {r["data-shard"]: int(r["data-ops"]) for r in rows(dom, "shard")}
    assert shard_rows == {s["name"]: s["ops"] for s in stats["shards"]}
    assert shard_rows["shardA"] == 38 + 11

    total = re.search(r'id="total-ops">([\d,]+)<', dom).group(1)
    assert int(total.replace(",", "")) >= 100
    assert re.search(r'data-class="broadcast" data-count="38"', dom)

    screenshot(loaded_proxy.admin_url + "/", ARTIFACT)
    assert ARTIFACT.stat().st_size > 10_000


def test_dashboard_asks_for_token(ferretdb, proxy, workdir):
    token_file = workdir / "token"
    token_file.write_text("dash-token")
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), "--admin-token-file", str(token_file), admin=True)
    dom = dump_dom(p.admin_url + "/")
    assert "token required" in dom
    dom = dump_dom(p.admin_url + "/#token=dash-token")
    assert 'data-loaded="true"' in dom


# ---------------------------------------------------------------- the page answers "why" (issue 18)

WHY_ARTIFACT = REPO_ROOT / "build" / "test-artifacts" / "dashboard-why.png"


def wait_for_history(admin_url: str, timeout: float = 20.0) -> dict:
    """The server samples every 5 s: wait until its intervals hold every operation /stats counted."""
    deadline = time.time() + timeout
    while True:
        hist = json.loads(http_request(admin_url, path="/history")[2])
        total = sum(n for s in hist["samples"] for n in s["shards"])
        if total and total == sum(s["ops"] for s in get_stats(admin_url)["shards"]):
            return hist
        assert time.time() < deadline, hist
        time.sleep(0.5)


@pytest.fixture
def why_proxy(ferretdb, proxy):
    if chromium_binary() is None:
        pytest.fail("chromium not installed (Debian package chromium)")
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), "--rewrite-rule", SEED_RULE,
              admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)  # the inserts teach the rewrite orderId -> customerId
        run_profile(client)
        for _ in range(40):  # one busy customer: its chunk's shard (shardA) takes far more than the others
            list(client.shop.orders.find({"customerId": CUSTOMERS[0]}).sort("orderDate", -1))
    wait_for_history(p.admin_url)
    return p


def test_dashboard_answers_why(why_proxy):
    url = why_proxy.admin_url
    stats = get_stats(url)
    dom = dump_dom(url + "/")
    assert 'data-loaded="true"' in dom, dom[-3000:]

    # Why each shape is routed the way it is: the reason /stats gives, on the page.
    shapes = rows(dom, "shape")
    for r in shapes:
        expected = next(s["reason"] for s in stats["shapes"] if s["id"] == r["data-shape-id"])
        assert r["cells"]["reason"] == html.unescape(expected) and expected, r
    by_status = next(r for r in shapes if SHAPE_BY_STATUS in r["text"])
    assert by_status["data-class"] == "broadcast" and "shard key" in by_status["cells"]["reason"], by_status

    # The rewrite: the order-id lookups were broadcast as written and ran single-shard.
    by_order = next(r for r in shapes if SHAPE_BY_ORDER_ID in r["text"])
    assert (by_order["data-rewrite-before"], by_order["data-rewrite-after"]) == ("broadcast", "single"), by_order
    assert float(by_order["data-rescued"]) >= 0.9, by_order
    assert "rewritten: broadcast \u2192 single" in by_order["text"]

    # A time axis: points from the server's history, ops/s per class and per shard.
    assert int(re.search(r'id="chart-class"[^>]*data-points="(\d+)"', dom).group(1)) >= 1
    assert re.search(r'<span data-series="single" data-last-rate="[\d.]+"', dom)
    assert re.search(r'id="chart-shard"[^>]*data-points="\d+"', dom) and 'data-series="shardA"' in dom

    # Hot shard: shardA took 1.5x more than the least busy shard (seed 002's threshold).
    card = dict(re.findall(r'([\w-]+)="([^"]*)"', re.search(r'<div [^>]*id="hot-card"[^>]*>', dom).group(0)))
    assert card.get("data-hot") == "shardA" and float(card["data-ratio"]) > 1.5, card
    shard_a = re.search(r'<tr class="shard" data-shard="shardA"[^>]*>(.*?)</tr>', dom, re.S).group(1)
    assert 'data-hot="true"' in shard_a and dom.count('data-hot="true"') == 1

    # The current shard key and the evaluation's recommendation with its defence.
    key_row = re.search(r'<tr class="key" data-ns="shop.orders">(.*?)</tr>', dom, re.S).group(1)
    assert "customerId" in key_row and "orderDate" in key_row
    verdict = json.loads(http_request(url, path="/evaluate")[2])
    ns_verdict = next(n["verdict"] for n in verdict["namespaces"] if n["ns"] == "shop.orders")
    recommended = html.unescape(re.search(r'data-field="recommended">([^<]*)<', key_row).group(1))
    assert recommended == (json.dumps(ns_verdict["key"], separators=(",", ":")) if ns_verdict["key"] else "none yet")
    shown = html.unescape(re.search(r'data-field="defence"[^>]*>([^<]*)<', key_row).group(1)).rstrip(" \u2026")
    assert len(shown) > 20 and shown in ns_verdict["text"], (shown, ns_verdict["text"])

    # Chunks per shard per namespace, as sh.status() counts them (the routing file: two per shard).
    chunk_rows = {r["data-shard"]: int(r["data-chunks"]) for r in rows(dom, "chunkshard")}
    assert chunk_rows == {s: 2 for s in ("shardA", "shardB", "shardC", "shardD", "shardE", "shardF")}
    assert len(rows(dom, "range")) == 12 and "C0800" in dom  # bounds are configuration, shown
    # Traffic per chunk range (getShardDistribution's question): the busy customer's chunk, on shardA, leads.
    ranges = [r for r in rows(dom, "range") if "data-reads" in r]
    busiest = max(ranges, key=lambda r: int(r["data-reads"]))
    assert busiest["data-shard"] == "shardA" and int(busiest["data-reads"]) > 0, busiest

    # No field values of client data on the page.
    for value in [SECRET_ORDER_ID, *CUSTOMERS, "O00003"]:
        assert value not in dom, value

    screenshot(url + "/", WHY_ARTIFACT, size="1500,2300")
    assert WHY_ARTIFACT.stat().st_size > 10_000


def test_hot_shard_is_judged_among_chunk_owners(ferretdb, proxy, workdir):
    """A shard that owns no chunks (new, draining, a primary only) takes no shard-key traffic by design:
    it must not make a balanced cluster look hot (max/min would be infinite)."""
    routing = json.loads(ROUTING_FILE.read_text())
    routing["shards"].append("shardG")
    routing_file = workdir / "seven_shards.json"
    routing_file.write_text(json.dumps(routing))
    p = proxy(ferretdb.uri, "--routing", str(routing_file), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        run_profile(client)  # one customer per chunk-owning shard: balanced
    wait_for_history(p.admin_url)
    dom = dump_dom(p.admin_url + "/")
    assert 'data-shard="shardG"' in dom  # listed with its load ...
    card = dict(re.findall(r'([\w-]+)="([^"]*)"', re.search(r'<div [^>]*id="hot-card"[^>]*>', dom).group(0)))
    assert "data-hot" not in card and float(card["data-ratio"]) < 1.5, card  # ... but not a reason for a hot flag
