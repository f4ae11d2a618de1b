"""One crafted message must not stall other clients (issue 14): while a raw client sends frames
that used to cost seconds of proxy CPU on the single event-loop thread (60,000 kind-1 sections,
a $or of 50,000 shard-key equalities), a pymongo ping on another connection keeps answering. Before the fix the pings waited 2-8 s (sections) and over 60 s ($or).
Each test compares the pings' waits with a control run in the same test (a frame of the same size
that nothing analyses: tests/support/latency.py), never with an absolute time.
bench/hostile_inputs.py measures the same cases in detail (docs/hardening.md)."""
from __future__ import annotations

import json
import socket
import struct
import urllib.request
from pathlib import Path

import bson
import pymongo
import pytest
from bson.son import SON
from latency import assert_action_does_not_stall

pytestmark = pytest.mark.needs_proxy

OP_MSG = 2013
ROUTING = Path(__file__).resolve().parents[1] / "data" / "routing" / "orders_6shards.json"


def _op_msg(body: bytes, seqs=()) -> bytes:
    parts = [struct.pack("<I", 0), b"\x00", body]
    for ident, docs in seqs:
        payload = ident + b"\x00" + docs
        parts.append(b"\x01" + struct.pack("<i", 4 + len(payload)) + payload)
    payload = b"".join(parts)
    return struct.pack("<iiii", 16 + len(payload), 1, 0, OP_MSG) + payload


def _section_flood() -> bytes:
    return _op_msg(bson.encode(SON([("ping", 1), ("$db", "admin")])), [(b"s%d" % i, b"") for i in range(60_000)])


def _wide_or() -> bytes:
    # batchSize -1 makes the server refuse it at once: only the proxy's analysis costs anything.
    filt = {"$or": [{"customerId": "C%06d" % i} for i in range(50_000)]}
    return _op_msg(bson.encode(SON([("find", "orders"), ("filter", filt), ("batchSize", -1), ("$db", "shop")])))


def _send(port: int, frame: bytes) -> None:
    """Sends the frame and waits for the reply or the close (the proxy refuses some of them)."""
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        s.sendall(frame)
        try:
            s.recv(16)
        except OSError:
            pass


def _control_like(frame: bytes) -> bytes:
    """A frame of the same size that nothing analyses: a ping carrying one long comment string."""
    body = bson.encode(SON([("ping", 1), ("comment", ""), ("$db", "admin")]))
    pad = len(frame) - len(_op_msg(body))
    return _op_msg(bson.encode(SON([("ping", 1), ("comment", "x" * max(0, pad)), ("$db", "admin")])))


def _assert_frame_does_not_stall(px, frame: bytes, what: str, sends: int = 3) -> None:
    """`sends` sends of `frame` against as long a run of same-size frames that nothing analyses."""
    control = _control_like(frame)
    assert_action_does_not_stall(px.uri, lambda: [_send(px.port, frame) for _ in range(sends)],
                                 lambda: _send(px.port, control), what)


@pytest.mark.parametrize("make", [_section_flood, _wide_or], ids=["sections", "wide_or"])
def test_crafted_frame_does_not_stall_other_clients(ferretdb, proxy, make):
    px = proxy(ferretdb.uri, "--routing", str(ROUTING), "--threads", "1")
    # The stall before the fix was 2 s to over a minute.
    _assert_frame_does_not_stall(px, make(), "three crafted frames")
    assert px.alive()


def _empty_documents() -> bytes:
    # 2,000,000 empty documents as a kind-1 sequence (10 MB, under max_message_size 48,000,000),
    # after an {_id: 1} that the test inserts first: ordered, so the server stops at that duplicate
    # instead of inserting 2,000,000 documents per send (minutes of FerretDB's time); the proxy
    # observes them all.
    return _op_msg(bson.encode(SON([("insert", "hostile_empty"), ("$db", "shop")])),
                   [(b"documents", bson.encode({"_id": 1}) + b"\x05\x00\x00\x00\x00" * 2_000_000)])


def _tiny_documents() -> bytes:
    # 1,000,000 copies of {_id: 1} (14 MB): ordered, so the server stops at the second; the proxy observes all.
    return _op_msg(bson.encode(SON([("insert", "hostile_tiny"), ("$db", "shop")])),
                   [(b"documents", bson.encode({"_id": 1}) * 1_000_000)])


@pytest.mark.parametrize("make", [_empty_documents, _tiny_documents], ids=["empty_docs", "tiny_docs"])
def test_huge_insert_is_evaluated_off_the_event_loop(ferretdb, proxy, make):
    """The shard-key evaluation of one valid huge insert must not hold the event loop: before the
    evaluation worker, the observer applied every document on the session's thread and a ping on
    another connection waited 0.6-0.9 s (2,000,000 empty documents) and 0.56 s (1,000,000 tiny ones)."""
    px = proxy(ferretdb.uri, "--routing", str(ROUTING), "--threads", "1", admin=True)
    with pymongo.MongoClient(ferretdb.uri) as direct:
        direct.shop.hostile_empty.insert_one({"_id": 1})
    # The stall before the worker was 0.56-0.93 s.
    # One send: the upstream takes most of a minute to decode three of them on a busy machine.
    _assert_frame_does_not_stall(px, make(), "a huge insert", sends=1)
    # The proxy still evaluated what it observed (capped per request) and says what it skipped.
    with urllib.request.urlopen(px.admin_url + "/evaluate", timeout=30) as r:
        evaluation = json.load(r)
    assert evaluation["truncatedRequests"] >= 1
    assert "droppedEvents" in evaluation
