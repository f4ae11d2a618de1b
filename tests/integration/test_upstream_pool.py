"""The mongos pool (issue 14 item 8, issue 17 item 2): the proxy's own connections to the cluster.

A refused host or a failed certificate check fails at once with its real reason (not after
timeouts.connect_ms, logged as a timeout), a failed host is marked down and re-probed, and new
client connections spread over the healthy hosts in the latency window. FerretDB instances stand
in for mongos (each keeps its own data, which tells which host served a connection).
"""
from __future__ import annotations

import json
import socket
import time

import pymongo
import pytest

from harness import FerretDB, free_port, port_accepts
from stats_helpers import http_request


# Far longer than any test here waits: a failure that waited for the connect timeout shows as an
# operation taking a large share of it, whatever the machine's speed.
CONNECT_MS = 60_000


def _ping_seconds(uri: str) -> float:
    t0 = time.monotonic()
    with pymongo.MongoClient(uri, serverSelectionTimeoutMS=15000) as c:
        c.admin.command("ping")
    return time.monotonic() - t0


def _served_by(uri: str) -> str:
    """Which FerretDB answered a new client connection (each holds a different marker)."""
    with pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000, maxPoolSize=1) as c:
        return c.pool_test.marker.find_one({}, {"_id": 0})["host"]


def _mark(f: FerretDB, name: str) -> None:
    with pymongo.MongoClient(f.uri) as c:
        c.pool_test.marker.delete_many({})
        c.pool_test.marker.insert_one({"host": name})


def _upstreams(px) -> dict:
    status, _, body = http_request(px.admin_url, path="/stats")
    assert status == 200
    return {h["address"]: h for h in json.loads(body)["upstreams"]["hosts"]}


@pytest.mark.needs_proxy
def test_first_listed_host_refused_costs_a_new_client_nothing(ferretdb, proxy):
    closed = free_port()
    assert not port_accepts(closed)
    px = proxy(f"mongodb://127.0.0.1:{closed},{ferretdb.address}/", "--timeouts.connect_ms", str(CONNECT_MS), admin=True)
    # Before the pool: the refused connect waited timeouts.connect_ms per connection and a new
    # pymongo client took two of them to its first ping (monitor + application connection).
    took = _ping_seconds(px.uri)
    assert took < CONNECT_MS / 1000 / 10, f"first ping took {took:.2f} s: the refused host was waited on"
    log = px.stderr_text()
    assert f"127.0.0.1:{closed}" in log and "Connection refused" in log, log[-3000:]
    assert "timed out" not in log, log[-3000:]
    hosts = _upstreams(px)
    assert hosts[f"127.0.0.1:{closed}"]["state"] == "down"
    assert "Connection refused" in hosts[f"127.0.0.1:{closed}"]["lastError"]
    assert hosts[ferretdb.address]["state"] == "up"
    status, _, body = http_request(px.admin_url, path="/readyz")
    assert status == 200
    assert f"mongos up: {ferretdb.address}" in body.decode() and f"down: 127.0.0.1:{closed}" in body.decode(), body


@pytest.mark.needs_proxy
def test_untrusted_upstream_certificate_fails_fast_as_a_certificate_failure(ferretdb_factory, tls_material, proxy):
    m = tls_material
    fdb = ferretdb_factory(tls={"cert": m["server_cert"], "key": m["server_key"]})
    # No tlsCAFile: the test CA is not in the system store, so verification must fail.
    px = proxy(f"mongodb://127.0.0.1:{fdb.tls_port}/?tls=true", "--timeouts.connect_ms", str(CONNECT_MS))
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", px.port), timeout=10) as s:
        assert s.recv(1) == b""  # the proxy closes the client connection: no upstream
    took = time.monotonic() - t0
    assert took < CONNECT_MS / 1000 / 10, f"the failed handshake took {took:.2f} s (before: timeouts.connect_ms)"
    log = px.stderr_text()
    assert "certificate verify failed" in log, log[-3000:]
    assert "timed out" not in log, log[-3000:]


@pytest.mark.needs_proxy
def test_a_down_host_is_reprobed_and_used_again(workdir, ferretdb_factory, ferretdb_binary, proxy):
    b = ferretdb_factory()
    _mark(b, "B")
    late_port = free_port()
    px = proxy(f"mongodb://127.0.0.1:{late_port},{b.address}/", "--upstream_pool.backoff_max_ms", "500",
               admin=True)
    assert _served_by(px.uri) == "B"
    assert _upstreams(px)[f"127.0.0.1:{late_port}"]["state"] == "down"
    a = FerretDB(workdir / "late", binary=ferretdb_binary, port=late_port).start()
    try:
        _mark(a, "A")
        deadline = time.monotonic() + 10
        while _upstreams(px)[a.address]["state"] != "up":
            assert time.monotonic() < deadline, _upstreams(px)
            time.sleep(0.1)
        seen = {_served_by(px.uri) for _ in range(20)}
        assert seen == {"A", "B"}, seen
    finally:
        a.stop()


@pytest.mark.needs_proxy
def test_new_clients_spread_over_two_healthy_upstreams(ferretdb_factory, proxy):
    a, b = ferretdb_factory(), ferretdb_factory()
    _mark(a, "A")
    _mark(b, "B")
    px = proxy(f"mongodb://{a.address},{b.address}/", admin=True)
    served = [_served_by(px.uri) for _ in range(20)]
    # Before the pool every connection went to the first listed host. Random within the window:
    # fewer than 2 of 20 on one host happens once in ~50,000 runs.
    assert served.count("A") >= 2 and served.count("B") >= 2, served
