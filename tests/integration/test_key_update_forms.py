"""Mutability (docs/evaluation.md "Mutability") of the update forms that name a key field other than
as a plain operator path, through the real proxy with pymongo against FerretDB:

- an ORM's update_one({tenantId: t, _id: i}, {$set: {tenantId: t, ...}}) writes the key back
  unchanged: no shard-key update (main: 100% of the writes, failing mutability);
- {$rename: {legacyTier: "tier"}} changes "tier" (main: 0%, only "legacyTier" was seen).
Update pipelines (FerretDB refuses them) are covered in tests/evaluation/key_update_forms_test.cpp.
"""
from __future__ import annotations

import json
import urllib.request

import pymongo

CANDIDATES = 'app.accounts: {"tenantId": 1}; app.accounts: {"tier": 1}'


def _candidates(p) -> dict[str, dict]:
    with urllib.request.urlopen(p.admin_url + "/evaluate", timeout=30) as r:
        report = json.load(r)
    ns = next(n for n in report["namespaces"] if n["ns"] == "app.accounts")
    return {json.dumps(c["key"]): c for c in ns["candidates"]}


def _key_updates(p, key: str) -> float:
    return _candidates(p)[key]["writeDistribution"]["percentageOfShardKeyUpdates"]


def test_set_of_the_pinned_value_and_rename(ferretdb, proxy):
    p = proxy(ferretdb.uri, "--evaluation.candidates", CANDIDATES, admin=True)
    with pymongo.MongoClient(p.uri) as client:
        accounts = client.app.accounts
        accounts.insert_many([{"_id": i, "tenantId": "t%d" % (i % 20), "tier": i % 3, "legacyTier": i % 3}
                              for i in range(200)])
        for i in range(40):  # the ORM pattern: every field it read, the key included, written back
            r = accounts.update_one({"tenantId": "t%d" % (i % 20), "_id": i},
                                    {"$set": {"tenantId": "t%d" % (i % 20), "name": "n%d" % i}})
            assert r.matched_count == 1
    assert _key_updates(p, '{"tenantId": 1}') == 0  # main: 100
    assert _key_updates(p, '{"tier": 1}') == 0

    with pymongo.MongoClient(p.uri) as client:
        for i in range(40, 80):
            r = client.app.accounts.update_one({"tenantId": "t%d" % (i % 20), "_id": i},
                                               {"$rename": {"legacyTier": "tier"}})
            assert r.modified_count == 1
        assert client.app.accounts.count_documents({"legacyTier": {"$exists": True}}) == 160
    # Half of the 80 updates rename into "tier", none touches the tenant.
    assert _key_updates(p, '{"tier": 1}') == 50  # main: 0
    assert _key_updates(p, '{"tenantId": 1}') == 0
