"""Shard-key verdicts on workloads the seeds do not cover, through the proxy with pymongo: a chat
whose busiest room holds ~21% of the messages (a compound key, not its prefix; the hashed _id
suffix, which spreads the busy room's messages, over the rising ts), and accounts
moved between tenants by whole-document replacements (a shard-key update although the filter pins
the key). The unit-level versions are tests/evaluation/unseen_workloads_test.cpp and
replacement_key_change_test.cpp."""
from __future__ import annotations

import datetime
import json
import random
import urllib.request

import pytest
from pymongo import MongoClient

pytestmark = [pytest.mark.needs_proxy, pytest.mark.slow]


def _report(p) -> dict:
    with urllib.request.urlopen(p.admin_url + "/evaluate", timeout=30) as r:
        return json.loads(r.read().decode())


def _ns(report: dict, ns: str) -> dict:
    return next(n for n in report["namespaces"] if n["ns"] == ns)


def _candidate(ns_report: dict, key: dict) -> dict:
    return next(c for c in ns_report["candidates"] if c["key"] == key)


def test_chat_with_a_busy_room_takes_room_then_hashed_id(proxy, ferretdb):
    p = proxy(ferretdb.uri, admin=True)
    rng = random.Random(11)
    rooms = [f"room-{i:04d}" for i in range(400)]
    rng.shuffle(rooms)
    weights = [0.21, 0.084, 0.063, 0.042] + [(1 - 0.399) / 396] * 396
    t = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    with MongoClient(p.uri) as c:
        coll = c.chat.messages
        coll.drop()
        for _ in range(8):
            docs = []
            for room in rng.choices(rooms, weights, k=1000):
                t += datetime.timedelta(milliseconds=rng.randint(1, 200))
                docs.append({"roomId": room, "ts": t, "text": "hello"})
            coll.insert_many(docs)
        for i, room in enumerate(rng.choices(rooms, weights, k=60)):
            if i % 3:
                list(coll.find({"roomId": room}).sort("ts", -1).limit(20))
            else:
                list(coll.find({"roomId": room, "ts": {"$gte": t - datetime.timedelta(hours=1), "$lt": t}}))
    chat = _ns(_report(p), "chat.messages")
    # {roomId: 1, ts: 1} keeps the busy room's new messages in one chunk (uneven inserts); the hashed
    # _id after the room spreads them and still targets every read to the room's chunks.
    assert chat["verdict"]["key"] == {"roomId": 1, "_id": "hashed"}, chat["verdict"]["text"]
    assert _candidate(chat, {"roomId": 1})["simulatedCluster"]["jumboRisk"] is True
    assert _candidate(chat, {"roomId": 1, "ts": 1})["frequency"]["pass"] is True
    keys = [c["key"] for c in chat["candidates"]]
    assert keys.index({"roomId": 1, "ts": 1}) < keys.index({"roomId": 1})


def test_replacements_moving_an_account_to_another_tenant_are_key_updates(proxy, ferretdb):
    p = proxy(ferretdb.uri, admin=True)
    with MongoClient(p.uri) as c:
        coll = c.app.accounts
        coll.drop()
        coll.insert_many([{"tenantId": f"t{i % 40}", "accountId": f"a{i}", "plan": "free"} for i in range(400)])
        for i in range(40):
            list(coll.find({"tenantId": f"t{i % 40}", "accountId": f"a{i}"}))
            # An ORM's save: the same tenant written back (the first statements), then a move.
            to = f"t{i % 40}" if i < 30 else f"t{(i + 1) % 40}"
            coll.replace_one({"tenantId": f"t{i % 40}", "accountId": f"a{i}"},
                             {"tenantId": to, "accountId": f"a{i}", "plan": "pro"})
        coll.find_one_and_replace({"tenantId": "t5", "accountId": "a45"},
                                  {"tenantId": "t6", "accountId": "a45", "plan": "pro"})
    accounts = _ns(_report(p), "app.accounts")
    key = _candidate(accounts, {"tenantId": 1, "accountId": 1})
    assert key["writeDistribution"]["percentageOfShardKeyUpdates"] > 0
    assert key["shardscope"]["mutability"]["pass"] is False
