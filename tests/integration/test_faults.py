"""Faults: a dying upstream, misbehaving clients, a misbehaving upstream peer.

In every case the proxy process must stay up and well-behaved clients must keep
working.
"""
from __future__ import annotations

import os
import socket
import struct
import threading
import time

import bson
import pymongo
import pytest
from pymongo.errors import PyMongoError

from wire_peer import OP_MSG, OP_REPLY, RawClient, encode_op_msg, encode_op_query, header

pytestmark = pytest.mark.needs_proxy


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def _eventually(fn, timeout: float = 20.0, interval: float = 0.25):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            return fn()
        except PyMongoError as e:
            last = e
            time.sleep(interval)
    raise AssertionError(f"still failing after {timeout}s: {last!r}")


def test_upstream_killed_mid_stream_then_restarted(ferretdb, proxy):
    px = proxy(ferretdb.uri)
    client = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=3000, socketTimeoutMS=10000,
                                 retryReads=False, retryWrites=False)
    try:
        coll = client.faults.items
        coll.insert_many([{"_id": i, "v": i} for i in range(500)])
        cursor = coll.find({}, batch_size=20).sort("_id", 1)
        seen = [next(cursor)["_id"] for _ in range(20)]  # first batch only
        assert seen == list(range(20))

        ferretdb.kill()  # SIGKILL: the upstream vanishes with the cursor open
        with pytest.raises(PyMongoError):
            for _ in range(480):
                next(cursor)
        assert px.alive(), px.stderr_text()[-3000:]
        with pytest.raises(PyMongoError):
            coll.count_documents({})

        ferretdb.restart()
        # The same proxy process, the same client: works again once the upstream is back.
        assert _eventually(lambda: coll.count_documents({})) == 500
        assert coll.find_one({"_id": 499})["v"] == 499
        coll.insert_one({"_id": 1000, "v": "after restart"})
        assert coll.find_one({"_id": 1000})["v"] == "after restart"
    finally:
        client.close()
    fresh = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=10000)
    try:
        assert fresh.faults.items.count_documents({}) == 501
    finally:
        fresh.close()
    assert px.alive()


def _garbage_frames() -> dict[str, bytes]:
    ping = bson.encode({"ping": 1, "$db": "admin"})
    return {
        "random": os.urandom(256),
        "huge_length": struct.pack("<iiii", 0x7FFFFFF0, 1, 0, OP_MSG) + b"\x00" * 64,
        "negative_length": struct.pack("<iiii", -5, 1, 0, OP_MSG),
        "tiny_length": struct.pack("<i", 3) + b"\x00" * 12,
        "short_body": struct.pack("<iiii", 1000, 1, 0, OP_MSG) + b"\x00" * 40,  # lies: sends 56 of 1000 bytes
        "unknown_opcode": header(16 + 4 + 1 + len(ping), 7, 0, 9999) + b"\x00\x00\x00\x00\x00" + ping,
        "unknown_section_kind": header(16 + 4 + 1 + len(ping), 8, 0, OP_MSG) + b"\x00\x00\x00\x00\x07" + ping,
        "unknown_required_flag": header(16 + 4 + 1 + len(ping), 9, 0, OP_MSG) + struct.pack("<I", 1 << 5)
        + b"\x00" + ping,
        "bson_length_lies": header(16 + 4 + 1 + 16, 10, 0, OP_MSG) + b"\x00\x00\x00\x00\x00"
        + struct.pack("<i", 5000) + b"\x10abc\x00" + b"\x00" * 7,
        "no_sections": header(20, 11, 0, OP_MSG) + b"\x00\x00\x00\x00",
        "op_reply_from_client": header(36, 12, 0, OP_REPLY) + b"\x00" * 20,
    }


def test_garbage_clients_do_not_disturb_good_client(ferretdb, proxy):
    px = proxy(ferretdb.uri)
    stop = threading.Event()
    errors: list[str] = []
    ops = [0]

    def good_client():
        c = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=10000, socketTimeoutMS=10000)
        try:
            coll = c.good.items
            i = 0
            while not stop.is_set():
                try:
                    coll.insert_one({"_id": i, "v": i})
                    assert coll.find_one({"_id": i})["v"] == i
                    ops[0] += 1
                except Exception as e:  # noqa: BLE001 - any error is a failure of the test
                    errors.append(repr(e))
                i += 1
        finally:
            c.close()

    t = threading.Thread(target=good_client)
    t.start()
    try:
        time.sleep(0.5)
        outcomes = {}
        for name, data in _garbage_frames().items():
            with RawClient.for_address(px.address, timeout=5) as rc:
                try:
                    rc.send(data)
                except OSError:
                    pass
                # Every bad frame must either get the connection closed or, at worst, be left hanging
                # (a lying length keeps the proxy waiting for the rest); never crash the proxy.
                outcomes[name] = rc.drain(timeout=1.5 if name == "short_body" else 5)
            assert px.alive(), f"proxy died after {name}:\n{px.stderr_text()[-3000:]}"
        time.sleep(0.5)
    finally:
        stop.set()
        t.join(timeout=30)
    assert not errors, errors[:5]
    assert ops[0] > 5
    assert px.alive()
    # Frames that can never become a valid message must get the connection closed.
    for name in ("huge_length", "negative_length", "tiny_length", "unknown_section_kind", "bson_length_lies",
                 "no_sections"):
        closed, data = outcomes[name]
        assert closed, f"proxy kept the connection open after {name} (got {data[:80]!r})"
    # An unknown required flag bit (unknown_required_flag) is an error for mongod; the proxy may reject the
    # message or pass it on for the upstream to judge (FerretDB answers ok:1), so only survival is checked.
    # And a new client still works.
    c = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=10000)
    try:
        assert c.good.items.count_documents({}) >= ops[0]
    finally:
        c.close()


def test_many_half_open_connections_do_not_block_others(ferretdb, proxy):
    px = proxy(ferretdb.uri)
    raws = [RawClient.for_address(px.address) for _ in range(30)]
    try:
        for r in raws:
            r.send(struct.pack("<i", 200))  # a length prefix and nothing else
        c = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=10000)
        try:
            assert c.admin.command("ping")["ok"] == 1
        finally:
            c.close()
    finally:
        for r in raws:
            r.close()
    assert px.alive()


def test_legacy_op_query_ismaster_gets_op_reply(ferretdb, proxy):
    px = proxy(ferretdb.uri)
    with RawClient.for_address(px.address) as rc:
        frame = encode_op_query({"isMaster": 1, "helloOk": True,
                                 "client": {"driver": {"name": "raw", "version": "0"}}})
        rid = struct.unpack_from("<i", frame, 4)[0]
        rc.send(frame)
        reply = rc.recv_message()
        assert reply is not None, "connection closed instead of OP_REPLY"
        assert reply.opcode == OP_REPLY, reply.opcode
        assert reply.response_to == rid
        assert reply.number_returned == 1
        doc = reply.documents[0]
        assert doc["ok"] == 1 and doc["ismaster"] is True, doc
        assert doc["maxWireVersion"] >= 6
        # The same connection then speaks OP_MSG.
        r = rc.command({"ping": 1})
        assert r.opcode == OP_MSG and r.reply_doc["ok"] == 1
    assert px.alive()


def test_legacy_op_query_ismaster_direct_and_through_proxy_agree(ferretdb, proxy):
    px = proxy(ferretdb.uri)
    docs = []
    for addr in (f"127.0.0.1:{ferretdb.port}", px.address):
        with RawClient.for_address(addr) as rc:
            rc.send(encode_op_query({"ismaster": 1}))
            reply = rc.recv_message()
            assert reply is not None and reply.opcode == OP_REPLY
            docs.append(reply.documents[0])
    direct, through = docs
    for k in ("ismaster", "maxBsonObjectSize", "maxMessageSizeBytes", "maxWriteBatchSize", "maxWireVersion",
              "minWireVersion", "ok"):
        assert through.get(k) == direct.get(k), (k, through.get(k), direct.get(k))


# ---------------------------------------------------------------- faults injected by the upstream peer

@pytest.mark.parametrize("kind", ["close_mid_reply", "garbage", "close"])
def test_upstream_peer_fault_errors_client_then_recovers(kind, wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri)
    client = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=5000, socketTimeoutMS=5000,
                                 retryReads=False, retryWrites=False)
    try:
        coll = client.pf.items
        coll.insert_many([{"_id": i} for i in range(10)])
        peer.add_fault(kind, command="find")
        with pytest.raises(PyMongoError):
            list(coll.find({}))
        assert px.alive(), px.stderr_text()[-3000:]
        assert _eventually(lambda: len(list(coll.find({})))) == 10
    finally:
        client.close()
    assert px.alive()


def test_upstream_peer_stops_reading_client_times_out_proxy_survives(wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri)
    client = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=5000, socketTimeoutMS=1500,
                                 retryReads=False, retryWrites=False)
    try:
        coll = client.pf.items
        coll.insert_one({"_id": 1})
        peer.add_fault("stop_reading", command="find")
        # The driver's socketTimeoutMS ends the wait (a hang would block here, not fail).
        with pytest.raises(PyMongoError):
            coll.find_one({"_id": 1})
        assert px.alive()
        assert _eventually(lambda: coll.find_one({"_id": 1}))["_id"] == 1
    finally:
        client.close()
    assert px.alive()


def test_reply_sent_just_before_upstream_closes_reaches_the_client(wire_peer, proxy):
    # The proxy queues replies and writes them in a batch: a reply followed at once by the
    # upstream's close must still arrive whole. (Here the close usually arrives after the proxy
    # has read the reply; the path where both come in one read is not reached deterministically.)
    peer = wire_peer()
    px = proxy(peer.uri)
    with RawClient.for_address(px.address) as rc:
        rc.command({"insert": "items", "documents": [{"_id": i, "v": "x" * 400_000} for i in range(5)]}, db="pf")
        peer.add_fault("reply_then_close", command="find")
        reply = rc.command({"find": "items", "filter": {}}, db="pf")
        assert reply.body["ok"] == 1.0
        assert [d["_id"] for d in reply.body["cursor"]["firstBatch"]] == [0, 1, 2, 3, 4]
        assert rc.recv_message(timeout=5) is None  # then the connection closes, as upstream's did
    assert px.alive()


@pytest.mark.both_allocators
def test_slow_reader_of_large_replies_gets_every_byte_in_order(wire_peer, proxy):
    # 8 pipelined finds of ~3.6 MB each while the client reads nothing for a second: the proxy
    # stops reading upstream once 1 MiB waits for this client (backpressure), another client
    # is served meanwhile, and every reply then arrives whole and in order.
    peer = wire_peer()
    px = proxy(peer.uri)
    big = "y" * 900_000
    with RawClient.for_address(px.address, timeout=30) as rc:
        rc.command({"insert": "big", "documents": [{"_id": i, "v": big} for i in range(4)]}, db="pf")
        rc.command({"find": "big", "filter": {}, "batchSize": 4}, db="pf")  # buffers grown once
        rss_before = _rss_kib(px.process.pid)
        ids = []
        for _ in range(8):
            frame = encode_op_msg({"find": "big", "filter": {}, "batchSize": 4, "$db": "pf"})
            ids.append(struct.unpack_from("<i", frame, 4)[0])
            rc.send(frame)
        time.sleep(1.0)
        # ~29 MB of replies wait upstream and in the proxy; without backpressure all of it would be in the proxy.
        # (Not under a sanitizer: its quarantine keeps freed buffers resident.)
        grown = _rss_kib(px.process.pid) - rss_before
        sanitized = "ASAN_OPTIONS" in os.environ or "TSAN_OPTIONS" in os.environ
        assert sanitized or grown < 16 * 1024, f"proxy RSS grew by {grown} KiB while the client read nothing"
        other = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=5000, socketTimeoutMS=5000)
        try:
            assert other.admin.command("ping")["ok"] == 1.0
        finally:
            other.close()
        for rid in ids:
            reply = rc.recv_message()
            assert reply is not None and reply.response_to == rid
            batch = reply.body["cursor"]["firstBatch"]
            assert [d["_id"] for d in batch] == [0, 1, 2, 3] and all(d["v"] == big for d in batch)
    assert px.alive()
    assert not peer.errors, peer.errors


def test_upstream_unreachable_client_gets_error_not_hang(proxy):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    px = proxy(f"mongodb://127.0.0.1:{port}/")
    c = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=3000, connectTimeoutMS=3000, socketTimeoutMS=5000)
    with pytest.raises(PyMongoError):  # the driver's timeouts bound the wait: an error, not a hang
        c.admin.command("ping")
    c.close()
    assert px.alive()
