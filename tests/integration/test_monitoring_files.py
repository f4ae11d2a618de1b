"""packaging/monitoring: the Prometheus alert rules pass `promtool check rules` and their unit tests
(`promtool test rules`), and every metric the rules and the Grafana dashboard name exists in a live
/metrics scrape of build/shardscope (with the rewrite and the mirror on, so their series exist)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pymongo
import pytest
import yaml

from harness import REPO_ROOT
from stats_helpers import ROUTING_FILE, http_request, run_profile, seed_orders

MONITORING = REPO_ROOT / "packaging" / "monitoring"
METRIC = re.compile(r"\bshardscope_[a-z0-9_]+\b")


def promtool() -> str:
    tool = shutil.which("promtool")
    if tool is None:
        pytest.fail("promtool not found (Debian package prometheus; scripts/setup.sh installs it)")
    return tool


def test_rules_pass_promtool_check():
    r = subprocess.run([promtool(), "check", "rules", "alerts.yaml"], cwd=MONITORING, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout


def test_rules_pass_their_unit_tests():
    r = subprocess.run([promtool(), "test", "rules", "alerts_test.yaml"], cwd=MONITORING, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_alert_has_a_unit_test():
    rules = yaml.safe_load((MONITORING / "alerts.yaml").read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    tested = {t["alertname"] for case in yaml.safe_load((MONITORING / "alerts_test.yaml").read_text())["tests"]
              for t in case.get("alert_rule_test", []) if t.get("exp_alerts")}
    assert alerts <= tested, alerts - tested


def referenced_metrics() -> dict[str, set[str]]:
    rules = yaml.safe_load((MONITORING / "alerts.yaml").read_text())
    from_rules = {m for g in rules["groups"] for r in g["rules"] for m in METRIC.findall(r["expr"])}
    dash = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    exprs += [v["query"] for v in dash["templating"]["list"] if v["type"] == "query"]
    from_dash = {m for e in exprs for m in METRIC.findall(e)}
    return {"alerts.yaml": from_rules, "grafana-dashboard.json": from_dash}


def test_dashboard_covers_what_operators_ask():
    dash = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    titles = " | ".join(p["title"] for p in dash["panels"])
    for words in ("by targeting class", "per shard", "Broadcast share", "Hot shard", "p99 latency",
                  "Upstream", "Mirror drops", "rewrites", "Routing discovery"):
        assert words in titles, words
    assert len({p["id"] for p in dash["panels"]}) == len(dash["panels"])


@pytest.mark.needs_proxy
def test_every_referenced_metric_exists_in_a_live_scrape(ferretdb, proxy):
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), "--rewrite-rule", "shop.orders: orderId -> customerId",
              "--mirror.upstream", ferretdb.uri, admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        run_profile(client)
    # The discovery series exist only with routing.discovery on: a second sidecar with it (FerretDB
    # answers the config reads or fails them; the series are there either way).
    discovering = proxy(ferretdb.uri, "--routing.discovery", "true", "--routing.discovery_interval_s", "1", admin=True)
    exposed = set()
    for admin_url in (p.admin_url, discovering.admin_url):
        status, _, body = http_request(admin_url, path="/metrics")
        assert status == 200
        text = body.decode()
        exposed |= set(re.findall(r"^# TYPE (shardscope_[a-z0-9_]+) ", text, re.M))
        exposed |= set(re.findall(r"^(shardscope_[a-z0-9_]+)[{ ]", text, re.M))
    for source, names in referenced_metrics().items():
        assert names, source
        missing = names - exposed
        assert not missing, f"{source} names metrics /metrics does not have: {sorted(missing)}"
