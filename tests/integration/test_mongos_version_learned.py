"""The mongos release is learned from a real hello passing through the proxy (issue 17 item 5) and
changes how a single-document update without the shard key is classified: refused by mongos
before 7.1 (InvalidOptions: "unclassified" in /stats), a two-phase broadcast from 7.1.

The scripted peer answers hello as mongos does ("msg": "isdbgrid", maxWireVersion 21 = 7.0,
22 = 7.1); no routing.mongos_version is configured, so only that hello can teach the version.
"""
from __future__ import annotations

import json

import pymongo
import pytest

from harness import REPO_ROOT
from stats_helpers import http_request
from wire_peer import WirePeer

ROUTING = str(REPO_ROOT / "tests" / "data" / "routing" / "orders_6shards.json")


class MongosHelloPeer(WirePeer):
    """A wire peer whose hello says it is a mongos, as a real one does."""

    def _hello(self, conn, cmd, legacy):
        reply = super()._hello(conn, cmd, legacy)
        reply["msg"] = "isdbgrid"
        return reply


def _stats(px) -> dict:
    status, _, body = http_request(px.admin_url, path="/stats")
    assert status == 200
    return json.loads(body)


@pytest.mark.needs_proxy
@pytest.mark.parametrize("wire, version, update_class, two_phase", [
    (21, "7.0", "unclassified", False),  # mongos 7.0 refuses it
    (22, "7.1", "broadcast", True),      # mongos 7.1 runs it in two phases on every shard
    (25, "8.0", "broadcast", True),
])
def test_version_from_hello_changes_single_document_update_targeting(proxy, wire, version, update_class, two_phase):
    peer = MongosHelloPeer(max_wire_version=wire).start()
    try:
        px = proxy(f"mongodb://127.0.0.1:{peer.port}/", "--routing", ROUTING, admin=True)
        before = _stats(px)["mongosVersion"]
        assert before == {"version": None, "source": "unknown", "twoPhaseWrites": True}
        with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=5000) as c:
            c.admin.command("ping")
            with pytest.raises(pymongo.errors.OperationFailure):  # the peer has no update command
                c.shop.orders.update_one({"status": "new"}, {"$set": {"flag": 1}})
        stats = _stats(px)
        assert stats["mongosVersion"] == {"version": version, "source": "learned", "twoPhaseWrites": two_phase}
        update = next(s for s in stats["shapes"] if s["ns"] == "shop.orders" and s["command"] == "update")
        assert update["class"] == update_class, update
    finally:
        peer.stop()


@pytest.mark.needs_proxy
def test_configured_version_wins_over_the_hello(proxy):
    peer = MongosHelloPeer(max_wire_version=22).start()
    try:
        px = proxy(f"mongodb://127.0.0.1:{peer.port}/", "--routing", ROUTING, "--routing.mongos_version", "7.0",
                   admin=True)
        with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=5000) as c:
            with pytest.raises(pymongo.errors.OperationFailure):
                c.shop.orders.update_one({"status": "new"}, {"$set": {"flag": 1}})
        stats = _stats(px)
        assert stats["mongosVersion"] == {"version": "7.0", "source": "configured", "twoPhaseWrites": False}
        update = next(s for s in stats["shapes"] if s["ns"] == "shop.orders" and s["command"] == "update")
        assert update["class"] == "unclassified"
    finally:
        peer.stop()
