"""Shard-key evaluation from live traffic: the seed scenarios driven by real pymongo workloads
through the proxy to FerretDB, evaluated from the proxy's /evaluate endpoints and by
`shardscope evaluate --from URL` (fleet merge of two sidecars).

Skipped until the proxy serves /evaluate (the Evaluator wiring); the offline path of the same
acceptance criteria is tests/evaluation/evaluator_test.cpp.
"""
from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "workload"

pytestmark = [pytest.mark.needs_proxy, pytest.mark.slow]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def _evaluating_proxy(proxy, ferretdb):
    # The fleet merge (`shardscope evaluate --from`) needs the sampled documents and filters, which
    # leave a sidecar only with evaluation.allow_values (hashes and counts otherwise).
    return proxy(ferretdb.uri, "--evaluation.allow_values", "true", admin=True)


# FerretDB's SQLite backend scans the collection for each query (about 4 queries/s over 5,000
# orders on this machine), so the scenarios run at a reduced scale that keeps the seed's shape.
SMALL_ORDERS = ("--orders", "1000", "--customers", "150")


def _run(script: str, uri: str, *args: str, drop: bool = True) -> dict:
    out = subprocess.run([sys.executable, str(WORKLOAD / script), "--uri", uri, *(["--drop"] if drop else []), *args],
                         check=True, capture_output=True, text=True, timeout=300)
    return json.loads(out.stdout)


def _candidate(ns_report: dict, key: dict) -> dict:
    for c in ns_report["candidates"]:
        if c["key"] == key:
            return c
    raise AssertionError(f"candidate {key} not evaluated: {[c['key'] for c in ns_report['candidates']]}")


def _ns(report: dict, ns: str) -> dict:
    return next(n for n in report["namespaces"] if n["ns"] == ns)


def test_order_service_verdict(proxy, ferretdb, shardscope_binary):
    p = _evaluating_proxy(proxy, ferretdb)
    _run("order_service.py", p.uri, *SMALL_ORDERS, "--ops", "300")
    report = json.loads(_get(p.admin_url + "/evaluate"))
    orders = _ns(report, "shop.orders")
    assert orders["verdict"]["key"] == {"customerId": 1, "orderDate": 1}
    assert _candidate(orders, {"_id": 1})["monotonicity"]["pass"] is False
    assert _candidate(orders, {"_id": 1})["simulatedCluster"]["maxShare"] > 0.95
    assert _candidate(orders, {"_id": "hashed"})["targetedShare"] < 0.01
    assert _candidate(orders, {"customerId": 1})["simulatedCluster"]["jumboRisk"] is True
    text = _get(p.admin_url + "/evaluate?format=text")
    assert "Choice: {customerId: 1, orderDate: 1}" in text
    assert "What I am accepting" in text and "What would change my mind" in text
    # The CLI gives the same verdict from the sketches.
    out = subprocess.run([str(shardscope_binary), "evaluate", "--from", p.admin_url, "--json"],
                         check=True, capture_output=True, text=True, timeout=60)
    assert _ns(json.loads(out.stdout), "shop.orders")["verdict"]["key"] == {"customerId": 1, "orderDate": 1}


def test_order_service_heavy_customer_changes_verdict(proxy, ferretdb):
    p = _evaluating_proxy(proxy, ferretdb)
    _run("order_service.py", p.uri, *SMALL_ORDERS, "--ops", "300", "--top-share", "0.4")
    orders = _ns(json.loads(_get(p.admin_url + "/evaluate")), "shop.orders")
    assert orders["verdict"]["key"] != {"customerId": 1, "orderDate": 1}
    assert _candidate(orders, {"customerId": 1, "orderDate": 1})["frequency"]["pass"] is False


def test_telemetry_ranged_vs_hashed(proxy, ferretdb):
    p = _evaluating_proxy(proxy, ferretdb)
    _run("telemetry.py", p.uri, "--sensors", "2000", "--seconds", "10", "--queries", "40")
    readings = _ns(json.loads(_get(p.admin_url + "/evaluate")), "telemetry.readings")
    ranged = _candidate(readings, {"sensorId": 1, "ts": 1})["simulatedCluster"]["maxMinRatio"]
    hashed = _candidate(readings, {"sensorId": "hashed"})["simulatedCluster"]["maxMinRatio"]
    assert ranged > 2.0 and hashed < 1.2, (ranged, hashed)
    ts = _candidate(readings, {"ts": 1})
    assert ts["monotonicity"]["pass"] is False and ts["simulatedCluster"]["maxShare"] > 0.9


def test_fleet_merge(proxy, ferretdb, shardscope_binary):
    a = _evaluating_proxy(proxy, ferretdb)
    b = proxy(ferretdb.uri, "--evaluation.allow_values", "true", admin=True)
    _run("order_service.py", a.uri, *SMALL_ORDERS, "--ops", "150", "--seed", "3")
    _run("order_service.py", b.uri, *SMALL_ORDERS, "--ops", "150", "--seed", "4", drop=False)
    out = subprocess.run([str(shardscope_binary), "evaluate", "--from", a.admin_url, "--from", b.admin_url],
                         check=True, capture_output=True, text=True, timeout=60)
    assert "shop.orders" in out.stdout and "Choice:" in out.stdout
