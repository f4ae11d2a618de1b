"""Every process counter (stats/process_counters.h) moves with its event: each test makes the event
happen and reads the counter from /stats and /metrics (issue 14 item 17, issue 15 item 6)."""
from __future__ import annotations

import json
import struct
import time
import urllib.error
import urllib.request

import bson
import pymongo
import pytest

from harness import free_port
from mirror_helpers import mirror_args, wait_mirror
from wire_peer import OP_INSERT, RawClient, header, next_request_id

pytestmark = pytest.mark.needs_proxy


def http(url: str, method: str = "GET") -> tuple[int, str]:
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def counters(admin_url: str) -> dict:
    return json.loads(http(admin_url + "/stats")[1])["process"]


def metric(admin_url: str, name: str) -> float:
    for line in http(admin_url + "/metrics")[1].splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def wait_counter(admin_url: str, key: str, at_least: int, timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    while True:
        value = counters(admin_url)[key]
        if value >= at_least or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def test_upstream_connect_failures(proxy):
    # Nothing listens there. The harness's own port check is a client too, hence "at least".
    px = proxy(f"mongodb://127.0.0.1:{free_port()}/", "--timeouts.connect_ms", "500", admin=True)
    for _ in range(3):
        assert RawClient.for_address(px.address).closed_by_peer(timeout=10)
    failures = wait_counter(px.admin_url, "upstreamConnectFailures", 4)
    assert failures >= 3
    assert metric(px.admin_url, "shardscope_upstream_connect_failures_total") == failures
    assert counters(px.admin_url)["upstreamErrors"] == 0


def test_upstream_errors_when_upstream_closes_mid_request(proxy, wire_peer):
    peer = wire_peer()
    px = proxy(peer.uri, admin=True)
    client = RawClient.for_address(px.address)
    client.hello()
    peer.add_fault("close", command="ping")
    with pytest.raises((ConnectionError, OSError)):
        client.command({"ping": 1})
    assert wait_counter(px.admin_url, "upstreamErrors", 1) == 1
    assert metric(px.admin_url, "shardscope_upstream_errors_total") == 1
    # A client that leaves on its own is not an upstream error.
    other = RawClient.for_address(px.address)
    other.hello()
    other.sock.close()
    time.sleep(0.3)
    assert counters(px.admin_url)["upstreamErrors"] == 1
    assert counters(px.admin_url)["upstreamConnectFailures"] == 0


def test_mirror_dropped_matches_the_mirror_page(ferretdb, proxy, wire_peer):
    pymongo.MongoClient(ferretdb.uri).shop.orders.insert_many([{"_id": i} for i in range(10)])
    shadow = wire_peer()
    shadow.add_fault("stop_reading", command="find", count=1000)  # a stalled shadow
    px = proxy(ferretdb.uri, *mirror_args(shadow.uri, queue_size=5, timeout_ms=60000), admin=True)
    c = pymongo.MongoClient(px.uri)
    for i in range(60):
        c.shop.orders.find_one({"_id": i % 10})
    c.close()
    m = wait_mirror(px.admin_url, lambda m: m["counters"]["droppedQueueFull"] >= 40)
    dropped = m["counters"]["droppedQueueFull"]
    assert counters(px.admin_url)["mirrorDropped"] == dropped
    assert metric(px.admin_url, "shardscope_mirror_dropped_total") == dropped


def test_admin_requests_and_rejections(proxy, workdir):
    token = workdir / "token"
    token.write_text("tok\n")
    px = proxy(f"mongodb://127.0.0.1:{free_port()}/", "--admin-token-file", str(token), admin=True)
    before = json.loads(urllib.request.urlopen(urllib.request.Request(
        px.admin_url + "/stats", headers={"Authorization": "Bearer tok"}), timeout=10).read())["process"]
    assert http(px.admin_url + "/healthz")[0] == 200
    assert http(px.admin_url + "/stats")[0] == 401
    assert http(px.admin_url + "/nope")[0] == 401
    after = json.loads(urllib.request.urlopen(urllib.request.Request(
        px.admin_url + "/stats", headers={"Authorization": "Bearer tok"}), timeout=10).read())["process"]
    assert after["adminRequests"] - before["adminRequests"] == 4  # three above and this /stats
    assert after["adminRejected"] - before["adminRejected"] == 2


def test_connection_decode_and_unparsed_counters(proxy, wire_peer):
    peer = wire_peer()
    px = proxy(peer.uri, admin=True)
    deadline = time.monotonic() + 5  # the harness's own port check (one client) must have come and gone
    while time.monotonic() < deadline:
        base = counters(px.admin_url)
        if base["connectionsOpened"] >= 1 and base["connectionsActive"] == 0:
            break
        time.sleep(0.02)
    a, b = RawClient.for_address(px.address), RawClient.for_address(px.address)
    a.hello()
    b.hello()
    now = counters(px.admin_url)
    assert now["connectionsOpened"] - base["connectionsOpened"] == 2
    assert now["connectionsActive"] - base["connectionsActive"] == 2
    # Legacy OP_INSERT (removed in MongoDB 6.0) is refused like any malformed frame: that connection
    # closes with a decode error, nothing is forwarded unparsed, so unparsedMessages stays 0.
    body = struct.pack("<i", 0) + b"shop.orders\0" + bson.encode({"_id": 1})
    b.send(header(16 + len(body), next_request_id(), 0, OP_INSERT) + body)
    assert b.closed_by_peer(timeout=5)
    a.send(header(3, next_request_id(), 0, 2013))  # a length below the header's own 16 bytes
    assert a.closed_by_peer(timeout=5)
    deadline = time.monotonic() + 5
    while counters(px.admin_url)["connectionsActive"] != base["connectionsActive"] and time.monotonic() < deadline:
        time.sleep(0.05)
    end = counters(px.admin_url)
    assert end["decodeErrors"] - base["decodeErrors"] == 2
    assert end["unparsedMessages"] == base["unparsedMessages"]
    assert end["connectionsClosed"] - base["connectionsClosed"] == 2
    assert end["connectionsActive"] == base["connectionsActive"]
    assert metric(px.admin_url, "shardscope_decode_errors_total") == end["decodeErrors"]
