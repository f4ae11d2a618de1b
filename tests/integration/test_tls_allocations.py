"""The TLS forward path allocates nothing per operation once warm (issue 19).

The proxy runs under bench/malloc_counter.c (LD_PRELOAD, built here), TLS toward the client and toward
a TLS FerretDB; one TLS connection sends pings back to back; the counter's totals are read with SIGUSR2
before and after. Before the writer coroutine was kept per connection, every flush on a TLS stream
spawned one (its frame and co_spawn's state from the heap): several allocations per operation.
"""
from __future__ import annotations

import socket
import ssl
import struct
import time
from pathlib import Path

import bson
import pytest

from malloc_counter import preload_env, read_counter



def _op_msg(request_id: int, body: dict) -> bytes:
    payload = struct.pack("<I", 0) + b"\x00" + bson.encode(body)
    return struct.pack("<iiii", 16 + len(payload), request_id, 0, 2013) + payload


def _read_reply(sock) -> bytes:
    head = b""
    while len(head) < 4:
        head += sock.recv(4 - len(head))
    (length,) = struct.unpack("<i", head)
    rest = b""
    while len(rest) < length - 4:
        rest += sock.recv(length - 4 - len(rest))
    return head + rest


def _totals(pid: int, log: Path) -> int:
    return read_counter(pid, log, "total")


@pytest.mark.needs_proxy
def test_tls_both_hops_allocate_nothing_per_operation(ferretdb_factory, tls_material, proxy, workdir):
    m = tls_material
    fdb = ferretdb_factory(tls={"cert": m["server_cert"], "key": m["server_key"], "ca": m["ca"]})
    log = workdir / "malloc.log"
    px = proxy(fdb.tls_uri(m["ca"], m["client_pem"]), "--tls-cert-file", m["server_cert"], "--tls-key-file",
               m["server_key"], "--stats.enabled", "false", "--evaluation.enabled", "false", tls_ca=m["ca"],
               env=preload_env(workdir, log))
    pid = px.process.proc.pid

    ctx = ssl.create_default_context(cafile=m["ca"])
    with socket.create_connection(("127.0.0.1", px.port)) as raw, ctx.wrap_socket(raw, server_hostname="localhost") as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        rid = 1

        def ping():
            nonlocal rid
            rid += 1
            s.sendall(_op_msg(rid, {"ping": 1, "$db": "admin"}))
            reply = _read_reply(s)
            assert struct.unpack("<i", reply[8:12])[0] == rid

        s.sendall(_op_msg(rid, {"hello": 1, "$db": "admin"}))
        _read_reply(s)
        for _ in range(300):  # warm-up: buffers, Asio's recycled operation memory
            ping()
        ops = 2000
        start = _totals(pid, log)
        began = time.monotonic()
        for _ in range(ops):
            ping()
        took = time.monotonic() - began
        allocations = _totals(pid, log) - start
        # Control: the same time with no traffic. The rest of the process (the upstream probe's TLS
        # handshakes, timers) allocates by the clock, and a busy machine stretches the pings' time.
        start = _totals(pid, log)
        time.sleep(took)
        background = _totals(pid, log) - start
    # One per flush would be >= 2 per ping.
    per_op = max(0, allocations - background) / ops
    assert per_op < 0.05, f"{allocations} allocations in {ops} pings over TLS ({took:.1f} s), {background} in the same time idle"
