"""A retryable write sent again counts once in /evaluate (docs/evaluation.md "Where it comes from"),
through the real proxy with pymongo against the scripted mongos stand-in that keeps retryable-write
semantics (tests/support/retryable_mongos.py: NOT mongos; a repeated (lsid, txnNumber) is answered
from its record, as mongos and the shards do). FerretDB runs a repeated insert again (a duplicate
key error), so it cannot show this.

pymongo retries a retryable write after a network error; here the retry is sent as a driver sends
it (same session, same txnNumber). main counted the documents of both attempts.
"""
from __future__ import annotations

import json
import urllib.request

import pymongo
from bson.int64 import Int64


def _evaluation(p) -> dict:
    with urllib.request.urlopen(p.admin_url + "/evaluate", timeout=30) as r:
        return json.load(r)


def test_a_retried_insert_counts_once(proxy):
    from retryable_mongos import RetryableMongos

    peer = RetryableMongos().start()
    try:
        p = proxy(peer.uri, "--evaluation.candidates", 'app.kv: {"k": 1}', admin=True)
        with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=10000) as client:
            client.app.kv.insert_one({"_id": 0, "k": "k0"})  # pymongo's own retryable write
            session = client.start_session()
            insert = {"insert": "kv", "documents": [{"_id": 1, "k": "k1"}, {"_id": 2, "k": "k2"}],
                      "txnNumber": Int64(1000)}
            assert client.app.command(insert, session=session)["n"] == 2
            # The retry (same session, same txnNumber): the stand-in answers from its record.
            assert client.app.command(insert, session=session)["n"] == 2
            assert peer.replayed == 1
            assert len(peer.store["app.kv"]) == 3
        report = _evaluation(p)
        kv = next(n for n in report["namespaces"] if n["ns"] == "app.kv")
        assert kv["inserts"] == 3  # main: 5
        assert report["retriedInserts"] == 2
        assert report["refusedInserts"] == 0
    finally:
        peer.stop()
