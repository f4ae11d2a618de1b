"""Self-tests of the scripted wire peer (no proxy): the tool must be right before it judges the proxy."""
from __future__ import annotations

import struct

import pymongo
import pytest

from wire_peer import (COMPRESSOR_IDS, OP_COMPRESSED, OP_MSG, OP_QUERY, OP_REPLY, RawClient, crc32c,
                       encode_compressed, encode_op_msg, parse_message)


def test_crc32c_known_vector():
    assert crc32c(b"123456789") == 0xE3069283


@pytest.mark.parametrize("cid", [0, 1, 2, 3])
def test_compressed_roundtrip(cid):
    msg = encode_op_msg({"ping": 1, "$db": "admin"}, sequences={"documents": [{"a": 1}, {"b": 2}]}, checksum=True)
    c = encode_compressed(msg, cid)
    m = parse_message(c)
    assert m.opcode == OP_COMPRESSED and m.compressor_id == cid
    assert m.inner.opcode == OP_MSG and m.inner.body["ping"] == 1
    assert m.inner.sequences["documents"] == [{"a": 1}, {"b": 2}]
    assert m.inner.checksum_ok
    assert struct.unpack_from("<i", c)[0] == len(c)


@pytest.mark.parametrize("comp", [None, "zstd", "snappy", "zlib"])
def test_pymongo_against_peer(comp, wire_peer):
    peer = wire_peer()
    kw = {"compressors": comp} if comp else {}
    client = pymongo.MongoClient(peer.uri, serverSelectionTimeoutMS=5000, **kw)
    try:
        coll = client.t.c
        coll.insert_many([{"_id": i, "k": i % 3} for i in range(300)])
        assert len(list(coll.find({"k": 1}, batch_size=7))) == 100
        assert coll.find_one({"_id": 5}) == {"_id": 5, "k": 2}
        with pytest.raises(pymongo.errors.DuplicateKeyError):
            coll.insert_one({"_id": 5})
        assert coll.count_documents({}) == 300
        assert coll.count_documents({"k": 0}) == 100
    finally:
        client.close()
    assert not peer.errors, peer.errors
    frames = peer.frames_snapshot()
    if comp:
        ids = {f.message.compressor_id for f in frames if f.opcode == OP_COMPRESSED}
        assert ids == {COMPRESSOR_IDS[comp]}
    assert any(f.opcode == OP_QUERY or f.command_name == "hello" for f in frames)
    # insert_many arrives as a kind-1 document sequence
    assert any(1 in f.message.effective.section_kinds for f in frames if f.command_name == "insert")


def test_raw_client_legacy_hello_and_faults(wire_peer):
    peer = wire_peer()
    with RawClient(port=peer.port) as rc:
        r = rc.hello(legacy=True, compression=["zstd"])
        assert r.opcode == OP_REPLY and r.documents[0]["ismaster"] is True
        assert r.documents[0]["compression"] == ["zstd"]
        r = rc.command({"ping": 1}, compressor_id=3)
        assert r.opcode == OP_COMPRESSED and r.reply_doc == {"ok": 1.0}
        r = rc.command({"ping": 1}, checksum=True, flags=1 << 20)
    f = peer.frames_snapshot()[-1]
    assert f.message.checksum_ok and f.message.flag_bits & (1 << 20)
    peer.add_fault("close_mid_reply", command="ping")
    with RawClient(port=peer.port) as rc:
        with pytest.raises((ConnectionError, OSError)):
            rc.command({"ping": 1})


def test_exhaust_cursor_against_peer(wire_peer):
    peer = wire_peer()
    client = pymongo.MongoClient(peer.uri, serverSelectionTimeoutMS=5000)
    try:
        coll = client.t.ex
        coll.insert_many([{"_id": i} for i in range(250)])
        got = [d["_id"] for d in coll.find({}, batch_size=20, cursor_type=pymongo.CursorType.EXHAUST)]
        assert got == list(range(250))
    finally:
        client.close()
    assert peer.exhaust_replies >= 10
    assert not peer.errors, peer.errors
