"""Credentials for the proxy's own connections (issue 17 item 1) and redaction (issue 14 item 16).

FerretDB with SCRAM users (--setup-username/--setup-password, --test-enable-new-auth) stands in
for an auth-enabled cluster: without credentials every internal read fails with
"Command find requires authentication". FerretDB is no mongos, so discovery then reads empty
config.* collections: an empty routing table, which is enough to show it authenticated. The
data path stays pass-through: applications authenticate through the proxy themselves.
"""
from __future__ import annotations


import pymongo
import pytest

from harness import REPO_ROOT, FerretDB, free_port
from stats_helpers import http_request, wait_for

USER, PASSWORD = "shardscope-svc", "Cluster-Pw-5u8x"
ROUTING = str(REPO_ROOT / "tests" / "data" / "routing" / "orders_6shards.json")
RULE = "shop.orders: orderId -> customerId collection=shardscope.orderCustomers"


class AuthFerretDB(FerretDB):
    def argv(self) -> list[str]:
        return super().argv() + ["--setup-database=admin", f"--setup-username={USER}",
                                 f"--setup-password={PASSWORD}", "--test-enable-new-auth"]


@pytest.fixture
def auth_ferretdb(workdir, ferretdb_binary):
    f = AuthFerretDB(workdir / "authdb", binary=ferretdb_binary).start()
    yield f
    f.stop()


def _authed(uri_hostport: str) -> str:
    return f"mongodb://{USER}:{PASSWORD}@{uri_hostport}/?authSource=admin"


def _password_file(workdir) -> str:
    p = workdir / "cluster-password"
    p.write_text(PASSWORD + "\n")
    return str(p)


def _readyz(px) -> int:
    return http_request(px.admin_url, path="/readyz")[0]


@pytest.mark.needs_proxy
def test_discovery_authenticates_with_cluster_auth(auth_ferretdb, workdir, proxy):
    discovery = ["--routing.discovery", "true", "--routing.discovery_interval_s", "1"]
    without = proxy(auth_ferretdb.uri, *discovery, admin=True)
    assert wait_for(lambda: "requires authentication" in without.stderr_text()), without.stderr_text()[-2000:]
    assert _readyz(without) == 503

    with_auth = proxy(auth_ferretdb.uri, *discovery, "--cluster_auth.username", USER,
                      "--cluster_auth.password_file", _password_file(workdir), admin=True)
    assert wait_for(lambda: _readyz(with_auth) == 200), with_auth.stderr_text()[-2000:]
    assert "requires authentication" not in with_auth.stderr_text()
    # The data path is untouched: an application still authenticates itself, through the proxy.
    with pymongo.MongoClient(_authed(with_auth.address), serverSelectionTimeoutMS=5000) as c:
        assert c.admin.command("ping")["ok"] == 1
    with pymongo.MongoClient(with_auth.uri, serverSelectionTimeoutMS=5000) as c:
        with pytest.raises(pymongo.errors.OperationFailure, match="requires authentication"):
            c.shop.orders.find_one({})


@pytest.mark.needs_proxy
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-1"])
def test_mapping_collection_writes_with_cluster_auth(auth_ferretdb, workdir, proxy, mechanism):
    px = proxy(auth_ferretdb.uri, "--routing", ROUTING, "--rewrite-rule", RULE, "--cluster_auth.username", USER,
               "--cluster_auth.mechanism", mechanism, admin=True,
               env={"SHARDSCOPE_CLUSTER_PASSWORD": PASSWORD})
    with pymongo.MongoClient(_authed(px.address)) as app:
        app.shop.orders.insert_many([{"_id": i, "orderId": f"O{i:05d}", "customerId": f"C{i:04d}"} for i in range(20)])
    with pymongo.MongoClient(_authed(auth_ferretdb.address)) as direct:
        # Before cluster_auth the mapping writes failed: "Command insert requires authentication".
        assert wait_for(lambda: direct.shardscope.orderCustomers.count_documents({}) == 20), px.stderr_text()[-2000:]
    assert "requires authentication" not in px.stderr_text()


@pytest.mark.needs_proxy
def test_no_password_reaches_a_log_line_or_an_endpoint(ferretdb, workdir, proxy):
    upstream_pw, mirror_pw, cluster_pw = "Upstream-Pw-3k9q", "Mirror-Pw-7r2m", "ClusterEnv-Pw-4n6t"
    closed, mirror_port = free_port(), free_port()
    px = proxy(f"mongodb://app:{upstream_pw}@127.0.0.1:{closed},{ferretdb.address}/?authSource=admin",
               "--mirror.upstream", f"mongodb://shadow:{mirror_pw}@127.0.0.1:{mirror_port}/?serverSelectionTimeoutMS=300",
               "--mirror.mode", "all", "--mirror.use_cluster_auth", "true",
               "--routing.discovery", "true", "--routing.discovery_interval_s", "1",
               "--cluster_auth.username", "svc", admin=True, log_level="debug",
               env={"SHARDSCOPE_CLUSTER_PASSWORD": cluster_pw})
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=5000) as c:  # start-up, mirrored reads and writes
        c.shop.orders.insert_one({"_id": 1, "orderId": "O1", "customerId": "C1"})
        for _ in range(5):
            c.shop.orders.find_one({"_id": 1})
    assert wait_for(lambda: "routing discovery failed" in px.stderr_text())  # discovery failures
    ferretdb.stop()  # every upstream unreachable
    assert wait_for(lambda: "upstream unreachable" in px.stderr_text())
    bodies = {path: http_request(px.admin_url, path=path)[2].decode()
              for path in ("/config", "/stats", "/metrics", "/readyz", "/mirror", "/rewrite")}
    log = px.stderr_text()
    px.stop()
    log = px.stderr_text()  # the drain and exit lines too
    assert "upstream mongodb://app:***@" in log, log[:2000]
    for pw in (upstream_pw, mirror_pw, cluster_pw):
        assert pw not in log, [line for line in log.splitlines() if pw in line][:5]
        for path, body in bodies.items():
            assert pw not in body, (path, body[:2000])


@pytest.mark.needs_proxy
def test_uri_passwords_stay_out_of_the_log_with_only_uri_credentials(ferretdb, proxy):
    """The same with no new key at all (fails before on the start-up line and the mirror warning)."""
    upstream_pw, mirror_pw = "Upstream-Pw-8h1z", "Mirror-Pw-2c5v"
    px = proxy(f"mongodb://app:{upstream_pw}@{ferretdb.address}/",
               "--mirror.upstream", f"mongodb://shadow:{mirror_pw}@127.0.0.1:{free_port()}/?serverSelectionTimeoutMS=300",
               "--mirror.mode", "all", admin=True)
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=5000) as c:
        c.shop.orders.find_one({})
    bodies = [http_request(px.admin_url, path=p)[2].decode() for p in ("/config", "/stats", "/readyz", "/mirror")]
    px.stop()
    log = px.stderr_text()
    assert "shardscope proxy listening" in log
    for pw in (upstream_pw, mirror_pw):
        assert pw not in log, [line for line in log.splitlines() if pw in line][:5]
        assert all(pw not in b for b in bodies)
