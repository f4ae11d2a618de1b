"""TLS on both sides of the proxy, certificates made at test time with openssl.

FerretDB listens with TLS and requires client certificates (--listen-tls-ca-file);
the proxy reaches it with tls=true&tlsCAFile&tlsCertificateKeyFile in the
upstream URI and serves clients with --tls-cert-file/--tls-key-file.
"""
from __future__ import annotations

import pymongo
import pytest

from scenarios import check_expected, run_pymongo_scenario


def _tls_ferretdb(ferretdb_factory, tls_material):
    m = tls_material
    return ferretdb_factory(tls={"cert": m["server_cert"], "key": m["server_key"], "ca": m["ca"]})


def _upstream_tls_uri(fdb, m) -> str:
    return fdb.tls_uri(m["ca"], m["client_pem"])


@pytest.mark.needs_proxy
def test_tls_toward_upstream(ferretdb_factory, tls_material, proxy):
    m = tls_material
    fdb = _tls_ferretdb(ferretdb_factory, m)
    px = proxy(_upstream_tls_uri(fdb, m))
    direct = run_pymongo_scenario(_upstream_tls_uri(fdb, m), "direct_tls_up", big=False)
    through = run_pymongo_scenario(px.uri, "proxied_tls_up", big=False)
    check_expected(direct, big=False)
    assert through == direct


@pytest.mark.needs_proxy
def test_tls_toward_clients(ferretdb, tls_material, proxy):
    m = tls_material
    px = proxy(ferretdb.uri, "--tls-cert-file", m["server_cert"], "--tls-key-file", m["server_key"],
               tls_ca=m["ca"])
    assert "tls=true" in px.uri
    direct = run_pymongo_scenario(ferretdb.uri, "direct_tls_cl", big=False)
    through = run_pymongo_scenario(px.uri, "proxied_tls_cl", big=False)
    check_expected(direct, big=False)
    assert through == direct


@pytest.mark.slow
@pytest.mark.needs_proxy
def test_tls_both_sides_with_client_certificates(ferretdb_factory, tls_material, proxy):
    m = tls_material
    fdb = _tls_ferretdb(ferretdb_factory, m)
    px = proxy(_upstream_tls_uri(fdb, m), "--tls-cert-file", m["server_cert"], "--tls-key-file", m["server_key"],
               "--tls-ca-file", m["ca"], tls_ca=m["ca"])
    direct = run_pymongo_scenario(_upstream_tls_uri(fdb, m), "direct_tls_both")
    through = run_pymongo_scenario(px.uri + f"&tlsCertificateKeyFile={m['client_pem']}", "proxied_tls_both")
    check_expected(direct)
    assert through == direct


@pytest.mark.needs_proxy
def test_plaintext_client_to_tls_listener_fails_and_proxy_survives(ferretdb, tls_material, proxy):
    m = tls_material
    px = proxy(ferretdb.uri, "--tls-cert-file", m["server_cert"], "--tls-key-file", m["server_key"],
               tls_ca=m["ca"])
    plain = pymongo.MongoClient(f"mongodb://127.0.0.1:{px.port}/", serverSelectionTimeoutMS=1500)
    with pytest.raises(pymongo.errors.PyMongoError):
        plain.admin.command("ping")
    plain.close()
    good = pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=10000)
    try:
        assert good.admin.command("ping")["ok"] == 1
    finally:
        good.close()
    assert px.alive()


def test_tls_ferretdb_direct_requires_client_cert(ferretdb_factory, tls_material):
    """Sanity check of the fixture itself (no proxy): FerretDB insists on a client certificate."""
    m = tls_material
    fdb = _tls_ferretdb(ferretdb_factory, m)
    c = pymongo.MongoClient(fdb.tls_uri(m["ca"], m["client_pem"]), serverSelectionTimeoutMS=10000)
    try:
        assert c.admin.command("ping")["ok"] == 1
    finally:
        c.close()
    c = pymongo.MongoClient(fdb.tls_uri(m["ca"]), serverSelectionTimeoutMS=1500)
    with pytest.raises(pymongo.errors.PyMongoError):
        c.admin.command("ping")
    c.close()


def test_failed_client_handshake_closes_at_once(ferretdb, tls_material, proxy):
    """A client whose TLS handshake fails is closed when it fails, not when timeouts.connect_ms
    runs out (before: a failed handshake waited for the timer). The timer is 60 s here, so a close
    within a tenth of it shows the proxy did not wait for it, whatever the machine's speed."""
    import socket
    import time
    connect_s = 60
    m = tls_material
    px = proxy(ferretdb.uri, "--tls-cert-file", m["server_cert"], "--tls-key-file", m["server_key"],
               "--timeouts.connect_ms", str(connect_s * 1000), tls_ca=m["ca"])
    s = socket.create_connection(("127.0.0.1", px.port), timeout=connect_s + 10)
    try:
        start = time.monotonic()
        s.sendall(b"\x3a\x00\x00\x00" + b"\x01\x00\x00\x00" * 2 + b"\xdd\x07\x00\x00" + b"\x00" * 42)  # plaintext OP_MSG
        data = b"x"
        while data:  # the server's alert, if any, then EOF
            data = s.recv(4096)
        assert time.monotonic() - start < connect_s / 10
    finally:
        s.close()
    assert px.alive()
