"""Live routing statistics through the real binary: /stats counts equal the operations real
drivers (pymongo, the Node driver) sent, per shape and targeting class; reset; the
`shardscope stats` CLI; privacy of values; bad admin requests leave the data path alone."""
from __future__ import annotations

import json
import subprocess
import threading

import pymongo
import pytest

from harness import REPO_ROOT
from stats_helpers import (CUSTOMERS, NS, PROFILE, ROUTING_FILE, SECRET_ORDER_ID, SHAPE_BY_CUSTOMER,
                           SHAPE_BY_STATUS, find_shape, get_stats, http_request, raw_exchange, run_profile,
                           seed_orders)

pytestmark = pytest.mark.needs_proxy

NODE_DIR = REPO_ROOT / "tests" / "drivers" / "node"


def mongo(p) -> pymongo.MongoClient:
    return pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000)


def reset(admin_url: str, token: str | None = None) -> None:
    status, _, body = http_request(admin_url, "POST", "/stats/reset", token=token)
    assert status == 200, body


@pytest.fixture
def stats_proxy(ferretdb, proxy):
    return proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)


def assert_profile_counts(stats: dict, expected: dict, classes: dict) -> None:
    for (command, shape), count in expected.items():
        s = find_shape(stats, command, shape)
        assert s is not None, f"no {command} {shape} in {[x['shape'] for x in stats['shapes']]}"
        cls = classes[(command, shape)]
        assert s["count"] == count, s
        assert s["targeting"][cls] == count, s
        assert s["class"] == cls, s
        assert s["latency"]["count"] == count, s
        assert 0 < s["latency"]["p50Ns"] <= s["latency"]["p99Ns"] <= s["latency"]["maxNs"], s
        assert s["errors"]["total"] == 0, s
        if cls == "single":
            assert s["shardsTouched"]["max"] == 1 and s["shardsTouched"]["histogram"] == {"1": count}, s
            assert s["broadcastShare"] == 0
        else:
            assert s["shardsTouched"]["histogram"] == {"6": count}, s
            assert s["broadcastShare"] == 1


def test_counts_per_shape_and_class(stats_proxy):
    with mongo(stats_proxy) as client:
        seed_orders(client)
        reset(stats_proxy.admin_url)  # count only the profile below
        expected = run_profile(client)
    stats = get_stats(stats_proxy.admin_url)
    classes = {(c, s): cls for c, s, _, cls in PROFILE}
    assert_profile_counts(stats, expected, classes)

    # Top shape by count is seed 003's dominant query, and it is the targeted one.
    orders = [s for s in stats["shapes"] if s["ns"] == NS]
    assert orders[0]["shape"] == SHAPE_BY_CUSTOMER and orders[0]["count"] == 62

    # Per shard: every broadcast touched all six; the customer finds went to their own shard
    # (CUSTOMERS[i % 6] for i in 0..61: 11, 11, 10, 10, 10, 10).
    broadcasts = 21 + 9 + 6 + 2
    singles = [len(range(k, 62, len(CUSTOMERS))) for k in range(len(CUSTOMERS))]
    shard_ops = {s["name"]: s["ops"] for s in stats["shards"]}
    assert shard_ops == {name: broadcasts + singles[i] for i, name in
                         enumerate(["shardA", "shardB", "shardC", "shardD", "shardE", "shardF"])}

    t = stats["totals"]
    assert t["targeting"]["single"] >= 62 and t["targeting"]["broadcast"] == broadcasts
    assert t["ops"] >= 100 and t["replies"] >= 100 and t["bytesIn"] > 0 and t["bytesOut"] > 0
    assert stats["process"]["connectionsOpened"] >= 1
    assert stats["options"]["recordValues"] is False


def test_counts_across_drivers(stats_proxy):
    with mongo(stats_proxy) as client:
        seed_orders(client)
        reset(stats_proxy.admin_url)
        run_profile(client)
    script = """
const { MongoClient } = require('mongodb');
(async () => {
  const client = new MongoClient(process.argv[1], { serverSelectionTimeoutMS: 20000 });
  const orders = client.db('shop').collection('orders');
  for (let i = 0; i < 5; i++) await orders.find({ customerId: 'C0100' }).sort({ orderDate: -1 }).toArray();
  for (let i = 0; i < 3; i++) await orders.find({ status: 'shipped' }).toArray();
  await client.close();
})().catch((e) => { console.error(e); process.exit(1); });
"""
    r = subprocess.run(["node", "-e", script, stats_proxy.uri], cwd=NODE_DIR, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    stats = get_stats(stats_proxy.admin_url)
    by_customer = find_shape(stats, "find", SHAPE_BY_CUSTOMER)
    by_status = find_shape(stats, "find", SHAPE_BY_STATUS)
    assert by_customer["count"] == 62 + 5 and by_customer["targeting"]["single"] == 67
    assert by_status["count"] == 6 + 3 and by_status["targeting"]["broadcast"] == 9


def test_reset_and_top(stats_proxy):
    with mongo(stats_proxy) as client:
        seed_orders(client)
        run_profile(client)
    assert get_stats(stats_proxy.admin_url)["totals"]["ops"] > 100
    status, _, body = http_request(stats_proxy.admin_url, path="/stats?top=2")
    top = json.loads(body)
    assert status == 200 and len(top["shapes"]) == 2 and top["shapesTotal"] > 2
    reset(stats_proxy.admin_url)
    after = get_stats(stats_proxy.admin_url)
    assert find_shape(after, "find", SHAPE_BY_CUSTOMER) is None
    assert all(s["ops"] == 0 for s in after["shards"])


def test_cli_table_and_json(stats_proxy, shardscope_binary):
    with mongo(stats_proxy) as client:
        seed_orders(client)
        reset(stats_proxy.admin_url)
        run_profile(client)
    r = subprocess.run([str(shardscope_binary), "stats", "--admin", stats_proxy.admin_url, "--once", "--top", "5"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    row = next(line for line in lines if SHAPE_BY_CUSTOMER in line)
    cols = row.split()
    assert cols[0] == "62" and cols[2] == "single" and cols[3] == "0.0%", row
    status_row = next(line for line in lines if SHAPE_BY_STATUS in line)
    assert status_row.split()[0] == "6" and "broadcast" in status_row and "100.0%" in status_row
    assert "shardA" in r.stdout

    r = subprocess.run([str(shardscope_binary), "stats", "--admin", stats_proxy.admin_url, "--json"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert find_shape(doc, "find", SHAPE_BY_CUSTOMER)["count"] == 62

    r = subprocess.run([str(shardscope_binary), "stats", "--admin", "http://127.0.0.1:1", "--once"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "cannot reach" in r.stderr


def test_no_values_unless_record_values(ferretdb, proxy):
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), "--log-level", "debug", admin=True)
    with mongo(p) as client:
        seed_orders(client)
        run_profile(client)
    texts = {
        "stats": http_request(p.admin_url, path="/stats")[2].decode(),
        "metrics": http_request(p.admin_url, path="/metrics")[2].decode(),
        "page": http_request(p.admin_url, path="/")[2].decode(),
        "log": p.stderr_text(),
    }
    for where, text in texts.items():
        assert SECRET_ORDER_ID not in text, where
        assert "C4500" not in text, where  # a customer id the queries used (not a chunk bound)

    p2 = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), "--stats.record_values", "true", admin=True)
    with mongo(p2) as client:
        run_profile(client)
    stats = get_stats(p2.admin_url)
    assert stats["options"]["recordValues"] is True
    # One sample per shape (the latest operation), values included.
    assert '"pending"' in find_shape(stats, "find", SHAPE_BY_STATUS)["sample"]
    assert any(c in find_shape(stats, "find", SHAPE_BY_CUSTOMER)["sample"] for c in CUSTOMERS)


def test_bad_admin_requests_leave_data_path_alone(ferretdb, proxy, workdir):
    token = "t0ken-" + "x" * 20
    token_file = workdir / "admin.token"
    token_file.write_text(token + "\n")
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), "--admin-token-file", str(token_file), admin=True)
    url = p.admin_url

    def statuses():
        got = {
            "missing token": http_request(url, path="/stats")[0],
            "wrong token": http_request(url, path="/stats", token="nope")[0],
            "wrong token metrics": http_request(url, path="/metrics", token=token + "x")[0],
            "unknown path": http_request(url, path="/nope", token=token)[0],
            "wrong method": http_request(url, "PUT", "/metrics", token=token, body=b"")[0],
            "reset via GET": http_request(url, path="/stats/reset", token=token)[0],
            "healthz": http_request(url, path="/healthz")[0],
            "readyz": http_request(url, path="/readyz")[0],
            "good": http_request(url, path="/stats", token=token)[0],
        }
        return got

    expected = {"missing token": 401, "wrong token": 401, "wrong token metrics": 401, "unknown path": 404,
                "wrong method": 405, "reset via GET": 405, "healthz": 200, "readyz": 200, "good": 200}
    assert statuses() == expected
    status, headers, _ = http_request(url, path="/stats")
    assert headers.get("www-authenticate", "").lower().startswith("bearer")

    host, port = "127.0.0.1", p.admin_port
    big_header = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 40000 + b"\r\n\r\n"
    big_body = (b"POST /stats/reset HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token.encode() +
                b"\r\nContent-Length: 200000\r\n\r\n" + b"b" * 200000)
    # Answered with their status line (issue 28), read after the whole request was sent.
    for raw, status in ((big_header, b"HTTP/1.1 431"), (big_body, b"HTTP/1.1 413")):
        reply = raw_exchange(host, port, raw)
        assert reply.startswith(status), reply[:200]
    assert raw_exchange(host, port, b"garbage\r\n\r\n").startswith(b"HTTP/1.1 400")

    # Hammer the admin port with bad requests while a driver runs the workload: counts stay exact.
    stop = threading.Event()

    def hammer():
        while not stop.is_set():
            statuses()
            raw_exchange(host, port, big_header)

    t = threading.Thread(target=hammer, daemon=True)
    with mongo(p) as client:
        seed_orders(client)
        reset(url, token)
        t.start()
        try:
            expected_counts = run_profile(client)
        finally:
            stop.set()
            t.join(30)
    stats = get_stats(url, token)
    for (command, shape), count in expected_counts.items():
        assert find_shape(stats, command, shape)["count"] == count
    assert stats["process"]["adminRejected"] > 0
    assert p.alive()
