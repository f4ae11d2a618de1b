"""mongodb+srv:// upstreams (issue 17 item 6): before, the proxy refused them ("must start with
mongodb://").

A real DNS server on loopback (dnsmasq) serves the SRV, TXT and A records of a test domain the
system resolver does not know; the proxy is pointed at it with upstream_dns.server, so every
look-up here goes through libresolv to dnsmasq. FerretDB instances stand in for the mongos.
"""
from __future__ import annotations

import json
import subprocess
import time

import pymongo
import pytest

from dns_server import Dnsmasq, dnsmasq_bin
from harness import FerretDB, proxy_env
from stats_helpers import http_request, wait_for

pytestmark = [pytest.mark.needs_proxy,
              pytest.mark.skipif(dnsmasq_bin() is None, reason="dnsmasq not installed (scripts/setup.sh)")]

SRV_HOST = "cluster0.test.example"
SRV_NAME = f"_mongodb._tcp.{SRV_HOST}"


@pytest.fixture
def dns(workdir):
    d = Dnsmasq(workdir / "dns")
    yield d
    d.stop()


def _records(*mongos: tuple[str, int], txt: str | None = None, ip: str = "127.0.0.1"):
    """SRV records for `mongos` (label, port) under SRV_HOST's parent domain, their A records, a TXT."""
    srv = [(SRV_NAME, f"{label}.test.example", port) for label, port in mongos]
    a = [(f"{label}.test.example", ip) for label, _ in mongos]
    return {"srv": srv, "a": a, "txt": [(SRV_HOST, txt)] if txt else []}


def _upstreams(px) -> dict:
    status, _, body = http_request(px.admin_url, path="/stats")
    assert status == 200
    return {h["address"]: h for h in json.loads(body)["upstreams"]["hosts"]}


def _srv_status(px) -> dict:
    status, _, body = http_request(px.admin_url, path="/stats")
    assert status == 200
    return json.loads(body)["upstreamSrv"]


def _mark(f: FerretDB, name: str) -> None:
    with pymongo.MongoClient(f.uri) as c:
        c.srv_test.marker.delete_many({})
        c.srv_test.marker.insert_one({"host": name})


def _served_by(uri: str) -> str:
    with pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000, maxPoolSize=1) as c:
        return c.srv_test.marker.find_one({}, {"_id": 0})["host"]


def test_pymongo_reaches_ferretdb_found_through_srv(ferretdb, dns, proxy):
    dns.start(**_records(("mongos1", ferretdb.port), txt="authSource=admin"))
    px = proxy(f"mongodb+srv://{SRV_HOST}/?tls=false", "--upstream_dns.server", dns.server, admin=True)
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=5000) as c:
        c.shop.items.insert_one({"_id": 1, "sku": "A1"})
        assert c.shop.items.find_one({"_id": 1})["sku"] == "A1"
    hosts = _upstreams(px)
    assert list(hosts) == [f"mongos1.test.example:{ferretdb.port}"], hosts
    assert hosts[f"mongos1.test.example:{ferretdb.port}"]["state"] == "up"
    assert f"upstream SRV {SRV_NAME}: mongos mongos1.test.example:{ferretdb.port}" in px.stderr_text()


def test_srv_means_tls_unless_the_uri_says_otherwise(ferretdb, dns, proxy):
    """The specification's default: FerretDB speaks no TLS, so the handshake fails and says so."""
    dns.start(**_records(("mongos1", ferretdb.port)))
    px = proxy(f"mongodb+srv://{SRV_HOST}/", "--upstream_dns.server", dns.server, admin=True)
    assert wait_for(lambda: "TLS handshake" in _upstreams(px)[f"mongos1.test.example:{ferretdb.port}"]["lastError"])
    assert "(TLS)" in px.stderr_text()


def _check_config(*args: str) -> subprocess.CompletedProcess:
    from harness import shardscope_bin
    return subprocess.run([str(shardscope_bin()), "proxy", "--check-config", "--listen", "127.0.0.1:0", *args],
                          capture_output=True, text=True, timeout=60, env=proxy_env())


@pytest.mark.parametrize("records, uri_host, message", [
    (_records(("mongos1", 27017)), "missing.test.example", "no SRV records for _mongodb._tcp.missing.test.example"),
    ({"srv": [(SRV_NAME, "mongos1.evil.example", 27017)], "a": [], "txt": []}, SRV_HOST,
     "points to 'mongos1.evil.example', outside the domain of cluster0.test.example"),
    (_records(("mongos1", 27017), txt="authSource=admin&tls=false"), SRV_HOST,
     "TXT record sets 'tls'; only authSource, replicaSet and loadBalanced may be set there"),
    ({**_records(("mongos1", 27017)), "txt": [(SRV_HOST, "authSource=admin"), (SRV_HOST, "replicaSet=rs0")]}, SRV_HOST,
     "2 TXT records; at most one is allowed"),
    ({"srv": [(SRV_NAME, "mongos1.test.example", 27017)], "a": [], "txt": []}, SRV_HOST,
     "no address for SRV target mongos1.test.example"),
], ids=["no-srv", "outside-domain", "forbidden-txt-option", "two-txt-records", "no-a-record"])
def test_bad_records_refuse_to_start_with_a_clear_error(dns, records, uri_host, message):
    dns.start(**records)
    r = _check_config("--upstream", f"mongodb+srv://{uri_host}/?tls=false", "--upstream_dns.server", dns.server)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr, r.stderr


def test_dns_server_not_answering_is_an_error_not_a_hang(dns):
    dns.start(**_records(("mongos1", 27017)))
    port = dns.port
    dns.stop()
    # Not a hang: _check_config's subprocess timeout fails the test if the look-up never ends.
    r = _check_config("--upstream", f"mongodb+srv://{SRV_HOST}/", "--upstream_dns.server", f"127.0.0.1:{port}")
    assert r.returncode == 2 and f"SRV look-up of {SRV_NAME} failed" in r.stderr, r.stderr


def test_rescan_follows_dns_changes(ferretdb_factory, dns, proxy):
    a, b = ferretdb_factory(), ferretdb_factory()
    _mark(a, "a")
    _mark(b, "b")
    dns.start(**_records(("mongos1", a.port)))
    px = proxy(f"mongodb+srv://{SRV_HOST}/?tls=false", "--upstream_dns.server", dns.server,
               "--upstream_dns.rescan_min_ms", "200", admin=True)
    assert _served_by(px.uri) == "a"
    # The cluster moves to another mongos: the pool follows, new connections go there.
    dns.restart(**_records(("mongos2", b.port)))
    assert wait_for(lambda: list(_upstreams(px)) == [f"mongos2.test.example:{b.port}"]), _upstreams(px)
    assert _served_by(px.uri) == "b"
    # DNS down: the proxy keeps the list it has (and keeps serving).
    dns.stop()
    assert wait_for(lambda: "SRV look-up" in _srv_status(px)["lastError"]), _srv_status(px)
    assert list(_upstreams(px)) == [f"mongos2.test.example:{b.port}"]
    assert _served_by(px.uri) == "b"
    # A host outside the domain is ignored on a rescan; the valid one is added.
    dns.start(srv=[(SRV_NAME, f"mongos2.test.example", b.port), (SRV_NAME, "mongos9.evil.example", 1),
                   (SRV_NAME, "mongos1.test.example", a.port)],
              a=[("mongos2.test.example", "127.0.0.1"), ("mongos1.test.example", "127.0.0.1")])
    assert wait_for(lambda: set(_upstreams(px)) == {f"mongos2.test.example:{b.port}", f"mongos1.test.example:{a.port}"})
    assert "SRV rescan" in px.stderr_text()
    status = _srv_status(px)
    assert status["name"] == SRV_NAME and status["rescans"] >= 3 and status["failures"] >= 1, status


class _AuthFerretDB(FerretDB):
    USER, PASSWORD = "srv-svc", "Srv-Cluster-Pw-9d2k"

    def argv(self) -> list[str]:
        return super().argv() + ["--setup-database=admin", f"--setup-username={self.USER}",
                                 f"--setup-password={self.PASSWORD}", "--test-enable-new-auth"]


def test_discovery_connects_through_the_same_srv_resolution(workdir, ferretdb_binary, dns, proxy):
    """Discovery (libmongoc) reaches a host only dnsmasq knows, with the TXT record's authSource."""
    f = _AuthFerretDB(workdir / "authdb", binary=ferretdb_binary).start()
    try:
        dns.start(**_records(("mongos1", f.port), txt="authSource=admin"))
        app_pw = "Srv-App-Pw-4h7w"
        px = proxy(f"mongodb+srv://app:{app_pw}@{SRV_HOST}/?tls=false", "--upstream_dns.server", dns.server,
                   "--routing.discovery", "true", "--routing.discovery_interval_s", "1",
                   "--cluster_auth.username", _AuthFerretDB.USER, admin=True, log_level="debug",
                   env={"SHARDSCOPE_CLUSTER_PASSWORD": _AuthFerretDB.PASSWORD})
        assert wait_for(lambda: http_request(px.admin_url, path="/readyz")[0] == 200), px.stderr_text()[-3000:]
        bodies = [http_request(px.admin_url, path=p)[2].decode() for p in ("/config", "/stats", "/readyz")]
        px.stop()
        log = px.stderr_text()
        assert "mongodb+srv://app:***@" in log, log[:2000]
        for pw in (app_pw, _AuthFerretDB.PASSWORD):
            assert pw not in log, [line for line in log.splitlines() if pw in line][:5]
            assert all(pw not in b for b in bodies)
    finally:
        f.stop()
