"""What an insert's reply proves (docs/evaluation.md "Where it comes from"), through the real proxy
with pymongo against FerretDB: a document the reply lists in writeErrors (a duplicate _id), or that
an ordered insert_many never reached after its first error, is not counted by /evaluate; an
unordered insert_many goes on past its errors and those it inserted are counted. The figures are
those of the collection the server holds.
"""
from __future__ import annotations

import json
import urllib.request

import pymongo
import pytest
from pymongo.errors import BulkWriteError

pytestmark = pytest.mark.needs_proxy


def _evaluation(admin_url: str) -> dict:
    with urllib.request.urlopen(admin_url + "/evaluate", timeout=30) as r:
        return json.loads(r.read().decode())


def _namespace(report: dict, ns: str) -> dict:
    return next(n for n in report["namespaces"] if n["ns"] == ns)


def _candidate(ns_report: dict, key: dict) -> dict:
    return next(c for c in ns_report["candidates"] if c["key"] == key)


def test_insert_many_with_duplicate_keys_counts_only_what_was_inserted(proxy, ferretdb):
    p = proxy(ferretdb.uri, "--evaluation.candidates", 'app.dupes: {"k": 1}', admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=10000) as c:
        coll = c.app.dupes
        coll.drop()
        coll.insert_many([{"_id": i, "k": f"a{i}"} for i in range(5)])
        # Ordered: the third document repeats _id 0, the two after it are never reached.
        with pytest.raises(BulkWriteError) as ordered:
            coll.insert_many([{"_id": 10, "k": "b10"}, {"_id": 11, "k": "b11"}, {"_id": 0, "k": "dup0"},
                              {"_id": 12, "k": "b12"}, {"_id": 13, "k": "b13"}])
        assert ordered.value.details["nInserted"] == 2
        # Unordered: the duplicate fails, the others go in.
        with pytest.raises(BulkWriteError) as unordered:
            coll.insert_many([{"_id": 20, "k": "c20"}, {"_id": 1, "k": "dup1"}, {"_id": 21, "k": "c21"}],
                             ordered=False)
        assert unordered.value.details["nInserted"] == 2
        # A single insert_one of a duplicate.
        with pytest.raises(pymongo.errors.DuplicateKeyError):
            coll.insert_one({"_id": 2, "k": "dup2"})
        stored = coll.count_documents({})
        distinct_k = len(coll.distinct("k"))
    assert stored == 9 and distinct_k == 9  # what the server holds
    report = _evaluation(p.admin_url)
    dupes = _namespace(report, "app.dupes")
    assert dupes["inserts"] == stored
    assert _candidate(dupes, {"k": 1})["keyCharacteristics"]["numDistinctValues"] == distinct_k
    # The documents the replies refused: 1 + 2 never reached (ordered), 1 (unordered), 1 (insert_one).
    assert report["refusedInserts"] == 5
    assert report["unprovenInserts"] == 0


def test_a_streamed_insert_many_is_settled_by_its_reply(proxy, ferretdb):
    # Over 1 MiB: its documents are observed one at a time as they pass (issue 29), before the reply.
    p = proxy(ferretdb.uri, admin=True)
    pad = "x" * 400_000
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=10000, socketTimeoutMS=60000) as c:
        coll = c.app.bigdupes
        coll.drop()
        coll.insert_one({"_id": 2, "pad": "first"})
        with pytest.raises(BulkWriteError) as ordered:
            coll.insert_many([{"_id": i, "pad": pad} for i in range(6)])  # _id 2 exists: 0 and 1 go in
        assert ordered.value.details["nInserted"] == 2
        stored = coll.count_documents({})
    assert stored == 3
    report = _evaluation(p.admin_url)
    assert _namespace(report, "app.bigdupes")["inserts"] == stored
    assert report["refusedInserts"] == 4
