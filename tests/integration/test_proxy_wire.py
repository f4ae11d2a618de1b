"""Exact bytes the proxy sends upstream, observed by the scripted wire peer."""
from __future__ import annotations

import signal
import time

import bson
import pymongo
import pytest

from wire_peer import (FLAG_CHECKSUM_PRESENT, FLAG_MORE_TO_COME, OP_COMPRESSED, OP_MSG, OP_QUERY, OP_REPLY,
                       RawClient, encode_op_msg, encode_op_query)

pytestmark = pytest.mark.needs_proxy


def _frames_named(peer, name):
    return [f for f in peer.frames_snapshot() if (f.command_name or "").lower() == name.lower()]


def test_unknown_optional_flag_bits_are_cleared(wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri)
    with RawClient.for_address(px.address) as rc:
        rc.hello()
        r = rc.command({"ping": 1, "marker": "optional-bits"}, flags=(1 << 20) | (1 << 31) | (1 << 17))
        assert r.reply_doc["ok"] == 1
    f = peer.wait_for(lambda f: f.command_name == "ping" and (f.message.command or {}).get("marker") == "optional-bits")
    assert f is not None
    m = f.message.effective
    assert m.flag_bits & 0xFFFE0000 == 0, hex(m.flag_bits)
    if m.flag_bits & FLAG_CHECKSUM_PRESENT:
        assert m.checksum_ok


def test_checksum_forwarded_correctly(wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri)
    with RawClient.for_address(px.address) as rc:
        rc.hello()
        r = rc.command({"ping": 1, "marker": "checksum"}, checksum=True)
        assert r.reply_doc["ok"] == 1
        # A checksummed message whose optional bits must be cleared: the checksum must be redone or dropped.
        r = rc.command({"ping": 1, "marker": "checksum+bits"}, checksum=True, flags=1 << 24)
        assert r.reply_doc["ok"] == 1
        if r.effective.flag_bits & FLAG_CHECKSUM_PRESENT:
            assert r.effective.checksum_ok
    for marker in ("checksum", "checksum+bits"):
        f = peer.wait_for(lambda f: (f.message.command or {}).get("marker") == marker)
        assert f is not None, marker
        m = f.message.effective
        if m.flag_bits & FLAG_CHECKSUM_PRESENT:
            assert m.checksum_ok, marker
        assert m.flag_bits & (1 << 24) == 0
    # Every OP_MSG the proxy sent carries a correct checksum when it carries one at all.
    for f in peer.frames_snapshot():
        m = f.message.effective
        if m.opcode == OP_MSG and m.flag_bits & FLAG_CHECKSUM_PRESENT:
            assert m.checksum_ok, f.command_name
    assert not peer.errors, peer.errors


def test_bad_checksum_from_client_is_not_forwarded_silently(wire_peer, proxy):
    """A frame with a wrong CRC-32C must not reach the upstream with the wrong checksum."""
    peer = wire_peer()
    px = proxy(peer.uri)
    with RawClient.for_address(px.address) as rc:
        rc.hello()
        frame = bytearray(encode_op_msg({"ping": 1, "marker": "badcrc", "$db": "admin"}, checksum=True))
        frame[-1] ^= 0xFF
        rc.send(bytes(frame))
        try:
            reply = rc.recv_message(timeout=3)
        except OSError:
            reply = None
        if reply is not None and reply.reply_doc is not None:
            # Accepting it is allowed only by answering with an error or after passing it on re-checksummed.
            pass
    time.sleep(0.3)
    for f in peer.frames_snapshot():
        if (f.message.command or {}).get("marker") == "badcrc":
            m = f.message.effective
            assert not (m.flag_bits & FLAG_CHECKSUM_PRESENT) or m.checksum_ok, "forwarded a bad checksum"
    assert px.alive()


def test_document_sequence_reaches_upstream(wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri)
    client = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=10000)
    try:
        client.seq.items.insert_many([{"_id": i, "v": "x" * 20} for i in range(1000)])
        assert client.seq.items.count_documents({}) == 1000
    finally:
        client.close()
    inserts = _frames_named(peer, "insert")
    assert inserts
    total = 0
    for f in inserts:
        m = f.message.effective
        assert 1 in m.section_kinds, "proxy turned the document sequence into something else"
        total += len(m.sequences.get("documents", []))
    assert total == 1000


def test_more_to_come_write_gets_no_reply_and_is_applied(wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri)
    with RawClient.for_address(px.address) as rc:
        rc.hello()
        rc.send(encode_op_msg({"insert": "w0", "$db": "mtc", "writeConcern": {"w": 0}},
                              flags=FLAG_MORE_TO_COME, sequences={"documents": [{"_id": 1}, {"_id": 2}]}))
        r = rc.command({"find": "w0", "filter": {}}, db="mtc")
        assert r.opcode in (OP_MSG, OP_COMPRESSED)
        assert [d["_id"] for d in r.reply_doc["cursor"]["firstBatch"]] == [1, 2]
    f = peer.wait_for(lambda f: f.command_name == "insert")
    assert f.message.effective.flag_bits & FLAG_MORE_TO_COME


def test_pymongo_w0_through_proxy(wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri)
    client = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=10000, w=0)
    try:
        for i in range(20):
            client.w0.items.insert_one({"_id": i})
        deadline = time.time() + 5
        while time.time() < deadline and len(_frames_named(peer, "insert")) < 20:
            time.sleep(0.05)
    finally:
        client.close()
    assert len(_frames_named(peer, "insert")) == 20


def test_legacy_handshake_reaches_peer_and_op_reply_comes_back(wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri)
    with RawClient.for_address(px.address) as rc:
        frame = encode_op_query({"isMaster": 1, "helloOk": True})
        rc.send(frame)
        reply = rc.recv_message()
        assert reply is not None and reply.opcode == OP_REPLY
        assert reply.documents[0]["ok"] == 1
    # the proxy may answer the handshake itself or pass it on; whatever reached the peer must parse
    assert not peer.errors, peer.errors
    for f in peer.frames_snapshot():
        assert f.opcode in (OP_MSG, OP_QUERY, OP_COMPRESSED)


def test_sigterm_drains_and_exits_zero(wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri)
    c = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=10000)
    assert c.admin.command("ping")["ok"] == 1
    c.close()
    px.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 15
    while px.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not px.alive(), "proxy still running 15 s after SIGTERM"
    assert px.process.exit_code() == 0, (px.process.exit_code(), px.stderr_text()[-3000:])


def test_sigterm_does_not_wait_for_a_streaming_hello(wire_peer, proxy):
    # A driver's monitor waits in an awaitable hello (maxAwaitTimeMS, 10 s by default): that is
    # not work in flight, so a drain closes its connection at once instead of waiting it out. The
    # wait here is 60 s, so an exit well inside it shows the drain did not wait.
    max_await_s = 60
    peer = wire_peer()
    px = proxy(peer.uri)
    with RawClient.for_address(px.address, timeout=max_await_s + 15) as monitor:
        monitor.hello()
        monitor.send(encode_op_msg({"hello": 1, "topologyVersion": {"processId": bson.ObjectId(), "counter": 0},
                                    "maxAwaitTimeMS": max_await_s * 1000, "$db": "admin"}))
        assert peer.wait_for(lambda f: "maxAwaitTimeMS" in (f.message.command or {}), timeout=30)
        px.process.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        while px.alive() and time.monotonic() < sent + max_await_s:
            time.sleep(0.05)
        took = time.monotonic() - sent
        assert took < max_await_s / 4, f"exit took {took:.1f} s after SIGTERM: the streaming hello held the drain"
        assert px.process.exit_code() == 0, px.stderr_text()[-3000:]
        assert monitor.recv_message(timeout=5) is None  # closed, not answered


def test_exhaust_cursor_streams_through_proxy(wire_peer, proxy):
    """One getMore with exhaustAllowed, many moreToCome replies: all must reach the client in order."""
    peer = wire_peer()
    px = proxy(peer.uri)
    client = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=10000, socketTimeoutMS=10000)
    try:
        coll = client.ex.items
        coll.insert_many([{"_id": i} for i in range(250)])
        got = [d["_id"] for d in coll.find({}, batch_size=20, cursor_type=pymongo.CursorType.EXHAUST)]
        assert got == list(range(250))
        # the connection is usable afterwards
        assert coll.find_one({"_id": 7}) == {"_id": 7}
    finally:
        client.close()
    assert peer.exhaust_replies >= 10, "the exhaust path was not exercised"
    getmores = _frames_named(peer, "getMore")
    assert any(f.message.effective.flag_bits & (1 << 16) for f in getmores), "exhaustAllowed was not forwarded"
    assert px.alive()


def test_admin_endpoint_fixture(ferretdb, proxy):
    """The proxy fixture's admin=True gives a reachable admin_url (used by the stats suites)."""
    import urllib.request
    px = proxy(ferretdb.uri, admin=True)
    assert px.admin_url and px.admin_url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(px.admin_url + "/healthz", timeout=5) as r:
        assert r.status == 200


def test_reply_checksums_from_upstream_stay_valid(wire_peer, proxy):
    """Upstream replies with CRC-32C (to checksummed requests); what the proxy forwards must still verify,
    and a client that sent no checksum (pymongo rejects them) must not get one."""
    peer = wire_peer(reply_checksum=True)
    px = proxy(peer.uri)
    with RawClient.for_address(px.address) as rc:
        rc.hello()
        rc.command({"insert": "c", "documents": [{"_id": i} for i in range(50)]}, db="ck", checksum=True)
        r = rc.command({"find": "c", "filter": {}, "batchSize": 10}, db="ck", checksum=True)
        m = r.effective
        assert len(m.body["cursor"]["firstBatch"]) == 10
        if m.flag_bits & FLAG_CHECKSUM_PRESENT:
            assert m.checksum_ok
        r = rc.command({"getMore": m.body["cursor"]["id"], "collection": "c", "batchSize": 100}, db="ck",
                       checksum=True)
        m = r.effective
        assert len(m.body["cursor"]["nextBatch"]) == 40
        if m.flag_bits & FLAG_CHECKSUM_PRESENT:
            assert m.checksum_ok
    client = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=10000)
    try:
        assert len(list(client.ck.c.find({}, batch_size=7))) == 50
    finally:
        client.close()


def test_sigterm_waits_for_in_flight_request(wire_peer, proxy):
    """Drain: a request already sent upstream is answered before the proxy exits."""
    import threading
    peer = wire_peer()
    px = proxy(peer.uri)
    with RawClient.for_address(px.address, timeout=15) as rc:
        rc.hello()
        peer.add_fault("delay", command="ping", seconds=1.5)
        result = {}

        def run():
            try:
                result["reply"] = rc.command({"ping": 1, "marker": "in-flight"})
            except Exception as e:  # noqa: BLE001
                result["error"] = repr(e)

        t = threading.Thread(target=run)
        t.start()
        assert peer.wait_for(lambda f: (f.message.command or {}).get("marker") == "in-flight", timeout=5)
        px.process.send_signal(signal.SIGTERM)
        t.join(timeout=15)
        assert "error" not in result, result
        assert result["reply"].reply_doc["ok"] == 1
    deadline = time.monotonic() + 15
    while px.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not px.alive()
    assert px.process.exit_code() == 0, px.stderr_text()[-3000:]


def test_concurrent_clients_through_proxy(ferretdb, proxy):
    import threading
    px = proxy(ferretdb.uri)
    errors: list[str] = []

    def worker(k: int):
        c = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=10000, maxPoolSize=4)
        try:
            coll = c.conc[f"w{k}"]
            coll.insert_many([{"_id": i, "k": k} for i in range(100)])
            for i in range(0, 100, 5):
                d = coll.find_one({"_id": i})
                if d != {"_id": i, "k": k}:
                    errors.append(f"worker {k}: {d}")
            if sum(1 for _ in coll.find({}, batch_size=9)) != 100:
                errors.append(f"worker {k}: cursor count")
        except Exception as e:  # noqa: BLE001
            errors.append(f"worker {k}: {e!r}")
        finally:
            c.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:5]
    assert px.alive()


def _insert_frame_of_length(total: int) -> bytes:
    """An OP_MSG insert (3 documents in a kind-1 sequence) whose messageLength is exactly `total`."""
    body = {"insert": "lim", "$db": "lim", "ordered": True}
    docs = [{"_id": i, "s": "a" * 15_000_000} for i in range(3)]
    frame = encode_op_msg(body, sequences={"documents": docs})
    docs[2]["s"] = "a" * (15_000_000 + total - len(frame))
    frame = encode_op_msg(body, sequences={"documents": docs})
    assert len(frame) == total
    return frame


@pytest.mark.slow
def test_message_of_max_message_size_passes(wire_peer, proxy):
    """maxMessageSizeBytes is 48,000,000 (decimal): a message of exactly that size must go through."""
    peer = wire_peer()
    px = proxy(peer.uri)
    with RawClient.for_address(px.address, timeout=60) as rc:
        rc.hello()
        frame = _insert_frame_of_length(48_000_000)
        rc.send(frame)
        reply = rc.recv_message(timeout=60)
        assert reply is not None, "connection closed on a message of exactly maxMessageSizeBytes"
        assert reply.reply_doc["ok"] == 1 and reply.reply_doc["n"] == 3, reply.reply_doc
    f = peer.wait_for(lambda f: f.command_name == "insert", timeout=10)
    assert f is not None and f.message.effective.length == 48_000_000
    assert px.alive()


@pytest.mark.slow
def test_message_over_max_message_size_is_refused(wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri)
    with RawClient.for_address(px.address, timeout=60) as rc:
        rc.hello()
        frame = _insert_frame_of_length(48_000_001)
        try:
            rc.send(frame)
        except OSError:
            pass  # the proxy may close as soon as it has read the header
        closed, data = rc.drain(timeout=10)
        if not closed:
            assert data, "no reply and no close for a message over maxMessageSizeBytes"
    time.sleep(0.2)
    assert not [f for f in peer.frames_snapshot() if f.command_name == "insert"], "oversized message was forwarded"
    assert px.alive()


def test_pipelined_requests_answered_in_order(wire_peer, proxy):
    """Several requests written back to back on one connection (plus a moreToCome write in between)."""
    peer = wire_peer()
    px = proxy(peer.uri)
    with RawClient.for_address(px.address) as rc:
        rc.hello()
        frames = [encode_op_msg({"ping": 1, "seq": i, "$db": "admin"}) for i in range(5)]
        frames.insert(2, encode_op_msg({"insert": "p", "$db": "pipe", "writeConcern": {"w": 0}},
                                       flags=FLAG_MORE_TO_COME, sequences={"documents": [{"_id": 1}]}))
        frames.append(encode_op_msg({"find": "p", "filter": {}, "$db": "pipe"}))
        rc.send(b"".join(frames))
        expected = [f for f in frames if not (int.from_bytes(f[16:20], "little") & FLAG_MORE_TO_COME)]
        for f in expected:
            reply = rc.recv_message(timeout=10)
            assert reply is not None
            assert reply.response_to == int.from_bytes(f[4:8], "little", signed=True)
        assert reply.reply_doc["cursor"]["firstBatch"] == [{"_id": 1}]
    assert px.alive()


def test_killcursors_reaches_upstream(wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri)
    client = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=10000)
    try:
        coll = client.kc.items
        coll.insert_many([{"_id": i} for i in range(100)])
        cur = coll.find({}, batch_size=10)
        next(cur)
        cursor_id = cur.cursor_id
        assert cursor_id
        cur.close()
        f = peer.wait_for(lambda f: f.command_name == "killCursors", timeout=10)
        assert f is not None, "killCursors never reached the upstream"
        assert [int(c) for c in f.message.command["cursors"]] == [int(cursor_id)]
        assert coll.find_one({"_id": 99}) == {"_id": 99}
    finally:
        client.close()


def test_hello_through_proxy_matches_upstream(ferretdb, proxy):
    """The handshake reply is the upstream's, apart from per-connection fields."""
    px = proxy(ferretdb.uri)
    replies = []
    for addr in (ferretdb.address, px.address):
        with RawClient.for_address(addr) as rc:
            replies.append(rc.hello().reply_doc)
    direct, through = replies
    volatile = {"localTime", "connectionId", "compression", "topologyVersion", "$clusterTime", "operationTime"}
    assert {k: v for k, v in through.items() if k not in volatile} == \
        {k: v for k, v in direct.items() if k not in volatile}
