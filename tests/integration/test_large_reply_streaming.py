"""Large replies streamed to the client as they arrive (issue 29, item 2).

With no feature reading replies (statistics and evaluation off), a large plain OP_MSG reply goes to
the client in 64 KiB chunks once its head is read: the proxy's peak memory for a ~15 MB reply stays
far below the reply's size, and its bytes reach the client before the upstream has sent all of them.
Read through pymongo against FerretDB, the results equal a direct read. The failure tests use a
scripted upstream (a WirePeer subclass) because they need a reply cut at an exact point: the
upstream dying mid-reply, and the client leaving mid-reply; either way the other side's connection
is closed, never left holding half a message.
"""
from __future__ import annotations

import contextlib
import os
import socket
import threading
import time

import pymongo
import pytest

from malloc_counter import preload_env, read_counter
from stats_helpers import get_stats
from wire_peer import WirePeer, encode_op_msg

SANITIZED = "ASAN_OPTIONS" in os.environ or "TSAN_OPTIONS" in os.environ
MIB = 1 << 20
FORWARD_ONLY = ("--stats.enabled", "false", "--evaluation.enabled", "false")


def _status_kib(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))


def _read_large(uri: str, **kw) -> list[dict]:
    with pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000, socketTimeoutMS=60000, **kw) as c:
        return list(c.test.big.find({}, batch_size=1000).sort("_id", 1))


def _insert_large(uri: str, count: int = 14, **kw) -> list[dict]:
    docs = [{"_id": i, "pad": bytes([65 + i]) * 1_000_000} for i in range(count)]  # one ~14 MB batch
    with pymongo.MongoClient(uri, **kw) as c:
        c.test.big.drop()
        c.test.big.insert_many(docs)
    return docs


def _find_counts(stats: dict) -> tuple[int, int, int]:
    """test.big's finds: (requests, replies timed, errors), summed over their shapes."""
    shapes = [s for s in stats["shapes"] if s["ns"] == "test.big" and s["command"] == "find"]
    return (sum(s["count"] for s in shapes), sum(s["latency"]["count"] for s in shapes),
            sum(s["errors"]["total"] for s in shapes))


@pytest.mark.skipif(SANITIZED, reason="a sanitizer's quarantine keeps freed memory resident")
def test_large_find_through_the_proxy_equals_direct_and_is_not_held_whole(ferretdb, proxy, workdir):
    docs = _insert_large(ferretdb.uri)
    direct = _read_large(ferretdb.uri)
    assert len(direct) == len(docs)

    # Under the malloc counter: its `bytes` (every byte malloc handed out) bounds how far the heap
    # can have grown while the reply passed; VmHWM is the peak resident memory.
    log = workdir / "malloc.log"
    px = proxy(ferretdb.uri, *FORWARD_ONLY, env=preload_env(workdir, log))
    pid = px.process.pid
    with pymongo.MongoClient(px.uri, maxPoolSize=1) as c:
        assert c.admin.command("ping")["ok"] == 1.0
        hwm_before, heap_before = _status_kib(pid, "VmHWM"), read_counter(pid, log, "bytes")
        via_proxy = list(c.test.big.find({}, batch_size=1000).sort("_id", 1))
        heap_growth = read_counter(pid, log, "bytes") - heap_before
        peak_growth = (_status_kib(pid, "VmHWM") - hwm_before) * 1024
    print(f"~14 MB reply: heap handed out {heap_growth / MIB:.2f} MiB, peak RSS grew {peak_growth / MIB:.2f} MiB")
    assert via_proxy == direct
    # Taken whole (before issue 29) the frame buffer alone was the reply's size.
    assert heap_growth < 1 * MIB, f"the proxy allocated {heap_growth / MIB:.1f} MiB for a 14 MB reply"
    assert peak_growth < 4 * MIB, f"the proxy's peak memory grew {peak_growth / MIB:.1f} MiB for a 14 MB reply"



@pytest.mark.skipif(SANITIZED, reason="a sanitizer's quarantine keeps freed memory resident")
def test_large_find_streamed_with_statistics_and_evaluation_on(ferretdb, proxy, workdir):
    # Statistics and evaluation read only a reply's top-level fields: the cursor batch streams and
    # they see the rest (ok, cursor.id, ns), so /stats counts the reply and its bytes as before.
    _insert_large(ferretdb.uri)
    direct = _read_large(ferretdb.uri)
    log = workdir / "malloc.log"
    px = proxy(ferretdb.uri, admin=True, env=preload_env(workdir, log))
    with pymongo.MongoClient(px.uri, maxPoolSize=1, socketTimeoutMS=60000) as c:
        assert c.admin.command("ping")["ok"] == 1.0
        stats_before = get_stats(px.admin_url)
        totals = stats_before["totals"]
        heap_before = read_counter(px.process.pid, log, "bytes")
        via_proxy = list(c.test.big.find({}, batch_size=1000).sort("_id", 1))
        heap_growth = read_counter(px.process.pid, log, "bytes") - heap_before
        stats_after = get_stats(px.admin_url)
        after = stats_after["totals"]
        with pytest.raises(pymongo.errors.OperationFailure):
            c.test.big.find_one({"$bogus": 1})
        errors_after_a_failure = get_stats(px.admin_url)["totals"]["errors"]
    assert via_proxy == direct
    print(f"~14 MB reply, statistics on: heap handed out {heap_growth / MIB:.2f} MiB")
    assert heap_growth < 1 * MIB, f"the proxy allocated {heap_growth / MIB:.1f} MiB for a 14 MB reply"
    # The streamed reply is counted once (its shape's latency is recorded when the reply is), with its
    # bytes, and not as an error; a failed command still is. Totals' reply count would also take the
    # driver's monitor hellos, which a slow run lets in.
    find_before, find_after = _find_counts(stats_before), _find_counts(stats_after)
    assert find_after == (find_before[0] + 1, find_before[1] + 1, find_before[2]), (find_before, find_after)
    assert after["bytesOut"] - totals["bytesOut"] >= 14_000_000
    assert after["errors"] == totals["errors"]
    assert errors_after_a_failure > after["errors"]


@pytest.mark.skipif(SANITIZED, reason="a sanitizer's quarantine keeps freed memory resident")
def test_large_find_streamed_with_tls_on_both_sides(ferretdb_factory, tls_material, proxy, workdir):
    m = tls_material
    fdb = ferretdb_factory(tls={"cert": m["server_cert"], "key": m["server_key"], "ca": m["ca"]})
    upstream = fdb.tls_uri(m["ca"], m["client_pem"])
    _insert_large(upstream)
    direct = _read_large(upstream)
    log = workdir / "malloc.log"
    px = proxy(upstream, *FORWARD_ONLY, "--tls-cert-file", m["server_cert"], "--tls-key-file", m["server_key"],
               tls_ca=m["ca"], env=preload_env(workdir, log))
    with pymongo.MongoClient(px.uri, maxPoolSize=1, socketTimeoutMS=60000) as c:
        assert c.admin.command("ping")["ok"] == 1.0
        heap_before = read_counter(px.process.pid, log, "bytes")
        via_proxy = list(c.test.big.find({}, batch_size=1000).sort("_id", 1))
        heap_growth = read_counter(px.process.pid, log, "bytes") - heap_before
    assert via_proxy == direct
    print(f"~14 MB reply over TLS: heap handed out {heap_growth / MIB:.2f} MiB")
    assert heap_growth < 1 * MIB, f"the proxy allocated {heap_growth / MIB:.1f} MiB for a 14 MB reply over TLS"


def test_compressed_replies_are_taken_whole_and_stay_correct(ferretdb, proxy):
    # The client writes zstd: its reply is compressed for it, from the whole frame (never streamed).
    _insert_large(ferretdb.uri)
    direct = _read_large(ferretdb.uri)
    px = proxy(ferretdb.uri, *FORWARD_ONLY, "--client-compressors", "zstd")
    assert _read_large(px.uri, compressors="zstd") == direct


def test_exhaust_stream_of_large_batches_through_the_proxy(wire_peer, proxy):
    # The first batch (a plain reply) streams; the exhaust batches (moreToCome) are taken whole.
    peer = wire_peer(compressors=())
    docs = _insert_large(peer.uri, count=12, directConnection=True)
    def read(uri):
        with pymongo.MongoClient(uri, directConnection=True, socketTimeoutMS=60000) as c:
            return list(c.test.big.find({}, batch_size=3, cursor_type=pymongo.CursorType.EXHAUST))
    direct = read(peer.uri)
    assert [d["_id"] for d in direct] == [d["_id"] for d in docs]
    before = peer.exhaust_replies
    px = proxy(peer.uri, *FORWARD_ONLY)
    assert read(px.uri) == direct
    assert peer.exhaust_replies > before


# ---- a scripted upstream: a reply cut at an exact point ---------------------------------------

REPLY_PAD = 16_000_000


class CutReplyPeer(WirePeer):
    """Answers `find` on "big" with a ~16 MB OP_MSG of which it sends the first half, then waits
    for the test (`go_on`) and either dies (`mode` "die") or waits for the proxy to close it."""

    def __init__(self, mode: str):
        super().__init__(compressors=())
        self.mode = mode
        self.go_on = threading.Event()
        self.upstream_closed_by_proxy = threading.Event()

    def _reply(self, conn, msg):
        body = msg.effective.body or {}
        if body.get("find") != "big":
            return super()._reply(conn, msg)
        doc = {"cursor": {"firstBatch": [{"_id": 1, "pad": "x" * REPLY_PAD}], "id": 0, "ns": "test.big"}, "ok": 1.0}
        reply = encode_op_msg(doc, response_to=msg.request_id)
        try:
            conn.sock.sendall(reply[: len(reply) // 2])
        except OSError:
            # The proxy closed this connection before the first half was all sent: its client left
            # while the socket buffers still held part of it.
            if self.mode == "client-leaves":
                self.upstream_closed_by_proxy.set()
            return b""
        self.go_on.wait(30)
        if self.mode == "die":
            return b""  # _serve closes the connection: the upstream died mid-reply
        if self.mode == "finish":
            conn.sock.sendall(reply[len(reply) // 2:])
            return None
        conn.sock.settimeout(20)
        try:
            conn.sock.sendall(reply[len(reply) // 2:])
            while conn.sock.recv(65536):  # the proxy closes this connection once its client left
                pass
            self.upstream_closed_by_proxy.set()
        except OSError:
            self.upstream_closed_by_proxy.set()
        return b""


def _send_find(sock: socket.socket) -> None:
    sock.sendall(encode_op_msg({"find": "big", "$db": "test"}))


def _read_until(sock: socket.socket, at_least: int, timeout: float) -> int:
    """Bytes read until `at_least` arrived or the connection ended (0 = EOF at once)."""
    sock.settimeout(timeout)
    got = 0
    try:
        while got < at_least:
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            got += len(chunk)
    except socket.timeout:
        pass  # reported by the caller's assertion
    return got


def _ping_works(px) -> None:
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=5000, socketTimeoutMS=5000) as c:
        assert c.admin.command("ping")["ok"] == 1.0


@contextlib.contextmanager
def _half_streamed_find(proxy, mode: str):
    """A raw client whose find the scripted upstream (`mode`) answers with half a ~16 MB reply;
    yields (peer, proxy, socket, bytes read) once the first 2 MiB reached the client."""
    peer = CutReplyPeer(mode).start()
    try:
        px = proxy(peer.uri, *FORWARD_ONLY)
        with socket.create_connection(("127.0.0.1", px.port), timeout=10) as sock:
            _send_find(sock)
            # The first half reaches the client while the upstream still holds the rest (before
            # issue 29 the proxy held it until the frame was whole: nothing arrived).
            got = _read_until(sock, 2 * MIB, timeout=15)
            assert got >= 2 * MIB, f"only {got} bytes of a streamed reply reached the client"
            yield peer, px, sock, got
    finally:
        peer.go_on.set()
        peer.stop()


def test_upstream_dying_mid_stream_closes_the_client_connection(proxy):
    with _half_streamed_find(proxy, "die") as (peer, px, sock, got):
        peer.go_on.set()
        rest = 0
        sock.settimeout(15)
        while chunk := sock.recv(1 << 20):  # EOF: the proxy closed the client connection
            rest += len(chunk)
        assert got + rest < REPLY_PAD, "a reply the upstream never finished arrived whole"
        assert px.alive()
        assert not peer.errors, peer.errors


def test_client_leaving_mid_stream_closes_the_upstream_connection(proxy):
    with _half_streamed_find(proxy, "client-leaves") as (peer, px, sock, _):
        sock.close()
        # The client is gone with half a reply read: the proxy closes its upstream connection
        # (whose reply can no longer go anywhere) instead of reading it on.
        peer.go_on.set()
        assert peer.upstream_closed_by_proxy.wait(25), "the upstream connection stayed open"
        assert px.alive()
        _ping_works(px)


def test_a_streamed_reply_is_whole_and_the_connection_goes_on(proxy):
    # A ~16 MB reply streamed from the scripted upstream arrives byte for byte, and the next
    # request on the same connection is answered.
    peer = CutReplyPeer("finish").start()
    try:
        px = proxy(peer.uri, *FORWARD_ONLY)
        peer.go_on.set()
        with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=5000, socketTimeoutMS=30000, maxPoolSize=1) as c:
            got = list(c.test.big.find({}))
            assert len(got) == 1 and len(got[0]["pad"]) == REPLY_PAD
            assert c.admin.command("ping")["ok"] == 1.0
    finally:
        peer.stop()


def test_a_reply_over_the_message_size_limit_is_refused_before_any_byte_streams(proxy):
    # maxMessageSizeBytes is checked on the header, before the stream decision: the client gets no
    # byte of the ~16 MB reply, its connection closes, and the proxy serves the next client.
    peer = CutReplyPeer("die").start()
    try:
        px = proxy(peer.uri, *FORWARD_ONLY, "--max-message-size", "8000000")
        with socket.create_connection(("127.0.0.1", px.port), timeout=10) as sock:
            _send_find(sock)
            sock.settimeout(15)
            assert sock.recv(1 << 20) == b"", "bytes of an over-limit reply reached the client"
        peer.go_on.set()
        assert px.alive()
        _ping_works(px)
    finally:
        peer.go_on.set()
        peer.stop()
