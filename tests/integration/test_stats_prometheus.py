"""A real Prometheus server (Debian package) scrapes the proxy's /metrics on loopback; queries on
its HTTP API return the counts the driver produced."""
from __future__ import annotations

import pymongo
import pytest

from harness import free_port
from stats_helpers import CUSTOMERS, ROUTING_FILE, PrometheusServer, http_request, run_profile, seed_orders

pytestmark = pytest.mark.needs_proxy


@pytest.fixture
def prometheus(workdir):
    servers: list[PrometheusServer] = []

    def make(target: str, token_file=None) -> PrometheusServer:
        s = PrometheusServer(workdir / f"prometheus{len(servers) + 1}", target, token_file).start()
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.stop()


def test_prometheus_scrapes_expected_counts(ferretdb, proxy, prometheus, workdir):
    token = "prom-token-123"
    token_file = workdir / "token"
    token_file.write_text(token)
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), "--admin-token-file", str(token_file), admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        assert http_request(p.admin_url, "POST", "/stats/reset", token=token)[0] == 200
        run_profile(client)

    # The exposition parses and carries the prefix (Prometheus itself is the real check below).
    status, headers, body = http_request(p.admin_url, path="/metrics", token=token)
    assert status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4")
    assert all(line.startswith(("# ", "shardscope_", "process_")) for line in body.decode().splitlines() if line)

    prom = prometheus(f"127.0.0.1:{p.admin_port}", token_file=token_file)
    single = prom.wait_value(
        'shardscope_ops_total{ns="shop.orders",command="find",targeting="single"}', 62)
    assert single == 62, prom.target_health()
    assert prom.wait_value(
        'sum(shardscope_ops_total{ns="shop.orders",targeting="broadcast"})', 38) == 38
    assert prom.wait_value('shardscope_shard_ops_total{shard="shardA"}', 38 + 11) == 49
    # Histograms are real Prometheus histograms: _count and quantiles work.
    assert prom.wait_value(
        'shardscope_op_shards_touched_count{ns="shop.orders",command="aggregate"}', 2) == 2
    assert prom.wait_value(
        'shardscope_op_shards_touched_bucket{ns="shop.orders",command="find",le="1"}', 62) == 62
    q = prom.query('histogram_quantile(0.5, sum by (le) (shardscope_op_latency_seconds_bucket{ns="shop.orders"}))')
    assert q and 0 < float(q[0]["value"][1]) < 5, q
    # One series per top shape, its text in shardscope_shape_info; no values anywhere.
    info = prom.query('shardscope_shape_info{ns="shop.orders",command="find"}')
    assert any(r["metric"]["shape"] == '{"status":"<string>"}' for r in info), info
    assert not any(c in r["metric"]["shape"] for r in info for c in CUSTOMERS)
    # Bounded label sets: no label carries more distinct values than the shapes we sent.
    assert len(prom.query('count by (shape_id) (shardscope_shape_ops_total{ns="shop.orders"})')) <= 10

    # Wrong credentials: the scrape fails (401) rather than leaking data.
    bad_token = workdir / "bad-token"
    bad_token.write_text("wrong")
    prom_bad = prometheus(f"127.0.0.1:{p.admin_port}", token_file=bad_token)
    assert prom_bad.wait_value('up{job="shardscope"}', 0, timeout=20) == 0


def test_prometheus_scrapes_the_metrics_listener_without_a_token(ferretdb, proxy, prometheus, workdir):
    """Kubernetes' prometheus.io annotations cannot send a token: `--metrics HOST:PORT` serves /metrics
    (and /healthz) without it, nothing else, while the admin endpoint still requires the token."""
    token_file = workdir / "token"
    token_file.write_text("admin-token-9")
    metrics_port = free_port()
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), "--admin-token-file", str(token_file),
              "--metrics", f"127.0.0.1:{metrics_port}", admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        run_profile(client)
    metrics_url = f"http://127.0.0.1:{metrics_port}"
    assert http_request(p.admin_url, path="/metrics")[0] == 401
    status, _, body = http_request(metrics_url, path="/metrics")
    assert status == 200 and b"shardscope_ops_total" in body
    assert not any(c.encode() in body for c in CUSTOMERS)  # counts and shapes, never values
    assert http_request(metrics_url, path="/healthz")[0] == 200
    for path in ("/stats", "/", "/evaluate", "/config", "/history", "/chunks"):
        assert http_request(metrics_url, path=path)[0] == 404, path
    assert http_request(metrics_url, "POST", "/config/reload")[0] == 404

    prom = prometheus(f"127.0.0.1:{metrics_port}")  # no credentials in its scrape config
    assert prom.wait_value('up{job="shardscope"}', 1) == 1, prom.target_health()
    assert prom.wait_value('sum(shardscope_ops_total{ns="shop.orders",command="find",targeting="single"})', 62) == 62
    prom_admin = prometheus(f"127.0.0.1:{p.admin_port}")  # the admin endpoint still refuses it
    assert prom_admin.wait_value('up{job="shardscope"}', 0, timeout=20) == 0
