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


def grafana_table_rows(prom, panel: dict) -> list[dict]:
    """The rows Grafana's table shows for `panel`: each target's instant query, as a table, merged on
    their common labels (the `merge` transformation) when the panel has several targets."""
    def expr_of(t):
        return (t["expr"].replace("$job", ".*").replace("$instance", ".*").replace("$__rate_interval", "1m"))
    rows: dict[tuple, dict] = {}
    for target in panel["targets"]:
        for r in prom.query(expr_of(target)):
            m = {k: v for k, v in r["metric"].items() if k not in ("job", "instance", "__name__")}
            key = (m.get("ns"), m.get("command"), m.get("shape_id"))
            row = rows.setdefault(key, {})
            row.update(m)
            row["Value #" + target["refId"] if len(panel["targets"]) > 1 else "Value"] = float(r["value"][1])
    return list(rows.values())


@pytest.mark.needs_proxy
def test_top_shapes_table_rows_each_have_ops_and_text(ferretdb, proxy, workdir):
    """Issue 26 item 8: the table joined topk(15) with every shape_info row, so shapes beyond the top 15
    appeared as rows without ops/s. Through a real Prometheus with 20 shapes, every row the panel
    shows has its rate and its text, and there are at most 15."""
    from stats_helpers import PrometheusServer

    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        coll = client.shop.orders
        for i in range(20):  # 20 shapes: one field name each
            for _ in range(i + 1):
                coll.find_one({f"field{i:02d}": 1})
    prom = PrometheusServer(workdir / "prometheus", f"127.0.0.1:{p.admin_port}").start()
    try:
        assert prom.wait_value('count(shardscope_shape_info{ns="shop.orders",command="find"})', 20) == 20
        # Two scrapes at least, so the rates exist.
        assert prom.wait_value('count(count_over_time(shardscope_shape_ops_total{ns="shop.orders"}[1m]) > 1)', 20) == 20
        dash = json.loads((MONITORING / "grafana-dashboard.json").read_text())
        panel = next(x for x in dash["panels"] if x["title"].startswith("Top query shapes"))
        rows = grafana_table_rows(prom, panel)
        value = "Value #A" if len(panel["targets"]) > 1 else "Value"
        assert 0 < len(rows) <= 15, rows
        missing = [r for r in rows if value not in r or "shape" not in r]
        assert not missing, f"{len(missing)} of {len(rows)} rows lack ops/s or the shape text: {missing[:3]}"
    finally:
        prom.stop()
