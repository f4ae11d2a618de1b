"""Requests the proxy must not forward as they are, answered or refused as a 6.0+ mongod/mongos does
(issue 14, "Smaller"):

  a. OP_COMPRESSED with a compressor that compression.client does not enable closes the
     connection; one it enables is accepted even when this connection did not negotiate it, as
     mongod does (issue 28), with every size bound applied; hello replies never offer more than
     the config.
  b. An OP_MSG command without $db, with a non-string or empty $db, or an empty command document
     gets the error reply mongod gives (ok: 0, errmsg, code, codeName, responseTo = the request);
     the connection stays open.
  c. Legacy opcodes (removed in 6.0) never go upstream: OP_GET_MORE and non-handshake OP_QUERY are
     answered with errors; OP_INSERT/OP_UPDATE/OP_DELETE/OP_KILL_CURSORS and a client-sent
     OP_REPLY close the connection with a logged reason and a counted decode error.
  d. More than 4,096 requests in flight on one connection: the next gets an error reply, the
     connection stays (issue 28). The upstream is the scripted peer here: it must hold its
     replies (a `delay` fault) so the requests really are in flight together.
"""
from __future__ import annotations

import struct

import bson
import pytest

from mirror_helpers import get_stats
from wire_peer import (COMPRESSOR_IDS, FLAG_MORE_TO_COME, OP_COMPRESSED, OP_DELETE, OP_GET_MORE, OP_INSERT,
                       OP_KILL_CURSORS, OP_MSG, OP_QUERY, OP_REPLY, OP_UPDATE, RawClient, encode_compressed,
                       encode_op_msg, encode_op_query, header)

pytestmark = pytest.mark.needs_proxy

QUERY_FAILURE = 1 << 1


def decode_errors(px) -> int:
    return get_stats(px.admin_url)["process"]["decodeErrors"]


def send_and_read(rc: RawClient, frame: bytes):
    rid = struct.unpack_from("<i", frame, 4)[0]
    rc.send(frame)
    reply = rc.recv_message(timeout=5)
    assert reply is not None, "connection closed instead of an error reply"
    assert reply.response_to == rid, (reply.response_to, rid)
    return reply


def assert_still_serves(rc: RawClient) -> None:
    r = rc.command({"ping": 1})
    assert r.reply_doc["ok"] == 1, r.reply_doc


# ---------------------------------------------------------------- a. compression.client is enforced

def test_compressor_outside_the_configured_list_is_refused(ferretdb, proxy):
    px = proxy(ferretdb.uri, "--client-compressors", "snappy", admin=True)
    with RawClient.for_address(px.address) as rc:
        hello = rc.hello(compression=["zstd", "zlib", "snappy"])
        assert hello.reply_doc.get("compression") == ["snappy"], hello.reply_doc
        rc.command({"ping": 1}, compressor_id=COMPRESSOR_IDS["snappy"])  # the negotiated one works
        before = decode_errors(px)
        rc.send(encode_compressed(encode_op_msg({"ping": 1, "$db": "admin"}), COMPRESSOR_IDS["zstd"]))
        closed, data = rc.drain(timeout=5)
        assert closed and not data, f"zstd frame accepted although only snappy is configured: {data[:80]!r}"
    assert decode_errors(px) == before + 1
    assert px.stderr_has("does not enable"), px.stderr_text()
    assert px.alive()


def test_noop_is_refused_unless_enabled(ferretdb, proxy):
    px = proxy(ferretdb.uri, "--client-compressors", "zstd,snappy,zlib")
    with RawClient.for_address(px.address) as rc:
        rc.hello(compression=["snappy"])
        rc.send(encode_compressed(encode_op_msg({"ping": 1, "$db": "admin"}), COMPRESSOR_IDS["noop"]))
        closed, data = rc.drain(timeout=5)
        assert closed and not data, data[:80]
    assert px.alive()


@pytest.mark.parametrize("when", ["before_hello", "offer_declined", "other_negotiated"])
def test_enabled_compressor_not_negotiated_on_this_connection_is_accepted(when, ferretdb, proxy):
    """mongod looks a frame's compressor id up in its process-wide registry, not in what the
    connection negotiated: a zstd frame is served wherever zstd is enabled (issue 28)."""
    px = proxy(ferretdb.uri, "--client-compressors", "zstd,snappy,zlib")
    with RawClient.for_address(px.address) as rc:
        if when == "offer_declined":
            assert not rc.hello(compression=["noSuchCompressor"]).reply_doc.get("compression")
        elif when == "other_negotiated":
            assert rc.hello(compression=["snappy"]).reply_doc.get("compression") == ["snappy"]
        rc.command({"insert": "c", "documents": [{"_id": 1, "v": "x" * 1000}]}, db="unnegotiated",
                   compressor_id=COMPRESSOR_IDS["zstd"])
        reply = rc.command({"find": "c", "filter": {}}, db="unnegotiated", compressor_id=COMPRESSOR_IDS["zstd"])
        assert reply.reply_doc["ok"] == 1, reply.reply_doc
        assert reply.reply_doc["cursor"]["firstBatch"] == [{"_id": 1, "v": "x" * 1000}]
        assert reply.opcode == OP_COMPRESSED and reply.compressor_id == COMPRESSOR_IDS["zstd"], "answered in kind"
        assert_still_serves(rc)
    assert px.alive()


def test_unnegotiated_compressor_keeps_every_size_bound(ferretdb, proxy):
    """The bounds of a negotiated frame hold on the unnegotiated path: a zstd frame of a few bytes
    declaring 40 MB is refused from its header (nothing inflated), one over the message size limit
    too; each closes its own connection only."""
    px = proxy(ferretdb.uri, "--client-compressors", "zstd", admin=True)
    plain = encode_op_msg({"ping": 1, "$db": "admin"})
    small = encode_compressed(plain, COMPRESSOR_IDS["zstd"])
    lying = bytearray(small)
    struct.pack_into("<i", lying, 20, 40_000_000)  # uncompressedSize
    oversized = bytearray(small)
    struct.pack_into("<i", oversized, 20, 60_000_000)  # past max_message_size (48 MB)
    before = decode_errors(px)
    for frame in (bytes(lying), bytes(oversized)):
        with RawClient.for_address(px.address) as rc:
            rc.send(frame)
            closed, data = rc.drain(timeout=5)
            assert closed and not data, data[:80]
    assert decode_errors(px) == before + 2
    with RawClient.for_address(px.address) as rc:
        assert_still_serves(rc)


def test_later_hello_never_offers_more_than_the_first_negotiated(wire_peer, proxy):
    peer = wire_peer(compressors=("zstd", "snappy", "zlib"))
    px = proxy(peer.uri, "--client-compressors", "snappy")
    with RawClient.for_address(px.address) as rc:
        assert rc.hello(compression=["snappy"]).reply_doc.get("compression") == ["snappy"]
        again = rc.command({"hello": 1, "compression": ["zstd"]})
        assert "zstd" not in (again.reply_doc.get("compression") or []), again.reply_doc
        sent = [f for f in peer.frames_snapshot() if (f.command_name or "").lower() == "hello"]
        assert sent and all("zstd" not in (f.message.command.get("compression") or []) for f in sent)
        rc.send(encode_compressed(encode_op_msg({"ping": 1, "$db": "admin"}), COMPRESSOR_IDS["zstd"]))
        assert rc.closed_by_peer(timeout=5)


# ---------------------------------------------------------------- b. command documents mongod answers

CASES = {
    "no_db": ({"ping": 1}, 40571, "Location40571", "OP_MSG requests require a $db argument"),
    "int_db": ({"ping": 1, "$db": 5}, 13111, "Location13111", "wrong type for field ($db) 16 != 2"),
    "empty_db": ({"ping": 1, "$db": ""}, 73, "InvalidNamespace", "Invalid database name: ''"),
    "empty_command": ({}, 59, "CommandNotFound", "no such command: ''"),
    "empty_name": ({"": 1, "$db": "admin"}, 59, "CommandNotFound", "no such command: ''"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_command_document_gets_mongods_error_and_the_connection_stays(case, ferretdb, proxy):
    body, code, code_name, errmsg = CASES[case]
    px = proxy(ferretdb.uri, "--client-compressors", "snappy", admin=True)
    with RawClient.for_address(px.address) as rc:
        rc.hello(compression=["snappy"])
        reply = send_and_read(rc, encode_op_msg(body))
        assert reply.opcode == OP_MSG
        assert reply.reply_doc == {"ok": 0.0, "errmsg": errmsg, "code": code, "codeName": code_name}
        # Compressed the same way the request was.
        reply = send_and_read(rc, encode_compressed(encode_op_msg(body), COMPRESSOR_IDS["snappy"]))
        assert reply.opcode == OP_COMPRESSED and reply.reply_doc["code"] == code
        # Fire-and-forget: nothing to answer, the connection goes on.
        rc.send(encode_op_msg(body, flags=FLAG_MORE_TO_COME))
        assert_still_serves(rc)
    assert decode_errors(px) == 3
    assert px.alive()


def test_unknown_command_goes_upstream(ferretdb, proxy):
    px = proxy(ferretdb.uri)
    with RawClient.for_address(px.address) as rc:
        rc.hello()
        doc = rc.command({"noSuchCommandHere": 1}).reply_doc
        assert doc["ok"] == 0 and doc["code"] == 59, doc  # FerretDB's answer, passed on
        assert_still_serves(rc)


# ---------------------------------------------------------------- c. legacy opcodes

def legacy_frame(opcode: int, body: bytes, request_id: int = 77) -> bytes:
    return header(16 + len(body), request_id, 0, opcode) + body


def cstring(s: str) -> bytes:
    return s.encode() + b"\x00"


LEGACY_CLOSING = {
    "OP_INSERT": legacy_frame(OP_INSERT, struct.pack("<i", 0) + cstring("edge.c") + bson.encode({"_id": 1})),
    "OP_UPDATE": legacy_frame(OP_UPDATE, struct.pack("<i", 0) + cstring("edge.c") + struct.pack("<i", 0)
                              + bson.encode({"_id": 1}) + bson.encode({"$set": {"x": 1}})),
    "OP_DELETE": legacy_frame(OP_DELETE, struct.pack("<i", 0) + cstring("edge.c") + struct.pack("<i", 0)
                              + bson.encode({"_id": 1})),
    "OP_KILL_CURSORS": legacy_frame(OP_KILL_CURSORS, struct.pack("<iiq", 0, 1, 12345)),
    "OP_REPLY": legacy_frame(OP_REPLY, struct.pack("<iqii", 0, 0, 0, 1) + bson.encode({"ok": 1})),
}


@pytest.mark.parametrize("name", sorted(LEGACY_CLOSING))
def test_legacy_opcode_without_reply_closes_and_is_never_forwarded(name, wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri, "--client-compressors", "snappy", admin=True)
    for compressed in (False, True):
        with RawClient.for_address(px.address) as rc:
            rc.hello(compression=["snappy"])
            frame = LEGACY_CLOSING[name]
            rc.send(encode_compressed(frame, COMPRESSOR_IDS["snappy"]) if compressed else frame)
            closed, data = rc.drain(timeout=5)
            assert closed and not data, data[:80]
    legacy = {OP_INSERT, OP_UPDATE, OP_DELETE, OP_KILL_CURSORS, OP_REPLY}
    forwarded = [f for f in peer.frames_snapshot() if f.opcode in legacy or
                 (f.opcode == OP_COMPRESSED and f.message.original_opcode in legacy)]
    assert not forwarded, f"{name} was passed upstream unparsed"
    assert decode_errors(px) == 2
    assert px.stderr_has(f"{name}: "), px.stderr_text()


def test_legacy_get_more_is_answered_with_a_query_failure(wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri, admin=True)
    with RawClient.for_address(px.address) as rc:
        rc.hello()
        reply = send_and_read(rc, legacy_frame(OP_GET_MORE, struct.pack("<i", 0) + cstring("edge.c")
                                               + struct.pack("<iq", 10, 12345), request_id=4242))
        assert reply.opcode == OP_REPLY and reply.response_flags & QUERY_FAILURE, reply
        doc = reply.documents[0]
        assert doc["code"] == 5739101 and doc["$err"].startswith("OP_GET_MORE is no longer supported."), doc
        assert_still_serves(rc)
    assert not [f for f in peer.frames_snapshot() if f.opcode == OP_GET_MORE]


def test_legacy_op_query_other_than_the_handshake_is_answered_not_forwarded(wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri)
    with RawClient.for_address(px.address) as rc:
        # A legacy find (not a command): query failure, as 6.0+ answers it.
        reply = send_and_read(rc, encode_op_query({"x": 1}, collection="edge.c"))
        assert reply.opcode == OP_REPLY and reply.response_flags & QUERY_FAILURE
        assert reply.documents[0]["code"] == 5739101
        assert reply.documents[0]["$err"].startswith("OP_QUERY is no longer supported.")
        # A command other than hello/isMaster: the UnsupportedOpQueryCommand error document.
        reply = send_and_read(rc, encode_op_query({"insert": "c", "documents": [{"_id": 1}]}, collection="edge.$cmd"))
        assert reply.opcode == OP_REPLY and not reply.response_flags & QUERY_FAILURE
        doc = reply.documents[0]
        assert doc["ok"] == 0 and doc["code"] == 352 and doc["codeName"] == "UnsupportedOpQueryCommand", doc
        assert doc["errmsg"].startswith("Unsupported OP_QUERY command: insert."), doc
        # The handshake still works on the same connection.
        reply = send_and_read(rc, encode_op_query({"isMaster": 1}))
        assert reply.documents[0]["ok"] == 1
    names = [f.command_name for f in peer.frames_snapshot() if f.opcode == OP_QUERY]
    assert names == ["isMaster"], names


# ---------------------------------------------------------------- d. the in-flight limit is answered

def test_requests_past_the_in_flight_limit_get_an_error_reply(wire_peer, proxy):
    peer = wire_peer()
    peer.add_fault("delay", command="ping", seconds=4.0)  # the first ping holds every reply behind it
    px = proxy(peer.uri, admin=True)
    limit, extra = 4096, 5
    frames = [encode_op_msg({"ping": 1, "$db": "admin"}, request_id=i) for i in range(1, limit + extra + 1)]
    with RawClient.for_address(px.address, timeout=30) as rc:
        rc.send(b"".join(frames))
        replies = {}
        while len(replies) < limit + extra:
            reply = rc.recv_message(timeout=30)
            assert reply is not None, f"connection closed after {len(replies)} replies"
            replies[reply.response_to] = reply.reply_doc
        refused = sorted(rid for rid, doc in replies.items() if doc.get("ok") != 1)
        assert refused == list(range(limit + 1, limit + extra + 1)), refused[:10]
        doc = replies[limit + 1]
        assert doc["code"] == 462 and doc["codeName"] == "IngressRequestRateLimitExceeded", doc
        assert "4096 requests in flight" in doc["errmsg"], doc
        assert_still_serves(rc)
    assert get_stats(px.admin_url)["process"]["pendingLimitRefusals"] == extra
