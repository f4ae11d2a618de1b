"""timeouts.request_ms: a deadline for upstream work, never for waits the client itself asked for.

A driver's monitor sits in an awaitable hello for maxAwaitTimeMS (10 s by default), a tailable
awaitData getMore, any command with maxTimeMS and a write with a wtimeout may legitimately take
that long, and an exhaust stream answers one request for as long as batches keep coming. Cutting
those short closes the connection under the driver, which then marks the server Unknown and
clears its pool.
"""
from __future__ import annotations

import time

import bson
import pytest

from wire_peer import FLAG_EXHAUST_ALLOWED, FLAG_MORE_TO_COME, RawClient, encode_op_msg

pytestmark = pytest.mark.needs_proxy

DEADLINE_MS = 1000


def _deadline_proxy(proxy, peer):
    return proxy(peer.uri, "--timeouts.request_ms", str(DEADLINE_MS))


def test_stalled_upstream_still_hits_the_deadline(wire_peer, proxy):
    # The control: with no wait declared, an upstream slower than the deadline closes the connection.
    peer = wire_peer()
    px = _deadline_proxy(proxy, peer)
    peer.add_fault("delay", "ping", seconds=DEADLINE_MS / 1000 * 4)
    with RawClient.for_address(px.address, timeout=15) as rc:
        rc.hello()
        rc.send(encode_op_msg({"ping": 1, "$db": "admin"}))
        started = time.monotonic()
        assert rc.recv_message(timeout=10) is None
        assert time.monotonic() - started < DEADLINE_MS / 1000 * 3


def test_awaitable_hello_longer_than_the_deadline_is_answered(wire_peer, proxy):
    peer = wire_peer()
    px = _deadline_proxy(proxy, peer)
    wait_ms = DEADLINE_MS * 5 // 2
    with RawClient.for_address(px.address, timeout=15) as monitor:
        monitor.hello()
        started = time.monotonic()
        reply = monitor.command({"hello": 1, "topologyVersion": {"processId": bson.ObjectId(), "counter": 0},
                                 "maxAwaitTimeMS": wait_ms})
        assert reply.reply_doc["ok"] == 1
        assert time.monotonic() - started >= wait_ms / 1000 * 0.9  # the peer really waited
        assert monitor.command({"ping": 1}).reply_doc["ok"] == 1  # and the connection lives on


def test_command_with_max_time_ms_longer_than_the_deadline_is_answered(wire_peer, proxy):
    peer = wire_peer()
    px = _deadline_proxy(proxy, peer)
    peer.add_fault("delay", "count", seconds=DEADLINE_MS / 1000 * 2)
    with RawClient.for_address(px.address, timeout=15) as rc:
        rc.hello()
        reply = rc.command({"count": "c", "maxTimeMS": DEADLINE_MS * 5}, db="d")
        assert reply.reply_doc["ok"] == 1


def test_write_with_wtimeout_longer_than_the_deadline_is_answered(wire_peer, proxy):
    # Waiting for replication up to wtimeout is the server doing what the write asked.
    peer = wire_peer()
    px = _deadline_proxy(proxy, peer)
    peer.add_fault("delay", "insert", seconds=DEADLINE_MS / 1000 * 2)
    with RawClient.for_address(px.address, timeout=15) as rc:
        rc.hello()
        reply = rc.command({"insert": "c", "documents": [{"_id": 1}],
                            "writeConcern": {"w": "majority", "wtimeout": DEADLINE_MS * 5}}, db="d")
        assert reply.reply_doc["ok"] == 1


def test_exhaust_stream_longer_than_the_deadline_is_relayed_whole(wire_peer, proxy):
    # Each batch comes well inside the deadline, the whole stream takes several deadlines.
    batches = 8
    peer = wire_peer(exhaust_pause=DEADLINE_MS / 1000 / 2.5)
    px = _deadline_proxy(proxy, peer)
    with RawClient.for_address(px.address, timeout=15) as rc:
        rc.hello()
        rc.command({"insert": "c", "documents": [{"_id": i} for i in range(batches * 2 + 2)]}, db="d")
        first = rc.command({"find": "c", "batchSize": 2}, db="d").reply_doc
        rc.send(encode_op_msg({"getMore": first["cursor"]["id"], "collection": "c", "batchSize": 2, "$db": "d"},
                              flags=FLAG_EXHAUST_ALLOWED))
        got = []
        while True:
            m = rc.recv_message(timeout=10)
            assert m is not None, f"connection closed after {len(got)} streamed batches"
            got += [d["_id"] for d in m.reply_doc["cursor"]["nextBatch"]]
            if not m.flag_bits & FLAG_MORE_TO_COME:
                break
        assert got == list(range(2, batches * 2 + 2))
        assert rc.command({"ping": 1}).reply_doc["ok"] == 1
