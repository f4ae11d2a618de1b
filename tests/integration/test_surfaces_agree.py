"""Every surface tells the same truth and shows what is wrong (issue 26): the dashboard in a real
Chromium, `shardscope stats --once` / `--watch`, /stats and /metrics, against FerretDB.

- A killed upstream shows as a state on the page (red banner, red tile), in `stats`, and as gauges.
- Figures with the same name agree on every surface: each is computed once by the server.
- "broadcast" is MongoDB's (allShards): an insert batch reaching every shard is never "0% broadcast".
- Each panel states its interval; the chunk view marks estimates and counts writes per shard exactly.
- The hot-shard verdict is judged on targeted operations per namespace.
- The shape column is one line at 1400 px and expands on demand."""
from __future__ import annotations

import datetime as dt
import html
import json
import re
import subprocess

import pymongo
import pytest

from browser import Browser
from harness import REPO_ROOT
from stats_helpers import (BASE_DATE, CUSTOMERS, ROUTING_FILE, SHAPE_REVENUE, chromium_binary, dump_dom, get_stats,
                           http_request, run_profile, seed_orders, wait_for)
from stats_helpers import SEED_RULE

pytestmark = pytest.mark.needs_proxy

SCREENSHOT = REPO_ROOT / "build" / "test-artifacts" / "dashboard-surfaces.png"


@pytest.fixture(autouse=True)
def _chromium():
    if chromium_binary() is None:
        pytest.fail("chromium not installed (Debian package chromium)")


def cli(binary, *args: str) -> subprocess.CompletedProcess:
    r = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def metrics(admin_url: str) -> dict[str, float]:
    status, _, body = http_request(admin_url, path="/metrics")
    assert status == 200
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def metric_sum(m: dict[str, float], name: str, **labels: str) -> float:
    total = 0.0
    for key, v in m.items():
        if key.split("{")[0] != name:
            continue
        if all(f'{k}="{val}"' in key for k, val in labels.items()):
            total += v
    return total


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"  # null: no denominator, shown "-"


def attrs_of(dom: str, element_id: str) -> dict[str, str]:
    tag = re.search(r'<\w+ [^>]*id="%s"[^>]*>' % element_id, dom).group(0)
    return {k: html.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', tag)}


def text_of(dom: str, element_id: str) -> str:
    return html.unescape(re.search(r'id="%s"[^>]*>([^<]*)<' % element_id, dom).group(1))


def rows(dom: str, cls: str) -> list[dict]:
    out = []
    for m in re.finditer(r'<tr class="%s"([^>]*)>(.*?)</tr>' % cls, dom, re.S):
        attrs = {k: html.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', m.group(1))}
        attrs["cells"] = {k: html.unescape(v) for k, v in re.findall(r'data-field="([\w-]+)"[^>]*>([^<]*)<', m.group(2))}
        attrs["text"] = html.unescape(re.sub(r"<[^>]+>", " ", m.group(2)))
        out.append(attrs)
    return out


def page_dom(admin_url: str) -> str:
    dom = dump_dom(admin_url + "/")
    assert 'data-loaded="true"' in dom, dom[-3000:]
    return dom


# ---------------------------------------------------------------- 1. a down mongos is impossible to miss

def test_killed_upstream_shows_on_page_cli_and_metrics(ferretdb, proxy, shardscope_binary):
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
    healthy = get_stats(p.admin_url)["health"]
    up = healthy["components"][0]
    assert healthy["state"] == "ok" and (up["component"], up["state"], up["healthy"], up["down"]) == ("upstream", "up", True, 0), healthy
    dom = page_dom(p.admin_url)
    assert attrs_of(dom, "banner")["data-state"] == "ok" and "health-up" in attrs_of(dom, "health-card")["class"]
    assert cli(shardscope_binary, "stats", "--admin", p.admin_url, "--once").stdout.startswith("health: ok")

    ferretdb.kill()
    # A client operation makes the proxy try the upstream at once (the background probe would too).
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=2000, connectTimeoutMS=2000) as client:
        with pytest.raises(pymongo.errors.PyMongoError):
            client.shop.orders.find_one({"customerId": CUSTOMERS[0]})
    assert wait_for(lambda: get_stats(p.admin_url)["health"]["state"] == "down", timeout=60), get_stats(p.admin_url)["health"]
    health = get_stats(p.admin_url)["health"]
    upstream = health["components"][0]
    address = f"127.0.0.1:{ferretdb.port}"
    assert upstream["state"] == "down" and not upstream["healthy"] and upstream["up"] == 0, upstream
    assert address in upstream["detail"], upstream

    # The page: a red banner and a red tile, whatever else it shows (checked in the browser's layout).
    b = Browser()
    try:
        b.open(p.admin_url + "/")
        b.wait_for("document.body.getAttribute('data-loaded') === 'true'")
        banner = b.evaluate("""(() => { const e = document.getElementById('banner'); const s = getComputedStyle(e);
            return {state: e.dataset.state, display: s.display, bg: s.backgroundColor, text: e.textContent,
                    height: e.getBoundingClientRect().height}; })()""")
        card = b.evaluate("""(() => { const e = document.getElementById('health-card');
            return {cls: e.className, value: document.getElementById('health-value').textContent,
                    color: getComputedStyle(document.getElementById('health-value')).color}; })()""")
        normal = b.evaluate("getComputedStyle(document.getElementById('total-ops')).color")
    finally:
        b.close()
    assert banner["state"] == "down" and banner["display"] == "block" and banner["height"] > 0, banner
    r, g, _ = map(int, re.findall(r"\d+", banner["bg"])[:3])
    assert r > 2 * g, banner  # red
    assert "MONGOS DOWN" in banner["text"] and address in banner["text"], banner
    assert "health-down" in card["cls"] and card["value"] == "DOWN" and card["color"] != normal, card

    once = cli(shardscope_binary, "stats", "--admin", p.admin_url, "--once").stdout
    assert once.startswith("!! health: DOWN"), once
    assert f"upstream down: no mongos reachable" in once and address in once, once
    watch = cli(shardscope_binary, "stats", "--admin", p.admin_url, "--watch", "0.2", "--count", "1").stdout
    assert "!! health DOWN" in watch and address in watch, watch

    m = metrics(p.admin_url)
    assert m["shardscope_upstreams_up"] == 0
    assert m['shardscope_healthy{component="upstream"}'] == 0
    assert m[f'shardscope_upstream_up{{address="{address}"}}'] == 0


def test_page_shows_no_stale_health_when_the_sidecar_stops_answering(ferretdb, proxy):
    """The page shows health only as fresh as its last /stats: once the sidecar stops answering, the
    last "UP" must not stay on screen (the mongos may be down by now, and nothing would say so)."""
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
    b = Browser()
    state = """(() => { const e = document.getElementById('banner'); const s = getComputedStyle(e);
        return {banner: e.dataset.state, display: s.display, text: e.textContent, body: document.body.dataset.health,
                tile: document.getElementById('health-value').textContent, cls: document.getElementById('health-card').className,
                ops: document.getElementById('total-ops').textContent}; })()"""
    try:
        b.open(p.admin_url + "/")
        b.wait_for("document.body.getAttribute('data-loaded') === 'true'")
        before = b.evaluate(state)
        assert before["tile"] == "UP" and before["banner"] == "ok" and before["display"] == "none", before
        p.kill()
        b.wait_for("document.getElementById('banner').dataset.state !== 'ok'", timeout=30)
        after = b.evaluate(state)
    finally:
        b.close()
    assert after["banner"] == "stale" and after["display"] == "block" and after["body"] == "stale", after
    assert after["tile"] == "NO DATA" and "health-up" not in after["cls"], after
    assert "does not answer" in after["text"] and "upstream health unknown" in after["text"], after
    assert after["ops"] == before["ops"]  # the figures stay, said to be from the last answer
    assert "every figure below is from" in after["text"], after


def test_rescued_share_is_one_figure_with_unmapped_lookups_in_it(ferretdb, proxy):
    """'Rescued' on the page (per shape), in /stats (per shape and per rule) and on the demo's final
    screen is one figure: lookups the rewrite could not map (no mapping known) stay broadcast and
    stay in the denominator; the demo's screen no longer says 100% rescued when a third stayed.
    Commands that already name customerId are no lookups to rescue: they stay out of it (the demo's
    screen said '107 of the 366 orderId lookups rescued' when all 107 orderId lookups were)."""
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), "--rewrite-rule", SEED_RULE, admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        for i in range(40):  # mapped: learned from the seed's inserts
            client.shop.orders.find_one({"orderId": f"O{i:05d}"})
        for i in range(20):  # never seen: no mapping, sent as written (broadcast)
            client.shop.orders.find_one({"orderId": f"NEW{i:05d}"})
        for i in range(30):  # already name customerId: targeted without the rewrite, no lookup to rescue
            client.shop.orders.find_one({"customerId": CUSTOMERS[i % len(CUSTOMERS)]})
            client.shop.orders.find_one({"orderId": f"O{i:05d}", "customerId": CUSTOMERS[i % len(CUSTOMERS)]})
    stats = get_stats(p.admin_url)
    shape = next(s for s in stats["shapes"] if s["shape"] == '{"orderId":"<string>"}')
    assert (shape["count"], shape["rewrite"]["applied"], shape["rewrite"]["rescued"]) == (60, 40, 40), shape
    assert shape["rewrite"]["rescuedShare"] == pytest.approx(40 / 60, rel=1e-5)
    rule = stats["rewrite"][0]
    assert (rule["lookups"], rule["rescued"]) == (60, 40) and rule["rescuedShare"] == pytest.approx(40 / 60, rel=1e-5), rule
    dom = page_dom(p.admin_url)
    row = next(r for r in rows(dom, "shape") if r["data-shape-id"] == shape["id"])
    assert float(row["data-rescued"]) == pytest.approx(40 / 60, abs=1e-4) and "66.7% rescued" in row["text"], row
    summary = subprocess.run(["python3", str(REPO_ROOT / "workload" / "demo_summary.py")], input=json.dumps(stats),
                             capture_output=True, text=True, check=True).stdout
    assert "40 of the 60 orderId lookups rescued (66.7%" in summary, summary
    assert "'no mapping known for the lookup value': 20" in summary, summary
    assert "100.0%" not in summary, summary


def test_rescued_share_restarts_with_the_shapes_on_stats_reset(ferretdb, proxy):
    """POST /stats/reset zeroes the rule's figure with the shapes': the page's per-shape 'rescued' and
    the demo screen's per-rule one cover the same period (the rule kept counting before), and the
    mappings stay (the lookups after the reset are still rescued)."""
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), "--rewrite-rule", SEED_RULE, admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        for i in range(30):
            client.shop.orders.find_one({"orderId": f"O{i:05d}"})
        assert http_request(p.admin_url, "POST", "/stats/reset")[0] == 200
        for i in range(10):  # mapped before the reset: still rescued
            client.shop.orders.find_one({"orderId": f"O{i:05d}"})
        for i in range(5):  # never seen: no mapping
            client.shop.orders.find_one({"orderId": f"NEW{i:05d}"})
    stats = get_stats(p.admin_url)
    shape = next(s for s in stats["shapes"] if s["shape"] == '{"orderId":"<string>"}')
    assert (shape["count"], shape["rewrite"]["rescued"]) == (15, 10), shape
    rule = stats["rewrite"][0]
    assert (rule["lookups"], rule["rescued"]) == (15, 10), rule
    assert rule["rescuedShare"] == pytest.approx(shape["rewrite"]["rescuedShare"], rel=1e-9)


# ---------------------------------------------------------------- 2-5. the same figures on every surface

def busy_load(client: pymongo.MongoClient) -> None:
    """The order profile, a busy customer (shardA), inserts reaching every shard and targeted updates."""
    seed_orders(client)
    run_profile(client)
    coll = client.shop.orders
    for _ in range(40):
        list(coll.find({"customerId": CUSTOMERS[0]}).sort("orderDate", -1))
    coll.insert_many([{"orderId": f"N{i:05d}", "customerId": CUSTOMERS[i % len(CUSTOMERS)],
                       "orderDate": BASE_DATE + dt.timedelta(days=i), "status": "new", "total": i} for i in range(30)])
    for i in range(25):
        coll.update_one({"customerId": CUSTOMERS[0], "orderDate": BASE_DATE + dt.timedelta(days=6 * i)},
                        {"$set": {"status": "paid"}})
    list(coll.find({}, batch_size=5))  # getMores of a broadcast find


@pytest.fixture
def settled_proxy(ferretdb, proxy):
    """A proxy after busy_load with every client closed: no operation changes the figures any more."""
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        busy_load(client)
    before = get_stats(p.admin_url)["totals"]["ops"]
    assert wait_for(lambda: get_stats(p.admin_url)["process"]["connectionsActive"] == 0)
    assert get_stats(p.admin_url)["totals"]["ops"] >= before
    return p


def test_every_surface_shows_the_same_figures(settled_proxy, shardscope_binary):
    url = settled_proxy.admin_url
    stats = get_stats(url)
    dom = page_dom(url)
    once = cli(shardscope_binary, "stats", "--admin", url, "--once", "--top", "100").stdout
    m = metrics(url)
    assert get_stats(url)["totals"]["ops"] == stats["totals"]["ops"], "traffic changed under the comparison"
    t = stats["totals"]

    # Operations and errors.
    assert int(text_of(dom, "total-ops").replace(",", "")) == t["ops"]
    assert f" ops {t['ops']} " in once
    assert sum(v for k, v in m.items() if k.startswith("shardscope_targeting_ops_total{")) == t["ops"]
    assert int(text_of(dom, "total-errors").replace(",", "")) == t["errors"] == m["shardscope_reply_errors_total"]
    assert f"errors {t['errors']} " in once

    # The targeted and the broadcast share: one definition, one denominator (ops on sharded collections).
    sharded = t["hostsTargeted"]["oneShard"] + t["hostsTargeted"]["manyShards"] + t["hostsTargeted"]["allShards"]
    assert t["shardedOps"] == sharded
    assert t["targetedShare"] == pytest.approx(t["hostsTargeted"]["oneShard"] / sharded, rel=1e-5)
    assert t["allShardsShare"] == pytest.approx(t["hostsTargeted"]["allShards"] / sharded, rel=1e-5)
    assert text_of(dom, "targeted-share") == pct(t["targetedShare"]) == pct(m["shardscope_targeted_share"])
    assert text_of(dom, "broadcast-share") == pct(t["allShardsShare"]) == pct(m["shardscope_all_shards_share"])
    assert f"of {sharded} ops on sharded collections" in text_of(dom, "broadcast-sub")
    assert (f"of {sharded} ops on sharded collections: targeted {pct(t['targetedShare'])} (oneShard)  "
            f"broadcast {pct(t['allShardsShare'])} (allShards" in once), once
    hosts_legend = {c: int(n) for c, n in re.findall(r'data-hosts="(\w+)" data-count="(\d+)"', dom)}
    for c in ("oneShard", "manyShards", "allShards", "unsharded"):
        assert hosts_legend[c] == t["hostsTargeted"][c] == m[f'shardscope_hosts_targeted_total{{hosts="{c}"}}']
    assert f"allShards {t['hostsTargeted']['allShards']} " in once
    # The class bar: of every operation, said so.
    assert f"of all {t['ops']:,} operations" in text_of(dom, "class-note")
    for m_ in re.finditer(r'<span data-class="(\w+)" data-count="(\d+)">[^<]*?([\d.]+%)\)', dom):
        c, n, shown = m_.groups()
        assert int(n) == t["targeting"][c] and shown == pct(t["targetingShare"][c]), m_.group(0)
        assert f"{c} {n} ({shown})" in once

    # Per shard (all namespaces) and per namespace and shard (exact, writes included).
    page_shards = {r["data-shard"]: int(r["data-ops"]) for r in rows(dom, "shard")}
    assert page_shards == {s["name"]: s["ops"] for s in stats["shards"]}
    for s in stats["shards"]:
        assert m[f'shardscope_shard_ops_total{{shard="{s["name"]}"}}'] == s["ops"]
        assert f"  {s['name']} {s['ops']} (" in once
    ns = next(n for n in stats["namespaces"] if n["ns"] == "shop.orders")
    page_ns = {r["data-shard"]: r for r in rows(dom, "chunkshard") if r["data-ns"] == "shop.orders"}
    for s in ns["shards"]:
        row = page_ns[s["name"]]
        assert (int(row["data-ops"]), int(row["data-targeted"]), int(row["data-writes"])) == (
            s["ops"], s["targetedOps"], s["writes"]), (row, s)
        assert metric_sum(m, "shardscope_namespace_shard_ops_total", ns="shop.orders", shard=s["name"]) == s["ops"]
        assert metric_sum(m, "shardscope_namespace_shard_ops_total", ns="shop.orders", shard=s["name"],
                          hosts="oneShard") == s["targetedOps"]
    assert sum(s["writes"] for s in ns["shards"]) > 0

    # Per shape: count, share and the broadcast (allShards) share agree; an insert batch that reached
    # every shard is allShards and 100% broadcast whatever its reason class.
    page_shapes = {r["data-shape-id"]: r for r in rows(dom, "shape")}
    for s in stats["shapes"][:25]:
        row = page_shapes[s["id"]]
        assert int(row["data-count"]) == s["count"] and row["data-class"] == s["class"], (row, s)
        assert row["cells"]["broadcast"] == pct(s["broadcastShare"]) and row["cells"]["hosts"] == s["countClass"]
        assert row["cells"]["share"] == pct(s["share"]) and s["share"] == pytest.approx(s["count"] / t["ops"], rel=1e-5)
        assert s["broadcastShare"] == s["allShardsShare"]  # one figure (null together: no sharded operation)
    inserts = [s for s in stats["shapes"] if s["command"] == "insert" and s["ns"] == "shop.orders"]
    wide = [s for s in inserts if s["hostsTargeted"]["allShards"]]
    assert wide, inserts
    for s in wide + [s for s in stats["shapes"] if s["command"] == "getMore" and s["countClass"] == "allShards"]:
        row = page_shapes[s["id"]]
        assert row["cells"]["hosts"] == "allShards" and row["cells"]["broadcast"] != "0.0%", row
        line = next(l for l in once.splitlines() if l.split()[:1] == [str(s["count"])] and s["command"] in l)
        assert line.split()[3] == pct(s["broadcastShare"]) != "0.0%", line

    # The hot-shard verdict: /stats judges it (targeted ops per namespace); the page and the CLI show it.
    hot = stats["hotness"]["namespaces"][0]
    assert hot["ns"] == "shop.orders" and hot["judged"] and hot["hot"] and hot["hottest"] == "shardA", hot
    targeted = {s["name"]: s["targetedOps"] for s in hot["shards"]}
    assert hot["ratio"] == pytest.approx(max(targeted.values()) / min(targeted.values()), rel=1e-5)
    card = attrs_of(dom, "hot-card")
    assert card["data-hot"] == "shardA" and float(card["data-ratio"]) == pytest.approx(hot["ratio"], abs=1e-3)
    assert f"hot shard: shop.orders {hot['ratio']:.2f}x shardA" in once and "HOT" in once


def test_hot_shard_ignores_broadcasts_and_other_namespaces(ferretdb, proxy):
    """Broadcasts land on every owner: counted, they dilute the ratio. Targeted load decides."""
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        assert http_request(p.admin_url, "POST", "/stats/reset")[0] == 200
        coll = client.shop.orders
        for i in range(120):  # 20 per customer: one customer per shard, balanced
            list(coll.find({"customerId": CUSTOMERS[i % 6]}))
        for _ in range(40):   # shardA's customer again: 60 vs 20 targeted operations
            list(coll.find({"customerId": CUSTOMERS[0]}))
        for _ in range(300):  # broadcasts: 300 more operations on every shard
            coll.find_one({"status": "none"})
        client.shop.other.insert_one({"x": 1})  # an unsharded namespace's load is not shop.orders' doing
    stats = get_stats(p.admin_url)
    hot = next(n for n in stats["hotness"]["namespaces"] if n["ns"] == "shop.orders")
    by_shard = {s["name"]: s for s in hot["shards"]}
    assert by_shard["shardA"]["targetedOps"] == 60 and by_shard["shardB"]["targetedOps"] == 20, hot
    assert hot["ratio"] == pytest.approx(3.0) and hot["hot"] and hot["hottest"] == "shardA", hot
    # Counting every operation per shard would say 360/320 = 1.125: balanced.
    assert by_shard["shardA"]["ops"] / by_shard["shardB"]["ops"] < 1.5
    dom = page_dom(p.admin_url)
    card = attrs_of(dom, "hot-card")
    assert card["data-hot"] == "shardA" and card["data-ns"] == "shop.orders" and float(card["data-ratio"]) == pytest.approx(3.0)
    assert "targeted ops" in text_of(dom, "hot-sub")


# ---------------------------------------------------------------- 3. each panel states its interval

def test_panels_state_their_intervals_and_rates_drop_when_traffic_stops(settled_proxy, shardscope_binary):
    url = settled_proxy.admin_url
    # Wait for an interval of the server's history with no operation at all: traffic stopped.
    def quiet():
        hist = json.loads(http_request(url, path="/history")[2])
        return hist if len(hist["samples"]) >= 2 and hist["rates"]["last"]["ops"] == 0 and hist["rates"]["window"]["ops"] > 0 else None
    assert wait_for(quiet, timeout=60)
    hist = quiet()
    dom = page_dom(url)
    last, window = hist["rates"]["last"], hist["rates"]["window"]
    assert last["seconds"] == pytest.approx(hist["intervalSeconds"], rel=0.5)
    assert attrs_of(dom, "ops-rate")["data-rate"] == "0.000" and text_of(dom, "ops-rate") == "0.0"
    sub = text_of(dom, "ops-rate-sub")
    assert sub.startswith(f"last {round(last['seconds'])} s") and "avg" in sub, sub
    assert text_of(dom, "th-rate-last").startswith("ops/s last ") and text_of(dom, "th-rate-window").startswith("ops/s avg ")
    for r in rows(dom, "shard"):
        assert r["cells"]["rate"] == "0.0", r  # the last interval: nothing
    assert any(float(r["cells"]["rate-window"]) > 0 for r in rows(dom, "shard"))  # the window still has load
    for element_id in ("history-span", "history-span-shard"):
        assert re.fullmatch(r"\(ops/s per 5 s interval, last \d+ (s|min)\)", text_of(dom, element_id)), text_of(dom, element_id)
    assert "since reset" in text_of(dom, "total-ops-sub")
    # `stats --watch` over an interval without traffic: no share is claimed for no operations.
    watch = cli(shardscope_binary, "stats", "--admin", url, "--watch", "0.2", "--count", "1").stdout
    assert "ops/s 0.0" in watch and "targeted -  broadcast -" in watch, watch


# ---------------------------------------------------------------- 4. the chunk view

def test_chunk_view_marks_estimates_and_counts_writes_exactly(ferretdb, proxy):
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        assert http_request(p.admin_url, "POST", "/stats/reset")[0] == 200
        coll = client.shop.orders
        for i in range(50):  # 50 targeted updates on CUSTOMERS[0]'s shard (shardA)
            coll.update_one({"customerId": CUSTOMERS[0], "orderId": f"O{i:05d}"}, {"$set": {"status": "x"}})
        for i in range(12):  # 12 single inserts for CUSTOMERS[1] (shardB)
            coll.insert_one({"orderId": f"I{i}", "customerId": CUSTOMERS[1], "orderDate": BASE_DATE})
        run_profile(client)
    stats = get_stats(p.admin_url)
    ns = {s["name"]: s for s in next(n for n in stats["namespaces"] if n["ns"] == "shop.orders")["shards"]}
    assert ns["shardA"]["writes"] == 50 and ns["shardB"]["writes"] == 12, ns
    dom = page_dom(p.admin_url)
    chunk_rows = {r["data-shard"]: r for r in rows(dom, "chunkshard")}
    assert int(chunk_rows["shardA"]["data-writes"]) == 50 and int(chunk_rows["shardB"]["data-writes"]) == 12
    ranges = rows(dom, "range")
    assert len(ranges) == 12  # every range of the routing file is listed
    note = html.unescape(re.search(r'data-field="ranges-note"[^>]*>([^<]*)<', dom).group(1))
    assert note.startswith("chunk ranges: 12 of 12 listed") and "estimated" in note, note
    estimated = [r for r in ranges if r.get("data-estimate") == "true"]
    assert estimated, ranges
    for r in estimated:  # an estimate says so, on the page and in the cell
        assert r["text"].count("\u2248") == 3, r["text"]
    for r in ranges:
        if r.get("data-estimate") != "true":
            assert "not estimated" in r["text"], r["text"]


# ---------------------------------------------------------------- 6. the shape column at 1400 px

def test_shape_column_is_one_line_at_1400px_and_expands(ferretdb, proxy):
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        run_profile(client)
    revenue = next(s for s in get_stats(p.admin_url)["shapes"] if s["shape"] == SHAPE_REVENUE)
    b = Browser(width=1400, height=1000)
    try:
        b.open(p.admin_url + "/")
        b.wait_for("document.body.getAttribute('data-loaded') === 'true' && !!document.querySelector('tr.shape')")
        measure = """(() => {
            const rows = [...document.querySelectorAll('tr.shape')];
            const row = rows.find((r) => r.dataset.shapeId === '%s');
            const cell = row.querySelector('td.shape'), text = cell.querySelector('.text');
            return {row: row.getBoundingClientRect().height, text: text.getBoundingClientRect().height,
                    shortest: Math.min(...rows.map((r) => r.getBoundingClientRect().height)),
                    overflows: text.scrollWidth > text.clientWidth, shown: text.textContent,
                    button: cell.querySelector('button') ? cell.querySelector('button').textContent : null,
                    pageWidth: document.documentElement.clientWidth,
                    tableWidth: document.getElementById('shapes').closest('table').getBoundingClientRect().width};
        })()""" % revenue["id"]
        folded = b.evaluate(measure)
        # One line: the aggregate's row is no taller than the shortest row (plus the "more" link's line).
        assert folded["row"] <= 2.2 * folded["shortest"], folded
        assert folded["overflows"] and folded["button"] == "more" and folded["shown"] == SHAPE_REVENUE, folded
        assert folded["tableWidth"] <= folded["pageWidth"] + 1, folded  # no horizontal scrolling at 1400 px
        b.evaluate("document.querySelector('tr.shape[data-shape-id=\"%s\"] td.shape button').click()" % revenue["id"])
        opened = b.evaluate(measure)
        assert opened["button"] == "less" and not opened["overflows"], opened
        assert opened["text"] >= 2 * folded["text"], (folded, opened)
        # The next refresh (every 2 s) keeps it open.
        stamp = b.evaluate("document.getElementById('status').textContent")
        b.wait_for("document.getElementById('status').textContent !== %s" % json.dumps(stamp))
        assert b.evaluate(measure)["button"] == "less"
        b.evaluate("document.querySelector('tr.shape[data-shape-id=\"%s\"] td.shape button').click()" % revenue["id"])
        assert b.evaluate(measure)["text"] == pytest.approx(folded["text"], abs=1)
    finally:
        b.close()


def test_dashboard_screenshot_for_the_docs(settled_proxy):
    """The screenshot kept in docs/dashboard.png (refresh it with SHARDSCOPE_UPDATE_DOCS_SCREENSHOT=1)."""
    import os
    b = Browser(width=1400, height=2400)
    try:
        b.open(settled_proxy.admin_url + "/")
        b.wait_for("document.body.getAttribute('data-loaded') === 'true' && !!document.querySelector('tr.range')")
        b.screenshot(SCREENSHOT, width=1400, height=2400)
    finally:
        b.close()
    assert SCREENSHOT.stat().st_size > 50_000
    if os.environ.get("SHARDSCOPE_UPDATE_DOCS_SCREENSHOT") == "1":
        (REPO_ROOT / "docs" / "dashboard.png").write_bytes(SCREENSHOT.read_bytes())


def test_chunk_view_says_how_many_ranges_are_not_listed(ferretdb, proxy, workdir):
    """/chunks lists the first 64 ranges: with 70 chunks the page says the other 6 are not listed."""
    routing = json.loads(ROUTING_FILE.read_text())
    coll = routing["collections"][0]
    bounds = [f"C{i * 100:04d}" for i in range(1, 70)]
    mins = [{"$minKey": 1}] + bounds
    maxs = bounds + [{"$maxKey": 1}]
    coll["chunks"] = [{"min": {"customerId": lo, "orderDate": {"$minKey": 1}},
                       "max": {"customerId": hi, "orderDate": {"$minKey": 1} if hi != {"$maxKey": 1} else {"$maxKey": 1}},
                       "shard": routing["shards"][i % len(routing["shards"])]}
                      for i, (lo, hi) in enumerate(zip(mins, maxs))]
    routing_file = workdir / "seventy_chunks.json"
    routing_file.write_text(json.dumps(routing))
    p = proxy(ferretdb.uri, "--routing", str(routing_file), admin=True)
    dom = page_dom(p.admin_url)
    note = html.unescape(re.search(r'data-field="ranges-note"[^>]*>([^<]*)<', dom).group(1))
    assert note.startswith("chunk ranges: 64 of 70 listed (6 more not listed)"), note
    assert len(rows(dom, "range")) == 64 and "\u2026 6 more ranges not listed" in html.unescape(dom)
