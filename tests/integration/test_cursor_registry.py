"""One cursor registry for the whole proxy: a getMore or killCursors that arrives on another client
connection than the find that opened the cursor (drivers pick any free pooled connection) is
classified by that cursor's shard set, not recorded as `unclassified`. The scripted peer serves
cursors to any connection, as mongos does."""
from __future__ import annotations

from wire_peer import RawClient

from stats_helpers import ROUTING_FILE, get_stats, http_request

NS = "shop.orders"


def _shapes(stats: dict, command: str) -> list[dict]:
    return [s for s in stats["shapes"] if s["command"] == command and s["ns"] == NS]


def test_getmore_and_killcursors_on_other_connections_use_the_cursors_shards(wire_peer, proxy):
    peer = wire_peer()
    px = proxy(peer.uri, "--routing", str(ROUTING_FILE), admin=True)
    with RawClient.for_address(px.address) as opener, RawClient.for_address(px.address) as other, \
            RawClient.for_address(px.address) as third:
        for c in (opener, other, third):
            c.hello()
        opener.command({"insert": "orders", "documents": [{"_id": i, "status": "pending"} for i in range(30)]},
                       db="shop")
        assert http_request(px.admin_url, "POST", "/stats/reset")[0] == 200
        # status is not the shard key: the find goes to all six shards, and so does its cursor.
        first = opener.command({"find": "orders", "filter": {"status": "pending"}, "batchSize": 5}, db="shop")
        cursor = first.effective.body["cursor"]["id"]
        assert cursor != 0
        more = other.command({"getMore": cursor, "collection": "orders", "batchSize": 5}, db="shop")
        assert len(more.effective.body["cursor"]["nextBatch"]) == 5
        killed = third.command({"killCursors": "orders", "cursors": [cursor]}, db="shop")
        assert killed.effective.body["ok"] == 1.0

    stats = get_stats(px.admin_url)
    finds = _shapes(stats, "find")
    assert finds and finds[0]["class"] == "broadcast", finds
    getmores = _shapes(stats, "getMore")
    assert getmores and all(s["class"] == "multi" for s in getmores), getmores
    kills = _shapes(stats, "killCursors")
    assert kills and all(s["class"] == "multi" for s in kills), kills
    assert stats["totals"]["targeting"]["unclassified"] == 0, stats["totals"]
