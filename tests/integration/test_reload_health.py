"""A refused live reload is part of the health every surface shows (admin/health.h), not a line
only /config carries: /stats "health", the dashboard's banner (real Chromium), `shardscope stats
--once` and shardscope_healthy{component="reload"} say it, with the reason, until a reload is
applied again. Before: /stats said "ok", the page had no banner, the CLI "health: ok" and /metrics
had no sample, while the config the operator wrote was not in force.
"""
from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request

import pymongo
import pytest

from harness import REPO_ROOT
from stats_helpers import chromium_binary, dump_dom, get_stats, http_request

pytestmark = pytest.mark.needs_proxy

ROUTING = str(REPO_ROOT / "tests" / "data" / "routing" / "orders_6shards.json")
MISSING = "/nonexistent/routing-for-health.json"


def reload(p):
    req = urllib.request.Request(p.admin_url + "/config/reload", method="POST", data=b"")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def healthy_metric(admin_url):
    status, _, body = http_request(admin_url, path="/metrics")
    assert status == 200
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in body.decode().splitlines()
            if line.startswith("shardscope_healthy{")}


def once(binary, admin_url):
    r = subprocess.run([str(binary), "stats", "--admin", admin_url, "--once"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_a_refused_reload_shows_on_every_surface_until_one_is_applied(ferretdb, proxy, workdir, shardscope_binary):
    if chromium_binary() is None:
        pytest.fail("chromium not installed (Debian package chromium)")
    config = workdir / "shardscope.yaml"
    config.write_text(f"routing:\n  file: {ROUTING}\n")
    p = proxy(ferretdb.uri, "--config", str(config), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        client.shop.orders.insert_one({"_id": 1, "customerId": "C1"})
    assert get_stats(p.admin_url)["health"]["state"] == "ok"

    config.write_text(f"routing:\n  file: {MISSING}\n")
    assert reload(p) == 400
    health = get_stats(p.admin_url)["health"]
    comp = {c["component"]: c for c in health["components"]}
    assert health["state"] == "degraded", health
    assert comp["reload"]["state"] == "failed" and not comp["reload"]["healthy"], comp
    assert MISSING in comp["reload"]["detail"], comp
    assert json.loads(urllib.request.urlopen(p.admin_url + "/config", timeout=10).read())["reload"]["lastError"] \
        in comp["reload"]["detail"]  # one fact: /config and health say the same
    assert comp["upstream"]["state"] == "up"  # traffic still flows on the config in force

    dom = dump_dom(p.admin_url + "/")
    assert 'data-loaded="true"' in dom
    assert 'id="banner" data-state="degraded"' in dom or ('id="banner"' in dom and 'data-state="degraded"' in dom), dom[:2000]
    assert "reload failed" in dom and MISSING in dom

    text = once(shardscope_binary, p.admin_url)
    assert text.startswith("!! health: DEGRADED"), text
    assert "reload failed" in text and MISSING in text, text
    assert healthy_metric(p.admin_url).get('shardscope_healthy{component="reload"}') == 0

    config.write_text(f"routing:\n  file: {ROUTING}\n")
    assert reload(p) == 200
    health = get_stats(p.admin_url)["health"]
    assert health["state"] == "ok", health
    assert {c["component"]: c["state"] for c in health["components"]}["reload"] == "ok"
    assert once(shardscope_binary, p.admin_url).startswith("health: ok")
    assert healthy_metric(p.admin_url).get('shardscope_healthy{component="reload"}') == 1
