"""Replay keeps the captured global order of writes across connections (issue 14, item 18).

Writes alternate between three pymongo clients (one connection each) through the proxy with a full
capture: every step appends its number to one array (so the final array is the order the writes
ran in) and updates a document another connection inserted just before. Replayed as fast as
possible onto fresh FerretDBs, eight times: the final data must equal the original every time.
Before the fix each connection was replayed on its own thread with no order between them, so the
array came out shuffled and `$set`s ran before their inserts. Reads wait for the writes captured
before them too (a listIndexes of a collection another connection creates must not fail)."""
from __future__ import annotations

import json
import subprocess

import pymongo
import pytest

from mirror_helpers import dump

pytestmark = pytest.mark.needs_proxy

STEPS = 30
CLIENTS = 3
RUNS = 8


def interleaved_writes(uri: str) -> None:
    clients = [pymongo.MongoClient(uri, maxPoolSize=1, directConnection=True) for _ in range(CLIENTS)]
    try:
        for c in clients:  # open each pool's connection before the workload
            c.admin.command("ping")
        for i in range(STEPS):
            mine = clients[i % CLIENTS].order.items
            other = clients[(i + 1) % CLIENTS].order.items
            mine.update_one({"_id": "log"}, {"$push": {"steps": i}}, upsert=True)
            mine.insert_one({"_id": i, "by": i % CLIENTS})
            other.update_one({"_id": i}, {"$set": {"touched": True}})
            # A read that fails unless it runs after another connection's write (listIndexes of a
            # collection that write creates): reads wait for the writes captured before them.
            clients[i % CLIENTS].order[f"c{i}"].insert_one({"_id": i})
            third = clients[(i + 2) % CLIENTS].order
            assert third.command("listIndexes", f"c{i}")["ok"] == 1
        # A read on a connection between writes of others: reads are not ordered, writes are.
        assert clients[0].order.items.count_documents({"touched": True}) == STEPS
    finally:
        for c in clients:
            c.close()


def replay(binary, cap, uri, *extra):
    return subprocess.run([str(binary), "replay", str(cap), "--upstream", uri, *extra],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def interleaved_capture(ferretdb_factory, proxy, workdir):
    original = ferretdb_factory()
    cap = workdir / "interleaved.cap"
    px = proxy(original.uri, "--capture.file", str(cap), "--capture.mode", "full")
    interleaved_writes(px.uri)
    px.stop()  # flushes the capture
    want = dump(pymongo.MongoClient(original.uri))
    log = next(d for d in want["order.items"] if d["_id"] == "log")
    assert log["steps"] == list(range(STEPS))
    return want, cap


def test_replay_keeps_the_global_order_of_writes(interleaved_capture, ferretdb_factory, shardscope_binary):
    want, cap = interleaved_capture
    mismatches, changed = [], []
    for run in range(RUNS):
        fresh = ferretdb_factory()
        r = replay(shardscope_binary, cap, fresh.uri, "--no-timing", "--json")
        assert r.returncode == 0, r.stdout + r.stderr
        got = dump(pymongo.MongoClient(fresh.uri))
        if got != want:
            mismatches.append(run)
        if json.loads(r.stdout)["outcomeChanged"]:
            changed.append(run)
        fresh.stop()
    assert not mismatches, f"replay lost or reordered writes in runs {mismatches} of {RUNS}"
    assert not changed, f"a read ran before the write it saw in runs {changed} of {RUNS}"


def test_replay_per_connection_order_is_still_available(interleaved_capture, ferretdb_factory, shardscope_binary):
    _, cap = interleaved_capture
    fresh = ferretdb_factory()
    r = replay(shardscope_binary, cap, fresh.uri, "--no-timing", "--order", "connection")
    assert r.returncode == 0, r.stdout + r.stderr
    assert dump(pymongo.MongoClient(fresh.uri))  # something was replayed
    r = replay(shardscope_binary, cap, fresh.uri, "--order", "sideways")
    assert r.returncode != 0 and "--order" in r.stderr


def test_replay_follows_a_cursor_to_another_connection(ferretdb_factory, proxy, workdir, shardscope_binary):
    """Drivers pool connections: a getMore may go out on another connection than its find. The
    replay maps the cursor across connections and waits for the find's reply before the getMore."""
    from bson.int64 import Int64
    from wire_peer import RawClient

    original = ferretdb_factory()
    cap = workdir / "cursor.cap"
    px = proxy(original.uri, "--capture.file", str(cap), "--capture.mode", "full")
    with RawClient.for_address(px.address) as a, RawClient.for_address(px.address) as b:
        a.hello()
        b.hello()
        a.command({"insert": "c", "documents": [{"_id": i} for i in range(10)]}, db="cur")
        first = a.command({"find": "c", "filter": {}, "sort": {"_id": 1}, "batchSize": 2}, db="cur").reply_doc
        more = b.command({"getMore": Int64(first["cursor"]["id"]), "collection": "c", "batchSize": 3}, db="cur").reply_doc
        assert [d["_id"] for d in more["cursor"]["nextBatch"]] == [2, 3, 4], more
    px.stop()
    for extra in ((), ("--no-timing",)):
        fresh = ferretdb_factory()
        r = replay(shardscope_binary, cap, fresh.uri, "--json", *extra)
        assert r.returncode == 0, r.stdout + r.stderr
        result = json.loads(r.stdout)
        assert result["errors"] == 0 and result["outcomeChanged"] == 0, (result, r.stderr)


def as_version_1(data: bytes) -> bytes:
    """The same capture in format version 1 (no sequence field): what older builds wrote."""
    import struct

    from wire_peer import crc32c

    meta_len = struct.unpack_from("<I", data, 36)[0]
    head = bytearray(data[:40 + meta_len])
    struct.pack_into("<H", head, 8, 1)
    out = bytearray(head + struct.pack("<I", crc32c(bytes(head))))
    at = 40 + meta_len + 4
    while at < len(data):
        length = struct.unpack_from("<I", data, at)[0]
        record = data[at:at + 40] + data[at + 48:at + 48 + length]
        out += record + struct.pack("<I", crc32c(record))
        at += 48 + length + 4
    return bytes(out)


def test_version_1_captures_still_replay_in_order(interleaved_capture, ferretdb_factory, shardscope_binary, workdir):
    want, cap = interleaved_capture
    r = subprocess.run([str(shardscope_binary), "replay", str(cap), "--validate"], capture_output=True, text=True)
    assert r.returncode == 0 and json.loads(r.stdout)["version"] == 2, r.stdout + r.stderr
    old = workdir / "v1.cap"
    old.write_bytes(as_version_1(cap.read_bytes()))
    r = subprocess.run([str(shardscope_binary), "replay", str(old), "--validate"], capture_output=True, text=True)
    assert r.returncode == 0 and json.loads(r.stdout)["version"] == 1, r.stdout + r.stderr
    fresh = ferretdb_factory()
    r = replay(shardscope_binary, old, fresh.uri, "--no-timing")
    assert r.returncode == 0, r.stdout + r.stderr
    assert dump(pymongo.MongoClient(fresh.uri)) == want
