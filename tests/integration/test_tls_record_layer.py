"""The proxy's own TLS record layer (proxy/tls_channel.*, issue 19) against real TLS peers.

OpenSSL reads and writes the sockets through the proxy's BIO; these tests push it where a record
layer breaks: many messages in one record and messages across records, a reader so slow that the
proxy's writes stop half-way through a record (OpenSSL holds the rest and the write resumes), 15 MB
messages both ways, and the upstream certificate's name and address checks that Asio's engine did
before. FerretDB (TLS, client certificates required) is the upstream; raw `ssl` sockets and pymongo
are the clients.
"""
from __future__ import annotations

import socket
import ssl
import threading
import struct
import subprocess
import time

import bson
import pymongo
from latency import assert_action_does_not_stall
import pytest


def _op_msg(request_id: int, body: dict) -> bytes:
    payload = struct.pack("<I", 0) + b"\x00" + bson.encode(body)
    return struct.pack("<iiii", 16 + len(payload), request_id, 0, 2013) + payload


def _recv_exact(sock, n: int, pause: float = 0.0) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(min(n - len(out), 4096 if pause else 1 << 20))
        assert chunk, "the proxy closed the connection"
        out += chunk
        if pause:
            time.sleep(pause)
    return bytes(out)


def _read_reply(sock, pause: float = 0.0) -> tuple[int, dict]:
    head = _recv_exact(sock, 16)
    length, _, response_to, opcode = struct.unpack("<iiii", head)
    assert opcode == 2013
    body = _recv_exact(sock, length - 16, pause)
    assert body[4] == 0  # one kind-0 section
    return response_to, bson.decode(body[5:])


def _tls_client(port: int, ca, rcvbuf: int | None = None) -> ssl.SSLSocket:
    raw = socket.socket()
    if rcvbuf:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    raw.settimeout(60)
    raw.connect(("127.0.0.1", port))
    context = ssl.create_default_context(cafile=str(ca))
    return context.wrap_socket(raw, server_hostname="localhost")


@pytest.fixture
def tls_proxy(ferretdb_factory, tls_material, proxy):
    m = tls_material
    fdb = ferretdb_factory(tls={"cert": m["server_cert"], "key": m["server_key"], "ca": m["ca"]})
    return proxy(fdb.tls_uri(m["ca"], m["client_pem"]), "--tls-cert-file", m["server_cert"],
                 "--tls-key-file", m["server_key"], tls_ca=m["ca"])


@pytest.mark.needs_proxy
def test_pipelined_messages_inside_and_across_records(tls_proxy, tls_material):
    # 300 pings in one write: the client's TLS layer packs them into 16 KiB records, so most records
    # hold many messages and some messages start in one record and end in the next.
    with _tls_client(tls_proxy.port, tls_material["ca"]) as s:
        pad = "x" * 97  # 7 messages do not divide a record evenly
        s.sendall(b"".join(_op_msg(i, {"ping": 1, "$db": "admin", "comment": pad}) for i in range(1, 301)))
        got = [_read_reply(s) for _ in range(300)]
    assert [r for r, _ in got] == list(range(1, 301))
    assert all(body.get("ok") == 1.0 for _, body in got)


@pytest.mark.needs_proxy
def test_large_messages_both_ways_to_a_slow_reader(tls_proxy, tls_material):
    # 15 MB each way; the client's receive buffer is small and it reads in 4 KiB steps with pauses,
    # so the proxy's writes toward it stop in the middle of records and must resume exactly there.
    data = bytes(range(256)) * (15 * 1024 * 1024 // 256)
    with _tls_client(tls_proxy.port, tls_material["ca"], rcvbuf=8192) as s:
        s.sendall(_op_msg(1, {"insert": "big", "$db": "tlsrecords", "documents": [{"_id": 1, "data": data}]}))
        assert _read_reply(s)[1].get("n") == 1
        s.sendall(_op_msg(2, {"find": "big", "$db": "tlsrecords", "filter": {"_id": 1}}))
        response_to, body = _read_reply(s, pause=0.0002)
    assert response_to == 2
    got = body["cursor"]["firstBatch"][0]["data"]
    assert len(got) == len(data) and got == data
    # The proxy still serves other clients after the slow one.
    with pymongo.MongoClient(tls_proxy.uri, serverSelectionTimeoutMS=10000) as c:
        assert c.tlsrecords.big.count_documents({}) == 1


def _server_certificate(m, name: str, san: str):
    """A server certificate from the test CA whose only subjectAltName is `san`."""
    d = m["dir"]
    (d / f"{name}.ext").write_text(f"basicConstraints=CA:FALSE\nsubjectAltName={san}\nextendedKeyUsage=serverAuth\n")
    run = lambda *a: subprocess.run(["openssl", *a], cwd=d, check=True, capture_output=True)  # noqa: E731
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
    run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext")
    return d / f"{name}.crt", d / f"{name}.key"


def _upstream_outcome(proxy, fdb, m, host: str) -> str:
    px = proxy(f"mongodb://{host}:{fdb.tls_port}/?tls=true&tlsCAFile={m['ca']}&tlsCertificateKeyFile={m['client_pem']}",
               "--upstream_pool.backoff_max_ms", "500")
    try:
        with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=3000, connectTimeoutMS=3000) as c:
            c.admin.command("ping")
        return "ok"
    except pymongo.errors.PyMongoError:
        return px.stderr_text()


@pytest.mark.needs_proxy
@pytest.mark.parametrize("san, host, accepted", [
    ("DNS:localhost", "localhost", True),
    ("DNS:elsewhere.test", "localhost", False),     # the name is not in the certificate
    ("IP:127.0.0.1", "127.0.0.1", True),            # an address is checked as an address
    ("DNS:localhost", "127.0.0.1", False),          # an address must be in the certificate as one
])
def test_upstream_certificate_must_name_the_host(ferretdb_factory, tls_material, proxy, san, host, accepted):
    m = tls_material
    cert, key = _server_certificate(m, "named" + str(abs(hash((san, host)))), san)
    fdb = ferretdb_factory(tls={"cert": cert, "key": key, "ca": m["ca"]})
    outcome = _upstream_outcome(proxy, fdb, m, host)
    if accepted:
        assert outcome == "ok", outcome[-3000:]
    else:
        assert outcome != "ok"
        assert "certificate verify failed" in outcome and "mismatch" in outcome, outcome[-3000:]


@pytest.mark.needs_proxy
@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_clients_on_tls_1_2_and_1_3(tls_proxy, tls_material, version):
    # The record layer is version-agnostic (OpenSSL frames the records): a TLS 1.2 client, whose
    # records and session handling differ, is served like a TLS 1.3 one, small and large messages alike.
    raw = socket.create_connection(("127.0.0.1", tls_proxy.port), timeout=30)
    context = ssl.create_default_context(cafile=str(tls_material["ca"]))
    context.minimum_version = context.maximum_version = version
    with context.wrap_socket(raw, server_hostname="localhost") as s:
        assert s.version() == {ssl.TLSVersion.TLSv1_2: "TLSv1.2", ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version]
        data = "y" * (3 * 1024 * 1024)
        s.sendall(_op_msg(1, {"insert": "v", "$db": "tlsversions", "documents": [{"_id": str(version), "data": data}]}))
        assert _read_reply(s)[1].get("n") == 1
        s.sendall(_op_msg(2, {"find": "v", "$db": "tlsversions", "filter": {"_id": str(version)}}))
        response_to, body = _read_reply(s)
    assert response_to == 2 and body["cursor"]["firstBatch"][0]["data"] == data


@pytest.mark.needs_proxy
def test_tls_1_2_renegotiation_is_refused_at_once(tls_proxy, tls_material):
    # Renegotiation is off (SSL_OP_NO_RENEGOTIATION): a TLS 1.2 client asking for it (s_client's "R")
    # gets an alert and a closed connection at once, never a hung one; other clients are served.
    client = subprocess.Popen(["openssl", "s_client", "-connect", f"127.0.0.1:{tls_proxy.port}", "-tls1_2",
                               "-CAfile", str(tls_material["ca"])],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    time.sleep(1)  # the handshake
    client.stdin.write(b"R\n")
    client.stdin.flush()
    out, _ = client.communicate(timeout=20)  # would hang if the proxy neither answered nor closed
    assert b"RENEGOTIATING" in out and b"no renegotiation" in out, out[-2000:]
    with pymongo.MongoClient(tls_proxy.uri, serverSelectionTimeoutMS=10000) as c:
        assert c.admin.command("ping")["ok"] == 1.0
    assert "alert handshake failure" in tls_proxy.stderr_text()


def _tls_over_raw_socket(tls_proxy, tls_material):
    """A TLS client whose records the test writes itself: (raw socket, TLS object, outgoing BIO)."""
    context = ssl.create_default_context(cafile=str(tls_material["ca"]))
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    raw = socket.create_connection(("127.0.0.1", tls_proxy.port), timeout=60)
    while True:  # the handshake over the raw socket
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            raw.sendall(outgoing.read())
            incoming.write(raw.recv(65536))
    raw.sendall(outgoing.read())
    return raw, tls, outgoing


def _prepared_send(tls_proxy, tls_material, message: bytes, record_bytes: int):
    """Connects, encrypts `message` in records of `record_bytes` now, and returns an action that
    sends them and checks the message arrived whole (its reply came back)."""
    raw, tls, outgoing = _tls_over_raw_socket(tls_proxy, tls_material)
    for i in range(0, len(message), record_bytes):
        tls.write(message[i:i + record_bytes])
    ciphertext = outgoing.read()

    def send():
        try:
            raw.sendall(ciphertext)
            assert raw.recv(65536)  # the insert's reply, encrypted: the message arrived whole
        finally:
            raw.close()
    return send


@pytest.mark.needs_proxy
def test_a_message_in_one_byte_records_does_not_hold_other_connections(tls_proxy, tls_material):
    # Each TLS record costs a decryption however little it carries: a 2 MB message sent as 2 million
    # one-byte records (encrypted beforehand, written back to back) is ~0.8 s of the proxy's work here.
    # Other connections on the same event loop are served meanwhile: the proxy reads one record per
    # read and goes back to the loop whenever the socket runs dry (the kernel's receive window bounds
    # what one turn can find), never decrypting a whole message's records in one go. The pings' waits
    # are compared with those while the same message arrives in full-size records (the control).
    message = _op_msg(1, {"insert": "drip", "$db": "tlsrecords", "documents": [{"_id": 1, "data": "z" * (2 << 20)}]})
    drip = _prepared_send(tls_proxy, tls_material, message, 1)  # encrypted before the clock starts
    assert_action_does_not_stall(tls_proxy.uri, drip, lambda: _prepared_send(tls_proxy, tls_material, message, 16384)(),
                                 "a 2 MB message in one-byte TLS records")
