"""The dashboard page in headless Chromium: it loads /stats by itself, renders the top shapes with
their class, fan-out and latency and the per-shard load; a screenshot is kept as a test artifact."""
from __future__ import annotations

import html
import re

import pymongo
import pytest

from harness import REPO_ROOT
from stats_helpers import (ROUTING_FILE, SHAPE_BY_CUSTOMER, SHAPE_BY_ORDER_ID, chromium_binary, dump_dom,
                           get_stats, http_request, run_profile, screenshot, seed_orders)

pytestmark = pytest.mark.needs_proxy

ARTIFACT = REPO_ROOT / "build" / "test-artifacts" / "dashboard.png"


@pytest.fixture
def loaded_proxy(ferretdb, proxy):
    if chromium_binary() is None:
        pytest.fail("chromium not installed (Debian package chromium)")
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        assert http_request(p.admin_url, "POST", "/stats/reset")[0] == 200
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
