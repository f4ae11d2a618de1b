"""Helpers for the live-statistics suites (test_stats_*.py): the seed-003 order-service workload,
admin HTTP requests, a throwaway Prometheus server and headless Chromium.

The workload reproduces seed 003's query profile (62/21/9/6/2) against shop.orders, routed with
tests/data/routing/orders_6shards.json (shard key {customerId: 1, orderDate: 1}, six shards):
only the customer query names the shard-key prefix, so it is the only single-shard shape.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import http.client
import http.server
import json
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

import pymongo
import pytest

import harness
from harness import REPO_ROOT, ManagedProcess

ROUTING_FILE = REPO_ROOT / "tests" / "data" / "routing" / "orders_6shards.json"
NS = "shop.orders"

# Shapes exactly as /stats reports them (values replaced by type placeholders).
SHAPE_BY_CUSTOMER = '{"customerId":"<string>"} sort:{"orderDate":-1}'
SHAPE_BY_ORDER_ID = '{"orderId":"<string>"}'
SHAPE_DATE_RANGE = '{"orderDate":{"$gte":"<date>","$lt":"<date>"}}'
SHAPE_BY_STATUS = '{"status":"<string>"}'
SHAPE_REVENUE = '[{"$match":{"orderDate":{"$gte":"<date>"}}},{"$group":{"_id":"$region","revenue":{"$sum":"$total"}}}]'

# Seed 003's profile per 100 queries: (command, shape, count, targeting class).
PROFILE = [
    ("find", SHAPE_BY_CUSTOMER, 62, "single"),
    ("find", SHAPE_BY_ORDER_ID, 21, "broadcast"),
    ("find", SHAPE_DATE_RANGE, 9, "broadcast"),
    ("find", SHAPE_BY_STATUS, 6, "broadcast"),
    ("aggregate", SHAPE_REVENUE, 2, "broadcast"),
]

# Customers inside one chunk each, on different shards (chunk bounds C0800, C1700, C2500, C3400, C4200).
CUSTOMERS = ["C0100", "C1000", "C2000", "C3000", "C4000", "C4500"]
SECRET_ORDER_ID = "ORD-SECRET-7731"  # must never show up in stats, metrics, pages or logs
BASE_DATE = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
# seed_orders() holds one document per orderId, as seed 003's unique orderId index keeps it and the
# rule assumes by default, so find_one by orderId (limit 1) is rewritten (docs/rewrite.md).
SEED_RULE = "shop.orders: orderId -> customerId"


def seed_orders(client: pymongo.MongoClient, n: int = 60) -> None:
    coll = client.shop.orders
    coll.drop()
    coll.insert_many([
        {"_id": i, "orderId": f"O{i:05d}", "customerId": CUSTOMERS[i % len(CUSTOMERS)],
         "orderDate": BASE_DATE + dt.timedelta(days=i), "status": "pending" if i % 3 else "shipped",
         "region": ["eu", "us", "apac"][i % 3], "total": 10 + i}
        for i in range(n)])


@contextlib.contextmanager
def seeded_client_for_the_page(p):
    """A client of proxy `p` (admin on) for a test that reads the dashboard in Chromium: the seed
    orders inserted and /stats reset after them, so only the test's own traffic is counted."""
    if chromium_binary() is None:
        pytest.fail("chromium not installed (Debian package chromium)")
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        assert http_request(p.admin_url, "POST", "/stats/reset")[0] == 200
        yield client


def run_profile(client: pymongo.MongoClient, scale: int = 1) -> dict[tuple[str, str], int]:
    """Runs the seed-003 profile `scale` times; returns the expected count per (command, shape)."""
    coll = client.shop.orders
    for _ in range(scale):
        for i in range(62):
            list(coll.find({"customerId": CUSTOMERS[i % len(CUSTOMERS)]}).sort("orderDate", -1))
        for i in range(21):
            coll.find_one({"orderId": SECRET_ORDER_ID if i == 0 else f"O{i:05d}"})
        for i in range(9):
            start = BASE_DATE + dt.timedelta(days=i)
            list(coll.find({"orderDate": {"$gte": start, "$lt": start + dt.timedelta(days=7)}}))
        for _ in range(6):
            list(coll.find({"status": "pending"}))
        for _ in range(2):
            list(coll.aggregate([{"$match": {"orderDate": {"$gte": BASE_DATE}}},
                                 {"$group": {"_id": "$region", "revenue": {"$sum": "$total"}}}]))
    return {(cmd, shape): count * scale for cmd, shape, count, _ in PROFILE}


# ---------------------------------------------------------------- admin HTTP

def wait_for(predicate, timeout: float = 15.0, interval: float = 0.1) -> bool:
    """Polls `predicate` until it holds (True) or `timeout` seconds pass (False); checked once more at the end."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)


def http_request(url: str, method: str = "GET", path: str = "/", token: str | None = None,
                 body: bytes | None = None, headers: dict | None = None, timeout: float = 10.0):
    """Returns (status, headers dict (lower-case names), body bytes)."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    h = dict(headers or {})
    if token:
        h["Authorization"] = f"Bearer {token}"
    try:
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def get_stats(admin_url: str, token: str | None = None) -> dict:
    status, _, body = http_request(admin_url, path="/stats", token=token)
    assert status == 200, body
    return json.loads(body)


def find_shape(stats: dict, command: str, shape: str, ns: str = NS) -> dict | None:
    for s in stats["shapes"]:
        if s["ns"] == ns and s["command"] == command and s["shape"] == shape:
            return s
    return None


def raw_exchange(host: str, port: int, data: bytes, timeout: float = 5.0) -> bytes:
    """Sends raw bytes and returns whatever comes back before the server closes (or timeout)."""
    out = b""
    with socket.create_connection((host, port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        except (socket.timeout, ConnectionResetError):
            pass
    return out


# ---------------------------------------------------------------- Prometheus

class PrometheusServer:
    """/usr/bin/prometheus on loopback scraping one target every second."""

    def __init__(self, workdir: Path, target: str, token_file: Path | None = None):
        self.workdir = Path(workdir)
        self.port = harness.free_port()
        self.target = target
        self.token_file = token_file
        self.process: ManagedProcess | None = None

    def start(self) -> "PrometheusServer":
        binary = shutil.which("prometheus") or "/usr/bin/prometheus"
        self.workdir.mkdir(parents=True, exist_ok=True)
        auth = ""
        if self.token_file:
            auth = f"    authorization:\n      type: Bearer\n      credentials_file: {self.token_file}\n"
        (self.workdir / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n  - job_name: shardscope\n    metrics_path: /metrics\n" + auth +
            f"    static_configs:\n      - targets: ['{self.target}']\n")
        self.process = ManagedProcess("prometheus", [
            binary, f"--config.file={self.workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={self.workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--log.level=warn"], self.workdir).start()
        self.process.wait_port(self.port, 30)
        deadline = time.monotonic() + 30
        while http_request(f"http://127.0.0.1:{self.port}", path="/-/ready")[0] != 200:  # TSDB opening
            assert time.monotonic() < deadline, self.process.stderr_text()[-2000:]
            time.sleep(0.2)
        return self

    def query(self, expr: str) -> list:
        q = urllib.parse.urlencode({"query": expr})
        status, _, body = http_request(f"http://127.0.0.1:{self.port}", path=f"/api/v1/query?{q}")
        assert status == 200, body
        doc = json.loads(body)
        assert doc["status"] == "success", doc
        return doc["data"]["result"]

    def wait_value(self, expr: str, expected: float, timeout: float = 40.0) -> float | None:
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            result = self.query(expr)
            if result:
                last = float(result[0]["value"][1])
                if last == expected:
                    return last
            time.sleep(0.5)
        return last

    def target_health(self) -> list:
        status, _, body = http_request(f"http://127.0.0.1:{self.port}", path="/api/v1/targets")
        return json.loads(body)["data"]["activeTargets"]

    def stop(self) -> None:
        if self.process:
            self.process.stop(timeout=10)


# ---------------------------------------------------------------- Chromium

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium_binary() -> str | None:
    return shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


def chromium(url: str, *args: str, timeout: float = 90.0) -> subprocess.CompletedProcess:
    profile = tempfile.mkdtemp(prefix="shardscope-chromium-")
    try:
        return subprocess.run([chromium_binary(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, url],
                              capture_output=True, text=True, timeout=timeout)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def dump_dom(url: str) -> str:
    r = chromium(url, "--virtual-time-budget=5000", "--dump-dom")
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def screenshot(url: str, path: Path, size: str = "1400,1000") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    r = chromium(url, "--virtual-time-budget=5000", f"--screenshot={path}", f"--window-size={size}")
    assert r.returncode == 0 and path.exists(), r.stderr[-2000:]


# ---------------------------------------------------------------- canned admin endpoint

@pytest.fixture
def canned_stats():
    """A stand-in admin endpoint for CLI tests: (docs, url). Each GET answers with the next document
    appended to `docs`; the last one repeats."""
    docs: list = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = json.dumps(docs.pop(0) if len(docs) > 1 else docs[0]).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield docs, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
