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


def samples(admin_url: str, name: str) -> dict[str, float]:
    """Every sample of a family: label text (without braces, "" when none) -> value."""
    out = {}
    for line in http(admin_url + "/metrics")[1].splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            key, value = line.rsplit(" ", 1)
            out[key[len(name):].strip("{}")] = float(value)
    return out


def test_traffic_counters_move_with_their_events(ferretdb, proxy, workdir):
    """The per-operation families and the capture and rewrite counters, each made to move by its
    event: bytes both ways, replies and reply errors (a duplicate key), the `other` bucket (a shape
    past the cap), a lookup rewrite and its fallback (a mapping made stale behind the sidecar's back),
    and capture records, bytes and size-limit drops."""
    from harness import REPO_ROOT

    routing = str(REPO_ROOT / "tests" / "data" / "routing" / "orders_6shards.json")
    # One document per orderId (the rule's default assumption): find_one by orderId is rewritten.
    px = proxy(ferretdb.uri, "--routing", routing, "--rewrite-rule", "shop.orders: orderId -> customerId",
               "--stats.max_shapes_per_namespace", "3", "--capture.file", str(workdir / "capture.bin"),
               "--capture.max_bytes", "4000", admin=True)
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=10000) as client:
        orders = client.shop.orders
        orders.insert_many([{"_id": i, "orderId": "O%d" % i, "customerId": "C%04d" % (100 + i)} for i in range(20)])
        with pytest.raises(pymongo.errors.DuplicateKeyError):
            orders.insert_one({"_id": 1, "orderId": "O1", "customerId": "C0101"})
        assert orders.find_one({"orderId": "O7"})["customerId"] == "C0107"  # rewritten: single shard
        with pymongo.MongoClient(ferretdb.uri) as direct:
            direct.shop.orders.update_one({"orderId": "O7"}, {"$set": {"customerId": "C8888"}})
        assert orders.find_one({"orderId": "O7"})["customerId"] == "C8888"  # stale mapping: falls back
        for field in ("a", "b", "c", "d", "e"):  # shapes past the cap of 3 go to `other`
            orders.find_one({field: 1})
    ns = 'ns="shop.orders"'
    assert samples(px.admin_url, "shardscope_received_bytes_total")[f'{ns},command="insert"'] > 0
    assert samples(px.admin_url, "shardscope_sent_bytes_total")[f'{ns},command="insert"'] > 0
    assert metric(px.admin_url, "shardscope_replies_total") >= 10
    errors = samples(px.admin_url, "shardscope_op_errors_total")
    assert errors[f'{ns},command="insert",code="11000"'] == 1, errors
    assert metric(px.admin_url, "shardscope_reply_errors_total") == sum(errors.values()), errors
    assert samples(px.admin_url, "shardscope_targeting_ops_total")['targeting="single"'] >= 3
    assert samples(px.admin_url, "shardscope_hosts_targeted_total")['hosts="oneShard"'] >= 3
    assert metric(px.admin_url, "shardscope_stats_other_ops_total") >= 1
    assert samples(px.admin_url, "shardscope_rewrites_total")[f'{ns},before="broadcast"'] == 2
    assert samples(px.admin_url, "shardscope_rewrite_fallbacks_total")[f'{ns},cause="empty_read"'] == 1
    assert metric(px.admin_url, "shardscope_capture_records_total") >= 1
    assert 0 < metric(px.admin_url, "shardscope_capture_bytes_total") <= 4000
    assert samples(px.admin_url, "shardscope_capture_dropped_total")['reason="size_limit"'] >= 1


# Every counter declared in stats/metrics.h -> the test that makes its event happen and checks it.
COUNTER_TESTS = {
    "shardscope_routing_refreshes_total": "tests/integration/test_routing_freshness.py::test_migration_is_read_incrementally",
    "shardscope_routing_refresh_failures_total": "tests/integration/test_routing_freshness.py::test_readyz_names_the_discovery_failure",
    "shardscope_evaluation_publish_total": "tests/integration/test_evaluation_fleet.py::test_fleet_from_collection_merges_live_sidecars",
    "shardscope_ops_total": "tests/integration/test_stats_prometheus.py::test_prometheus_scrapes_expected_counts",
    "shardscope_hosts_targeted_ops_total": "tests/integration/test_hosts_targeted.py::test_counts_and_targeted_share_agree_everywhere",
    "shardscope_op_errors_total": "tests/integration/test_process_counters.py::test_traffic_counters_move_with_their_events",
    "shardscope_received_bytes_total": "tests/integration/test_process_counters.py::test_traffic_counters_move_with_their_events",
    "shardscope_sent_bytes_total": "tests/integration/test_process_counters.py::test_traffic_counters_move_with_their_events",
    "shardscope_shape_ops_total": "tests/integration/test_stats_prometheus.py::test_prometheus_scrapes_expected_counts",
    "shardscope_untargetable_upserts_total": "tests/integration/test_stats_shards_upserts_config.py::test_untargetable_upserts_counted_per_shape_in_stats_and_metrics",
    "shardscope_shard_ops_total": "tests/integration/test_stats_shards_upserts_config.py::test_reload_keeps_each_shards_counts_under_its_name",
    "shardscope_namespace_shard_ops_total": "tests/integration/test_surfaces_agree.py::test_every_surface_shows_the_same_figures",
    "shardscope_targeting_ops_total": "tests/integration/test_process_counters.py::test_traffic_counters_move_with_their_events",
    "shardscope_hosts_targeted_total": "tests/integration/test_process_counters.py::test_traffic_counters_move_with_their_events",
    "shardscope_replies_total": "tests/integration/test_process_counters.py::test_traffic_counters_move_with_their_events",
    "shardscope_reply_errors_total": "tests/integration/test_process_counters.py::test_traffic_counters_move_with_their_events",
    "shardscope_stats_other_ops_total": "tests/integration/test_process_counters.py::test_traffic_counters_move_with_their_events",
    "shardscope_stats_other_namespace_ops_total": "tests/integration/test_namespace_squatting.py::test_made_up_namespaces_cannot_push_the_sharded_collection_out",
    "shardscope_rewrites_total": "tests/integration/test_process_counters.py::test_traffic_counters_move_with_their_events",
    "shardscope_rewrite_fallbacks_total": "tests/integration/test_process_counters.py::test_traffic_counters_move_with_their_events",
    "shardscope_mirror_requests_total": "tests/integration/test_mirror_divergence.py::test_divergence_detected_and_counted_per_shape",
    "shardscope_mirror_comparisons_total": "tests/integration/test_mirror_divergence.py::test_divergence_detected_and_counted_per_shape",
    "shardscope_mirror_divergent_total": "tests/integration/test_mirror_divergence.py::test_divergence_detected_and_counted_per_shape",
    "shardscope_mirror_divergences_total": "tests/integration/test_mirror_divergence.py::test_divergence_detected_and_counted_per_shape",
    "shardscope_mirror_shape_divergences_total": "tests/integration/test_mirror_divergence.py::test_divergence_detected_and_counted_per_shape",
    "shardscope_mirror_shape_compared_total": "tests/integration/test_mirror_divergence.py::test_divergence_detected_and_counted_per_shape",
    "shardscope_faults_injected_total": "tests/integration/test_reload_and_faults.py::test_fault_injection_fails_and_delays_a_share_of_operations",
    "shardscope_capture_records_total": "tests/integration/test_process_counters.py::test_traffic_counters_move_with_their_events",
    "shardscope_capture_bytes_total": "tests/integration/test_process_counters.py::test_traffic_counters_move_with_their_events",
    "shardscope_capture_dropped_total": "tests/integration/test_process_counters.py::test_traffic_counters_move_with_their_events",
    "shardscope_connections_opened_total": "tests/integration/test_process_counters.py::test_connection_decode_and_unparsed_counters",
    "shardscope_connections_closed_total": "tests/integration/test_process_counters.py::test_connection_decode_and_unparsed_counters",
    "shardscope_connections_refused_total": "tests/integration/test_admin_hardening.py::test_max_connections_refusals_are_counted",
    "shardscope_decode_errors_total": "tests/integration/test_process_counters.py::test_connection_decode_and_unparsed_counters",
    "shardscope_unparsed_messages_total": "tests/integration/test_process_counters.py::test_connection_decode_and_unparsed_counters",
    "shardscope_pending_limit_refusals_total": "tests/integration/test_wire_edges.py::test_requests_past_the_in_flight_limit_get_an_error_reply",
    "shardscope_analysis_over_budget_total": "tests/stats/registry_test.cpp::Registry.OperationsOverTheAnalysisBudgetAreCounted",
    "shardscope_upstream_connect_failures_total": "tests/integration/test_process_counters.py::test_upstream_connect_failures",
    "shardscope_upstream_errors_total": "tests/integration/test_process_counters.py::test_upstream_errors_when_upstream_closes_mid_request",
    "shardscope_evaluation_dropped_events_total": "tests/evaluation/apply_queue_test.cpp::ApplyQueue.DropsAndCountsWhenFullWithoutWaiting",
    "shardscope_mirror_dropped_total": "tests/integration/test_process_counters.py::test_mirror_dropped_matches_the_mirror_page",
    "shardscope_admin_requests_total": "tests/integration/test_process_counters.py::test_admin_requests_and_rejections",
    "shardscope_admin_rejected_total": "tests/integration/test_process_counters.py::test_admin_requests_and_rejections",
    "shardscope_admin_connections_replaced_total": "tests/integration/test_admin_hardening.py::test_probes_answer_while_admin_connections_are_held_half_open",
    "process_cpu_seconds_total": "tests/integration/test_hosts_targeted.py::test_metrics_are_promtool_clean_with_process_metrics",
}


def declared_counters() -> set[str]:
    """Counter names exported by the rows of stats/metrics.h (the one declaration of every metric)."""
    import re

    from harness import REPO_ROOT

    text = (REPO_ROOT / "stats" / "metrics.h").read_text()

    def rows(macro: str) -> str:
        start = text.index("#define " + macro)
        return text[start:text.index("\n\n", start)]

    names = {"shardscope_" + m for m in re.findall(r"\bCOUNTER\((\w+),", rows("SHARDSCOPE_METRICS("))}
    names |= {f"shardscope_{m}_total" for m in re.findall(r"\bCOUNTER\((\w+),", rows("SHARDSCOPE_PROCESS_COUNTERS("))}
    names |= set(re.findall(r"\bCOUNTER\((\w+),", rows("SHARDSCOPE_STANDARD_PROCESS_METRICS(")))
    return names


def test_every_declared_counter_has_a_test_that_makes_its_event_happen():
    import re

    from harness import REPO_ROOT

    declared = declared_counters()
    assert len(declared) > 30
    assert declared == set(COUNTER_TESTS), (declared - set(COUNTER_TESTS), set(COUNTER_TESTS) - declared)
    for name, ref in COUNTER_TESTS.items():
        path, test = ref.split("::")
        source = (REPO_ROOT / path).read_text()
        if path.endswith(".py"):
            assert re.search(rf"^def {test}\(", source, re.M), f"{name}: {ref} does not exist"
        else:
            suite, case = test.split(".")
            assert re.search(rf"TEST(_F)?\({suite}, {case}\)", source), f"{name}: {ref} does not exist"
