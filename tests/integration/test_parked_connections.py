"""Parked connections (issue 29, session.h): a side idle for 0.5 s ends its loop coroutine and leaves a
readability handler on its socket; bytes arriving start the loop again. FerretDB is the upstream.

These check what parking must not change: a parked connection answers as before (plain and TLS on
both hops, several park/wake cycles), a reply that went out through the outbox's writer coroutine
(which ends when its side parks) goes out whole before and after, and SIGTERM's drain closes parked
connections at once (a parked session runs no coroutine, so the server counts it until it is gone,
not until a coroutine of it ends).
"""
from __future__ import annotations

import socket
import ssl
import time

import pytest

from wire_peer import encode_op_msg, parse_message, read_frame, run_command

PARKED = 1.3  # seconds: past the 0.5 s after which a side parks, and the watchdog's check after it


def _connect(port: int, tls_ca: str | None = None) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if tls_ca:
        ctx = ssl.create_default_context(cafile=tls_ca)
        ctx.check_hostname = False
        sock = ctx.wrap_socket(sock)
    run_command(sock, {"hello": 1, "$db": "admin"})
    return sock


def _find_ids(sock: socket.socket, db: str, coll: str) -> list[int]:
    reply = run_command(sock, {"find": coll, "filter": {}, "sort": {"_id": 1}, "batchSize": 10_000, "$db": db})
    return [d["_id"] for d in reply["cursor"]["firstBatch"]]


@pytest.mark.needs_proxy
@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls-both-hops"])
def test_a_parked_connection_wakes_and_answers(ferretdb_factory, tls_material, proxy, tls):
    m = tls_material
    if tls:
        fdb = ferretdb_factory(tls={"cert": m["server_cert"], "key": m["server_key"], "ca": m["ca"]})
        px = proxy(fdb.tls_uri(m["ca"], m["client_pem"]), "--tls-cert-file", m["server_cert"],
                   "--tls-key-file", m["server_key"], tls_ca=m["ca"])
    else:
        px = proxy(ferretdb_factory().uri)
    sock = _connect(px.port, m["ca"] if tls else None)
    try:
        run_command(sock, {"insert": "p", "documents": [{"_id": i, "v": "x" * i} for i in range(50)], "$db": "parked"})
        for cycle in range(3):
            time.sleep(PARKED)  # both sides park
            assert _find_ids(sock, "parked", "p") == list(range(50 + cycle)), f"cycle {cycle}"
            # A write after waking, then the client side parks while the upstream side has just worked.
            run_command(sock, {"insert": "p", "documents": [{"_id": 50 + cycle}], "$db": "parked"})
    finally:
        sock.close()
    assert px.process.alive()


@pytest.mark.needs_proxy
def test_replies_that_waited_for_a_slow_reader_go_out_whole_across_parking(ferretdb, proxy):
    """Replies larger than the socket takes at once go through the outbox's writer coroutine: the
    client pipelines finds whose replies (~0.8 MB each, below the 1 MiB in-place size) together pass
    the kernel's send buffer, and reads nothing for a while, so the writer waits on the socket. Then
    the side parks (the idle writer ends), and the next round starts a writer again."""
    px = proxy(ferretdb.uri)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window: the proxy's writes go short
    sock.settimeout(30)
    sock.connect(("127.0.0.1", px.port))
    try:
        run_command(sock, {"hello": 1, "$db": "admin"})
        docs = [{"_id": i, "pad": "p" * 4000} for i in range(200)]
        run_command(sock, {"insert": "big", "documents": docs, "$db": "parked"})
        find = {"find": "big", "filter": {}, "sort": {"_id": 1}, "batchSize": 1000, "$db": "parked"}
        for cycle in range(3):
            time.sleep(PARKED)
            sock.sendall(b"".join(encode_op_msg(find) for _ in range(4)))
            time.sleep(0.3)  # the replies back up in the proxy meanwhile
            for n in range(4):
                raw = read_frame(sock)
                assert raw is not None, f"cycle {cycle}, reply {n}"
                batch = parse_message(raw).reply_doc["cursor"]["firstBatch"]
                assert [d["_id"] for d in batch] == list(range(200)), f"cycle {cycle}, reply {n}"
                assert all(d["pad"] == "p" * 4000 for d in batch)
    finally:
        sock.close()
    assert px.process.alive()


@pytest.mark.needs_proxy
def test_drain_closes_parked_connections_at_once(ferretdb, proxy):
    px = proxy(ferretdb.uri, "--timeouts.drain_ms", "20000")
    socks = [_connect(px.port) for _ in range(20)]
    try:
        time.sleep(PARKED)
        started = time.monotonic()
        code = px.process.stop(timeout=25)
        took = time.monotonic() - started
        # Nothing is in flight: drain closes every connection at once, not at the 20 s deadline.
        assert took < 5, f"drain took {took:.1f} s with only parked connections"
        assert code == 0
        for s in socks:
            s.settimeout(5)
            assert s.recv(1) == b""
        assert "drain deadline passed" not in px.process.stderr_text()
    finally:
        for s in socks:
            s.close()
