"""Routing freshness like mongos's catalog cache (issue 17 items 3-4).

A scripted mongos stand-in (tests/support/mongos_standin.py: no MongoDB server is obtainable here)
serves real 4.4 and 5.0+ catalog documents and changes them as the balancer and DDL do. Before
this work, discovery re-read every chunk document every interval, ignored a StaleConfig inside
writeErrors, waited the whole interval after a failed first read, and showed its state nowhere.
"""
from __future__ import annotations

import json
import time

import pymongo
import pytest

from mongos_standin import MongosStandIn
from stats_helpers import http_request, wait_for


@pytest.fixture
def standin():
    started = []

    def make(**kw) -> MongosStandIn:
        s = MongosStandIn(**kw).start()
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()


def _discovery(px) -> dict:
    status, _, body = http_request(px.admin_url, path="/stats")
    assert status == 200
    return json.loads(body).get("discovery") or {}


def _version(px, ns) -> str:
    return (_discovery(px).get("versions") or {}).get(ns, "")


def _readyz(px) -> tuple[int, str]:
    status, _, body = http_request(px.admin_url, path="/readyz")
    return status, body.decode()


@pytest.mark.needs_proxy
@pytest.mark.parametrize("catalog", ["4.4", "5.0"])
def test_migration_is_read_incrementally(standin, proxy, catalog):
    s = standin(catalog=catalog)
    s.shard_collection("shop.orders", "k", [10, 20, 30], ["shardA", "shardB"])
    s.shard_collection("shop.users", "u", list(range(1, 50)), ["shardA", "shardB", "shardC"])  # 50 chunks
    run_started = time.time()
    px = proxy(s.uri, "--routing.discovery", "true", "--routing.discovery_interval_s", "1", admin=True)
    assert wait_for(lambda: _version(px, "shop.orders").startswith("1|3||")), _discovery(px)
    first = s.chunk_documents_returned
    assert first == 54  # the first read is whole: 4 + 50 chunks

    s.migrate("shop.orders", 20, "shardC")  # [20, 30) moves; the donor's [MinKey, 10) is bumped
    queries = len(s.chunk_filters)
    assert wait_for(lambda: len(s.chunk_filters) >= queries + 3)  # three more refreshes of config.chunks
    assert _version(px, "shop.orders").startswith("2|1||"), _discovery(px)
    # Only the two changed chunk documents were read after the first read, however many
    # refreshes ran (before: all 54 every second).
    assert s.chunk_documents_returned - first == 2, s.chunk_filters[-3:]
    d = _discovery(px)
    assert d["chunks"] == 54 and d["collections"] == 2 and d["lastError"] is None, d
    assert d["lastRefresh"]["kind"] == "incremental" and d["lastRefresh"]["chunkDocumentsRead"] == 0, d
    # The next read asks for versions above the one known, per collection.
    assert any("$or" in f for f in s.chunk_filters[1:])
    status, _, body = http_request(px.admin_url, path="/metrics")
    text = body.decode()
    for name in ("shardscope_routing_refreshes_total", "shardscope_routing_refresh_failures_total 0",
                 "shardscope_routing_last_refresh_success_timestamp_seconds", "shardscope_routing_chunks 54"):
        assert name in text, name
    ts = [float(l.split()[1]) for l in text.splitlines()
          if l.startswith("shardscope_routing_last_refresh_success_timestamp_seconds ")][0]
    assert int(run_started) <= ts <= time.time(), (run_started, ts)  # a refresh of this run, stamped in seconds


@pytest.mark.needs_proxy
@pytest.mark.parametrize("where", ["writeErrors", "top"])
def test_stale_config_in_a_reply_refreshes_that_namespace_at_once(standin, proxy, where):
    s = standin()
    s.shard_collection("shop.orders", "k", [10, 20], ["shardA", "shardB"])
    s.shard_collection("shop.other", "o", [5], ["shardA", "shardB"])
    px = proxy(s.uri, "--routing.discovery", "true", "--routing.discovery_interval_s", "600", admin=True)
    assert wait_for(lambda: _version(px, "shop.orders").startswith("1|2||")), _discovery(px)
    s.migrate("shop.orders", 10, "shardC")
    s.stale_on_next_write(where)
    queries = len(s.chunk_filters)
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=5000, retryWrites=False) as c:
        with pytest.raises((pymongo.errors.BulkWriteError, pymongo.errors.OperationFailure)):
            c.shop.orders.insert_one({"_id": 1, "k": 15})
    # Well before the 600 s interval: the namespace the error names is re-read at once (before:
    # a StaleConfig inside writeErrors was not looked at).
    assert wait_for(lambda: len(s.chunk_filters) > queries, timeout=600 / 10)
    assert wait_for(lambda: _version(px, "shop.orders").startswith("2|"), timeout=600 / 10), _discovery(px)
    d = _discovery(px)
    assert d["staleRequests"] >= 1 and d["lastRefresh"]["kind"] == "namespaces", d
    # Only that namespace was read: the last chunk query names shop.orders' collection alone.
    assert len(s.chunk_filters[-1]["$or"]) == 1, s.chunk_filters[-1]


@pytest.mark.needs_proxy
@pytest.mark.parametrize("catalog", ["4.4", "5.0"])
def test_drop_and_recreate_replaces_the_old_chunks(standin, proxy, catalog):
    s = standin(catalog=catalog)
    s.shard_collection("shop.orders", "k", [10, 20, 30], ["shardA", "shardB"])
    px = proxy(s.uri, "--routing.discovery", "true", "--routing.discovery_interval_s", "1", admin=True)
    assert wait_for(lambda: _version(px, "shop.orders").startswith("1|3||")), _discovery(px)
    old = _version(px, "shop.orders")
    # Re-created with one chunk: its version 1|0 is BELOW the old 1|3, so a read of "versions
    # above the known one" would find nothing; the new epoch/uuid/timestamp forces a full read.
    s.drop_and_recreate("shop.orders", "k", [], ["shardC"])
    assert wait_for(lambda: _version(px, "shop.orders").startswith("1|0||")), _discovery(px)
    assert _version(px, "shop.orders") != old
    d = _discovery(px)
    assert d["chunks"] == 1, d


@pytest.mark.needs_proxy
def test_startup_with_the_config_server_failing_twice_is_ready_within_seconds(standin, proxy):
    s = standin()
    s.shard_collection("shop.orders", "k", [10], ["shardA", "shardB"])
    s.fail_config_reads(2)
    px = proxy(s.uri, "--routing.discovery", "true", "--routing.discovery_interval_s", "120", admin=True)
    # Retries after 0.5 s then 1 s (before: not ready until the 120 s interval had passed).
    assert wait_for(lambda: _readyz(px)[0] == 200, timeout=120 / 4), _readyz(px)
    status, body = _readyz(px)
    assert "routing discovery: 1 collections, 2 chunks" in body, body
    d = _discovery(px)
    assert d["failures"] == 2 and d["consecutiveFailures"] == 0, d
    assert "config server unavailable" in px.stderr_text()


@pytest.mark.needs_proxy
def test_readyz_names_the_discovery_failure(standin, proxy):
    s = standin()
    s.shard_collection("shop.orders", "k", [10], ["shardA", "shardB"])
    s.fail_config_reads(10_000)
    px = proxy(s.uri, "--routing.discovery", "true", "--routing.discovery_interval_s", "60", admin=True)
    assert wait_for(lambda: "failure(s) in a row" in _readyz(px)[1]), _readyz(px)
    status, body = _readyz(px)
    assert status == 503 and "no routing table yet" in body and "config server unavailable" in body, body
    assert _discovery(px)["lastError"]
    _, _, metrics = http_request(px.admin_url, path="/metrics")
    failures = [float(l.split()[1]) for l in metrics.decode().splitlines()
                if l.startswith("shardscope_routing_refresh_failures_total ")]
    assert failures and failures[0] >= 1, failures


@pytest.mark.needs_proxy
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-1"])
def test_discovery_authenticates_to_the_standin_and_readyz_names_the_refusal(standin, proxy, workdir, mechanism):
    s = standin(users={"shardscope-svc": "Standin-Pw-7q"})
    s.shard_collection("shop.orders", "k", [10, 20], ["shardA", "shardB"])
    discovery = ["--routing.discovery", "true", "--routing.discovery_interval_s", "60"]
    without = proxy(s.uri, *discovery, admin=True)
    assert wait_for(lambda: "requires authentication" in _readyz(without)[1]), _readyz(without)
    assert _readyz(without)[0] == 503

    password = workdir / "pw"
    password.write_text("Standin-Pw-7q\n")
    with_auth = proxy(s.uri, *discovery, "--cluster_auth.username", "shardscope-svc", "--cluster_auth.password_file",
                      str(password), "--cluster_auth.mechanism", mechanism, admin=True)
    assert wait_for(lambda: _readyz(with_auth)[0] == 200), _readyz(with_auth)
    assert "routing discovery: 1 collections, 3 chunks" in _readyz(with_auth)[1]
    assert s.authenticated_connections >= 1
    # The connection is kept between refreshes: a StaleConfig-driven read does not log in again.
    logins = s.authenticated_connections
    s.migrate("shop.orders", 10, "shardB")
    s.stale_on_next_write()
    app = f"mongodb://shardscope-svc:Standin-Pw-7q@{with_auth.address}/?authSource=admin"  # pass-through auth
    with pymongo.MongoClient(app, serverSelectionTimeoutMS=5000, retryWrites=False) as c:
        with pytest.raises(pymongo.errors.WriteError):
            c.shop.orders.insert_one({"_id": 1, "k": 15})
    assert wait_for(lambda: _version(with_auth, "shop.orders").startswith("2|"), timeout=5), _discovery(with_auth)
    assert s.authenticated_connections == logins + 1  # the application's own login, not discovery's


@pytest.mark.needs_proxy
def test_stale_config_on_a_time_series_view_refreshes_its_buckets_collection(standin, proxy):
    s = standin()
    s.shard_collection("metrics.system.buckets.cpu", "meta", ["h5"], ["shardA", "shardB"],
                       extra={"timeseriesFields": {"timeField": "t", "metaField": "host", "granularity": "seconds"}})
    px = proxy(s.uri, "--routing.discovery", "true", "--routing.discovery_interval_s", "600", admin=True)
    assert wait_for(lambda: _version(px, "metrics.system.buckets.cpu").startswith("1|1||")), _discovery(px)
    s.migrate("metrics.system.buckets.cpu", "h5", "shardC")
    s.stale_on_next_write()  # names the view, metrics.cpu, as mongos does for a write to it
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=5000, retryWrites=False) as c:
        with pytest.raises(pymongo.errors.WriteError):
            c.metrics.cpu.insert_one({"t": 1, "host": "h7"})
    assert wait_for(lambda: _version(px, "metrics.system.buckets.cpu").startswith("2|"), timeout=5), _discovery(px)


@pytest.mark.needs_proxy
def test_a_torn_incremental_read_is_repeated_whole(standin, proxy):
    s = standin()
    s.shard_collection("shop.orders", "k", [10, 20], ["shardA", "shardB"])
    px = proxy(s.uri, "--routing.discovery", "true", "--routing.discovery_interval_s", "1", admin=True)
    assert wait_for(lambda: _version(px, "shop.orders").startswith("1|2||")), _discovery(px)
    s.tear_next_chunk_read()
    s.split("shop.orders", 25)  # [20, MaxKey) -> [20, 25) 1|3 and [25, MaxKey) 1|4; the read loses 1|4
    assert wait_for(lambda: _version(px, "shop.orders").startswith("1|4||")), _discovery(px)
    d = _discovery(px)
    assert d["chunks"] == 4 and d["failures"] == 0, d
    # The gap ([25, MaxKey) uncovered) was seen and the collection read whole in the same refresh.
    assert "reading the collection whole" in px.stderr_text()
