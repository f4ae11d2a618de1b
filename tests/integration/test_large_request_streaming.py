"""Large requests streamed upstream as they arrive (issue 29, item 2).

With no feature reading client documents (statistics and evaluation off, no lookup rule, no mirror
or capture), an insert, update or delete of at least 1 MiB whose body section comes first goes
upstream 64 KiB at a time once its head is decoded; its document sequences are checked as they
pass (protocol/bson_stream_check.h), never held whole. Through pymongo to FerretDB the documents
arrive as sent and the proxy's heap does not grow by the message's size. With statistics and
evaluation on, an insert of several documents streams too: each document is assembled alone and
handed to them as it passes, so the heap grows by one document, not the message. The failure tests use a
scripted upstream (a WirePeer) because they must see exactly which bytes arrived: a malformed
document late in a streamed insert closes the client's connection and the upstream connection
(it holds part of a message), no complete insert reaches the upstream, and other connections go on.
"""
from __future__ import annotations

import json
import os
import struct
import time
import urllib.request

import bson
import pymongo
import pytest

from malloc_counter import preload_env, read_counter
from stats_helpers import ROUTING_FILE
from wire_peer import OP_MSG, RawClient, header, next_request_id

pytestmark = pytest.mark.needs_proxy

SANITIZED = "ASAN_OPTIONS" in os.environ or "TSAN_OPTIONS" in os.environ
MIB = 1 << 20
FORWARD_ONLY = ("--stats.enabled", "false", "--evaluation.enabled", "false")


def _big_docs(count: int = 14) -> list[dict]:
    return [{"_id": i, "pad": bytes([65 + i]) * 1_000_000, "n": i} for i in range(count)]  # one ~14 MB batch


def _stored(uri: str) -> list[dict]:
    with pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000, socketTimeoutMS=60000) as c:
        return list(c.test.bigin.find({}).sort("_id", 1))


@pytest.mark.skipif(SANITIZED, reason="a sanitizer's quarantine keeps freed memory resident")
@pytest.mark.parametrize("write_concern", [1, 0])
def test_large_insert_through_the_proxy_arrives_whole_and_is_not_held_whole(ferretdb, proxy, workdir, write_concern):
    docs = _big_docs()
    log = workdir / "malloc.log"
    px = proxy(ferretdb.uri, *FORWARD_ONLY, env=preload_env(workdir, log))
    with pymongo.MongoClient(ferretdb.uri) as direct:
        direct.test.bigin.drop()
    with pymongo.MongoClient(px.uri, maxPoolSize=1, socketTimeoutMS=60000, w=write_concern) as c:
        assert c.admin.command("ping")["ok"] == 1.0
        heap_before = read_counter(px.process.pid, log, "bytes")
        c.test.bigin.insert_many(docs)  # one OP_MSG with a ~14 MB document sequence (w=0: moreToCome)
        heap_growth = read_counter(px.process.pid, log, "bytes") - heap_before
        # The connection goes on after it (w=0 gets no reply: a ping proves the insert was framed right).
        assert c.admin.command("ping")["ok"] == 1.0
    print(f"~14 MB insert (w={write_concern}): heap handed out {heap_growth / MIB:.2f} MiB")
    deadline = time.monotonic() + 20
    while len(stored := _stored(ferretdb.uri)) < len(docs) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert stored == docs
    # Taken whole (before), the frame buffer alone was the message's size.
    assert heap_growth < 1 * MIB, f"the proxy allocated {heap_growth / MIB:.1f} MiB for a 14 MB insert"


def test_large_insert_streamed_with_tls_on_both_sides(ferretdb_factory, tls_material, proxy, workdir):
    m = tls_material
    fdb = ferretdb_factory(tls={"cert": m["server_cert"], "key": m["server_key"], "ca": m["ca"]})
    upstream = fdb.tls_uri(m["ca"], m["client_pem"])
    docs = _big_docs()
    with pymongo.MongoClient(upstream) as direct:
        direct.test.bigin.drop()
    # Under a sanitizer (its stage runs the TLS tests) the relay is checked for correctness only: the
    # malloc counter cannot be preloaded before the sanitizer's runtime.
    log = workdir / "malloc.log"
    px = proxy(upstream, *FORWARD_ONLY, "--tls-cert-file", m["server_cert"], "--tls-key-file", m["server_key"],
               tls_ca=m["ca"], env=None if SANITIZED else preload_env(workdir, log))
    with pymongo.MongoClient(px.uri, maxPoolSize=1, socketTimeoutMS=60000) as c:
        assert c.admin.command("ping")["ok"] == 1.0
        heap_before = 0 if SANITIZED else read_counter(px.process.pid, log, "bytes")
        c.test.bigin.insert_many(docs)
        heap_growth = 0 if SANITIZED else read_counter(px.process.pid, log, "bytes") - heap_before
    assert _stored(upstream) == docs
    if not SANITIZED:
        print(f"~14 MB insert over TLS: heap handed out {heap_growth / MIB:.2f} MiB")
        assert heap_growth < 1 * MIB, f"the proxy allocated {heap_growth / MIB:.1f} MiB for a 14 MB insert over TLS"


def _admin_json(px, path: str) -> dict:
    with urllib.request.urlopen(px.admin_url + path, timeout=30) as r:
        return json.load(r)


def _everything_on(hops: str, ferretdb_factory, tls_material, proxy, workdir):
    """A proxy with statistics, routing and evaluation on in front of a fresh FerretDB, plain or TLS on
    both hops; with the malloc counter preloaded (not under a sanitizer, whose runtime comes first):
    (proxy, upstream URI, a function giving the bytes the proxy's heap handed out so far, or None)."""
    m = tls_material
    log = workdir / "malloc.log"
    env = None if SANITIZED else preload_env(workdir, log)
    if hops == "tls":
        fdb = ferretdb_factory(tls={"cert": m["server_cert"], "key": m["server_key"], "ca": m["ca"]})
        upstream = fdb.tls_uri(m["ca"], m["client_pem"])
        px = proxy(upstream, "--routing", str(ROUTING_FILE), "--tls-cert-file", m["server_cert"],
                   "--tls-key-file", m["server_key"], tls_ca=m["ca"], admin=True, env=env)
    else:
        upstream = ferretdb_factory().uri
        px = proxy(upstream, "--routing", str(ROUTING_FILE), admin=True, env=env)
    heap = None if SANITIZED else (lambda: read_counter(px.process.pid, log, "bytes"))
    return px, upstream, heap


def _heap_growth_of(px, heap, write) -> int:
    """Runs `write(client)` through the proxy on one connection, which must go on after it: the bytes
    the proxy's heap handed out meanwhile (0 when `heap` is None)."""
    with pymongo.MongoClient(px.uri, maxPoolSize=1, socketTimeoutMS=60000) as c:
        assert c.admin.command("ping")["ok"] == 1.0
        before = heap() if heap else 0
        write(c)
        growth = heap() - before if heap else 0
        assert c.admin.command("ping")["ok"] == 1.0
    return growth


@pytest.mark.parametrize("hops", ["plain", "tls"])
def test_large_insert_with_statistics_and_evaluation_on_streams_one_document_at_a_time(
        hops, ferretdb_factory, tls_material, proxy, workdir):
    # Statistics, targeting and evaluation take an insert's documents one at a time as they pass
    # (issue 29): the ~14 MB insert is never held whole, and every document is still counted, the
    # insert targeted against the routing table by each document's shard key. The TLS variant also
    # runs in the sanitizer stage (without the heap count, which the malloc counter cannot take there).
    docs = [{"_id": i, "customerId": f"C{(i * 700) % 5000:04d}", "pad": bytes([65 + i]) * 1_000_000} for i in range(14)]
    px, upstream, heap = _everything_on(hops, ferretdb_factory, tls_material, proxy, workdir)
    counted = heap is not None
    heap_growth = _heap_growth_of(px, heap, lambda c: c.shop.orders.insert_many(docs))
    with pymongo.MongoClient(upstream) as direct:
        assert list(direct.shop.orders.find({"_id": {"$in": [d["_id"] for d in docs]}}).sort("_id", 1)) == docs
    if counted:
        print(f"~14 MB insert, everything on ({hops}): heap handed out {heap_growth / MIB:.2f} MiB")
        # One document at a time (~1 MB each, plus the evaluation's bounded copies), not the message.
        assert heap_growth < 4 * MIB, f"the proxy allocated {heap_growth / MIB:.1f} MiB for a 14 MB insert"
    inserts = [s for s in _admin_json(px, "/stats")["shapes"] if s["ns"] == "shop.orders" and s["command"] == "insert"]
    assert len(inserts) == 1 and inserts[0]["count"] == 1, inserts
    assert inserts[0]["bytesIn"] > 14_000_000  # the whole message's size, though the observers saw its head
    # Customers spread over the chunks of orders_6shards.json: each document to one shard, several in all.
    assert inserts[0]["targeting"]["multi"] == 1, inserts[0]
    report = _admin_json(px, "/evaluate")
    orders = [n for n in report["namespaces"] if n["ns"] == "shop.orders"]
    assert orders and orders[0]["inserts"] == len(docs), orders
    assert px.alive()


@pytest.mark.parametrize("hops", ["plain", "tls"])
def test_one_document_that_is_the_whole_insert_streams_with_everything_on(hops, ferretdb_factory, tls_material, proxy,
                                                                          workdir):
    # One ~15 MB document is the whole insert: it is taken in pieces as it passes (issue 29), its
    # shard key (after the large field) read from what was kept of it and the evaluation given its
    # digest, so the heap grows by neither the document nor the message. Before, it was held whole.
    doc = {"_id": 1, "pad": b"p" * 15_000_000, "note": "x" * 300, "customerId": "C2600", "meta": {"region": "eu"}}
    px, upstream, heap = _everything_on(hops, ferretdb_factory, tls_material, proxy, workdir)
    counted = heap is not None
    heap_growth = _heap_growth_of(px, heap, lambda c: c.shop.orders.insert_one(doc))
    with pymongo.MongoClient(upstream) as direct:
        assert direct.shop.orders.find_one({"_id": 1}) == doc
    if counted:
        print(f"one ~15 MB document, everything on ({hops}): heap handed out {heap_growth / MIB:.2f} MiB")
        assert heap_growth < 4 * MIB, f"the proxy allocated {heap_growth / MIB:.1f} MiB for a 15 MB document"
    stats = _admin_json(px, "/stats")
    inserts = [s for s in stats["shapes"] if s["ns"] == "shop.orders" and s["command"] == "insert"]
    assert len(inserts) == 1 and inserts[0]["count"] == 1, inserts
    assert inserts[0]["bytesIn"] > 15_000_000
    # Read after the 15 MB field, C2600 targets shardD in orders_6shards.json (a key not read would
    # count as null: shardA).
    assert inserts[0]["targeting"]["single"] == 1, inserts[0]
    ops = {s["name"]: s["ops"] for s in stats["shards"]}
    assert ops["shardD"] == 1 and sum(ops.values()) == 1, ops
    report = _admin_json(px, "/evaluate")
    orders = [n for n in report["namespaces"] if n["ns"] == "shop.orders"]
    assert orders and orders[0]["inserts"] == 1, orders
    assert px.alive()


# ---- a scripted upstream: which bytes of a streamed request arrived ----------------------------


def _insert_frame(documents: bytes, collection: str = "orders") -> bytes:
    body = bson.encode({"insert": collection, "$db": "shop", "ordered": True})
    seq = b"documents\x00" + documents
    payload = struct.pack("<I", 0) + b"\x00" + body + b"\x01" + struct.pack("<i", 4 + len(seq)) + seq
    return header(16 + len(payload), next_request_id(), 0, OP_MSG) + payload


def _flag_document(doc_id: int, flag: int, pad: int = 1_500_000) -> bytes:
    # {_id, pad: "yyyy...", flag: <bool byte>}: a bool byte of 2 is invalid BSON, 1.5 MB into the message.
    elements = (b"\x10_id\x00" + struct.pack("<i", doc_id) +
                b"\x02pad\x00" + struct.pack("<i", pad + 1) + b"y" * pad + b"\x00" +
                b"\x08flag\x00" + bytes([flag]))
    return struct.pack("<i", 4 + len(elements) + 1) + elements + b"\x00"


def test_a_streamed_insert_reaches_the_upstream_byte_for_byte(wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri, *FORWARD_ONLY)
    frame = _insert_frame(_flag_document(1, 1) + _flag_document(2, 0))
    with RawClient.for_address(px.address, timeout=30) as rc:
        rc.hello()
        rc.send(frame)
        reply = rc.recv_message(timeout=30)
        assert reply is not None and reply.effective.body.get("ok") == 1.0
    f = peer.wait_for(lambda f: f.command_name == "insert", timeout=10)
    assert f is not None
    raw = f.message.effective.raw
    assert len(raw) == len(frame) and raw[16:] == frame[16:], "the streamed insert changed on its way"


@pytest.mark.parametrize("where", ["late", "first document"])
def test_a_malformed_streamed_insert_closes_its_connections_and_only_them(wire_peer, proxy, where):
    peer = wire_peer()
    px = proxy(peer.uri, *FORWARD_ONLY)
    docs = _flag_document(1, 1) + _flag_document(2, 2) if where == "late" else _flag_document(1, 2) + _flag_document(2, 1)
    with RawClient.for_address(px.address, timeout=10) as bystander, RawClient.for_address(px.address, timeout=10) as rc:
        bystander.hello()
        rc.hello()
        try:
            rc.send(_insert_frame(docs))
        except OSError:
            pass  # the proxy may close before the last bytes are taken
        closed, got = rc.drain(timeout=10)
        assert closed and not got, "the proxy answered or kept open a connection that sent invalid BSON"
        time.sleep(0.3)
        assert not [f for f in peer.frames_snapshot() if f.command_name == "insert"], "a malformed insert reached the upstream whole"
        # The other client's connection is untouched.
        assert bystander.command({"ping": 1}).effective.body.get("ok") == 1.0
        ok = bystander.command({"insert": "orders", "documents": [{"_id": 3}]}, db="shop")
        assert ok.effective.body.get("ok") == 1.0
    assert px.alive()
