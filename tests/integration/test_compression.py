"""OP_COMPRESSED on both sides of the proxy.

Client side: pymongo with compressors=zstd|snappy|zlib talks to shardscope
(--client-compressors) in front of FerretDB, which has no OP_COMPRESSED at all;
results must equal an uncompressed direct run, and the compressor must really
have been negotiated and used.

Upstream side: shardscope --upstream-compressors X in front of the scripted
wire peer; the peer must see a hello offering X and then OP_COMPRESSED frames
with X's id.
"""
from __future__ import annotations

import pymongo
import pytest

from scenarios import check_expected, run_pymongo_scenario
from wire_peer import COMPRESSOR_IDS, OP_COMPRESSED, OP_MSG, OP_QUERY, RawClient

COMPRESSORS = ["zstd", "snappy", "zlib"]


def _pool_compressor_ids(client: pymongo.MongoClient) -> set:
    """Compressor ids pymongo negotiated on its pooled connections (pymongo internals)."""
    ids = set()
    for server in client._topology._servers.values():
        for conn in list(server.pool.conns):
            ctx = conn.compression_context
            ids.add(ctx.compressor_id if ctx is not None else None)
    return ids


@pytest.mark.needs_proxy
@pytest.mark.parametrize("comp", COMPRESSORS)
def test_client_side_compression_equals_direct(comp, ferretdb, proxy):
    px = proxy(ferretdb.uri, "--client-compressors", "zstd,snappy,zlib")
    direct = run_pymongo_scenario(ferretdb.uri, "direct_plain")
    through = run_pymongo_scenario(px.uri, f"proxied_{comp}", compressors=comp)
    check_expected(direct)
    assert through == direct

    client = pymongo.MongoClient(px.uri, compressors=comp, serverSelectionTimeoutMS=10000)
    try:
        client.admin.command("ping")
        assert _pool_compressor_ids(client) == {COMPRESSOR_IDS[comp]}, \
            "pymongo did not negotiate the compressor with the proxy"
    finally:
        client.close()
    assert px.alive()


@pytest.mark.needs_proxy
@pytest.mark.parametrize("comp", COMPRESSORS)
def test_client_side_compression_raw(comp, ferretdb, proxy):
    """Hand-made hello offering one compressor, then an OP_COMPRESSED command."""
    px = proxy(ferretdb.uri, "--client-compressors", "zstd,snappy,zlib")
    cid = COMPRESSOR_IDS[comp]
    with RawClient.for_address(px.address) as rc:
        hello = rc.hello(compression=[comp, "noSuchCompressor"])
        assert hello.reply_doc.get("compression") == [comp], hello.reply_doc
        rc.command({"insert": "c", "documents": [{"_id": i, "v": "x" * 50} for i in range(200)]},
                   db="rawcomp", compressor_id=cid)
        reply = rc.command({"find": "c", "filter": {}, "batchSize": 1000}, db="rawcomp", compressor_id=cid)
        doc = reply.reply_doc
        assert doc["ok"] == 1, doc
        assert len(doc["cursor"]["firstBatch"]) == 200
        # The reply to a compressed request may be compressed; if it is, with a negotiated compressor.
        if reply.opcode == OP_COMPRESSED:
            assert reply.compressor_id == cid
            assert reply.original_opcode == OP_MSG


@pytest.mark.needs_proxy
def test_client_compression_not_offered_when_disabled_by_client(ferretdb, proxy):
    """A client offering nothing gets no compression field and plain OP_MSG replies."""
    px = proxy(ferretdb.uri, "--client-compressors", "zstd,snappy,zlib")
    with RawClient.for_address(px.address) as rc:
        hello = rc.hello()
        assert "compression" not in hello.reply_doc or hello.reply_doc["compression"] == []
        r = rc.command({"ping": 1})
        assert r.opcode == OP_MSG and r.reply_doc["ok"] == 1


@pytest.mark.needs_proxy
@pytest.mark.parametrize("comp", COMPRESSORS)
def test_upstream_side_compression_to_wire_peer(comp, wire_peer, proxy):
    peer = wire_peer(compressors=("zstd", "snappy", "zlib"))
    px = proxy(peer.uri, "--upstream-compressors", comp)
    client = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=10000)
    try:
        coll = client.upc.items
        coll.insert_many([{"_id": i, "k": i % 4, "pad": "p" * 100} for i in range(300)])
        got = list(coll.find({"k": 2}, batch_size=10))
        assert [d["_id"] for d in got] == list(range(2, 300, 4))
        assert client.upc.command("ping")["ok"] == 1
    finally:
        client.close()

    frames = peer.frames_snapshot()
    assert not peer.errors, peer.errors
    hellos = [f for f in frames if (f.command_name or "").lower() in ("hello", "ismaster")]
    assert hellos, "proxy never said hello to the upstream"
    assert any(comp in (f.message.command.get("compression") or []) for f in hellos), \
        [f.message.command.get("compression") for f in hellos]
    compressed = [f for f in frames if f.opcode == OP_COMPRESSED]
    assert compressed, "proxy sent no OP_COMPRESSED frame upstream"
    assert {f.message.compressor_id for f in compressed} == {COMPRESSOR_IDS[comp]}
    names = {f.command_name for f in compressed}
    assert {"insert", "find", "getMore"} <= names, names
    # hello/isMaster and auth commands are never compressed
    for f in compressed:
        assert (f.command_name or "").lower() not in ("hello", "ismaster", "saslstart", "saslcontinue")
        assert f.message.inner.opcode in (OP_MSG, OP_QUERY)
    assert px.alive()

    # A client that negotiated no compression must get plain replies, although upstream replies compressed.
    with RawClient.for_address(px.address) as rc:
        rc.hello()
        r = rc.command({"find": "items", "filter": {"k": 1}, "batchSize": 5}, db="upc")
        assert r.opcode == OP_MSG, "compressed reply sent to a client that did not negotiate compression"
        assert len(r.reply_doc["cursor"]["firstBatch"]) == 5


@pytest.mark.needs_proxy
def test_upstream_compression_large_document(wire_peer, proxy):
    """A 15 MB document through zstd toward the upstream, both directions."""
    peer = wire_peer(compressors=("zstd",))
    px = proxy(peer.uri, "--upstream-compressors", "zstd")
    data = "".join(chr(97 + (i * 7919) % 26) for i in range(4096)) * (15 * 256)  # 15 MiB, not trivially compressible
    client = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=10000, socketTimeoutMS=60000)
    try:
        client.bigz.docs.insert_one({"_id": "big", "data": data})
        got = client.bigz.docs.find_one({"_id": "big"})
        assert got["data"] == data
    finally:
        client.close()
    inserts = [f for f in peer.frames_snapshot() if f.command_name == "insert"]
    assert inserts and all(f.opcode == OP_COMPRESSED for f in inserts)
    assert inserts[0].message.uncompressed_size > 15 * 1024 * 1024
    assert not peer.errors, peer.errors


@pytest.mark.needs_proxy
def test_both_hops_compressed_with_different_compressors(wire_peer, proxy):
    """Client speaks snappy to the proxy, the proxy speaks zstd upstream: it must recompress."""
    peer = wire_peer(compressors=("zstd", "snappy", "zlib"))
    px = proxy(peer.uri, "--client-compressors", "snappy", "--upstream-compressors", "zstd")
    client = pymongo.MongoClient(px.uri, compressors="snappy", serverSelectionTimeoutMS=10000)
    try:
        coll = client.both.items
        coll.insert_many([{"_id": i, "pad": "q" * 200} for i in range(200)])
        assert [d["_id"] for d in coll.find({}, batch_size=25)] == list(range(200))
        assert _pool_compressor_ids(client) == {COMPRESSOR_IDS["snappy"]}
    finally:
        client.close()
    compressed = [f for f in peer.frames_snapshot() if f.opcode == OP_COMPRESSED]
    assert compressed and {f.message.compressor_id for f in compressed} == {COMPRESSOR_IDS["zstd"]}
    assert not peer.errors, peer.errors
