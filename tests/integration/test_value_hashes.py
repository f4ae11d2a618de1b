"""Exports say which value hashes they hold, and the fleet merge says when it mixes two kinds.

Values of 1 KiB or more are hashed by their length and a sample of their bytes (issue 29; before,
every byte with XXH3: "valueHashes": 3, four scalar lanes: 2, a single chain: no field), so the same
long value hashes differently in sidecars before that change. Through pymongo and the proxy to
FerretDB: the export carries "valueHashes": 4, and `shardscope evaluate` over it and an export of an
older kind notes the mixture, while a merge of exports of one kind does not.
"""
from __future__ import annotations

import json
import subprocess

import pymongo
from stats_helpers import http_request, wait_for


def _sketches(admin_url: str) -> dict:
    status, _, body = http_request(admin_url, path="/evaluate/sketches")
    assert status == 200, body
    return json.loads(body)


def _inserts(export: dict, ns: str) -> int:
    found = next((n for n in export["namespaces"] if n["ns"] == ns), None)
    return int(found["inserts"]["$numberLong"]) if found else 0


def _evaluate(binary, *files) -> subprocess.CompletedProcess:
    args = [str(binary), "evaluate", "--json"]
    for f in files:
        args += ["--file", str(f)]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def test_export_names_its_value_hashes_and_a_mixed_merge_says_so(proxy, ferretdb, shardscope_binary, tmp_path):
    px = proxy(ferretdb.uri, admin=True)
    client = pymongo.MongoClient(px.uri)
    coll = client.shop.notes
    # 300 distinct 2,000-byte values (hashed by their sample) beside a short key field.
    coll.insert_many([{"customerId": i % 40, "blob": f"{i:06d}" + "x" * 1994} for i in range(300)])
    client.close()
    assert wait_for(lambda: _inserts(_sketches(px.admin_url), "shop.notes") == 300, timeout=10), \
        "the evaluation did not count the 300 inserts"
    export = _sketches(px.admin_url)
    assert export["valueHashes"] == {"$numberInt": "4"}  # canonical Extended JSON, as every count

    current = tmp_path / "current.json"
    current.write_text(json.dumps(export))
    older = dict(export)
    del older["valueHashes"]
    older_file = tmp_path / "older.json"
    older_file.write_text(json.dumps(older))
    lanes = dict(export, valueHashes={"$numberInt": "3"})  # a sidecar hashing every byte (XXH3)
    lanes_file = tmp_path / "lanes.json"
    lanes_file.write_text(json.dumps(lanes))

    for pair in ((current, older_file), (current, lanes_file), (older_file, lanes_file)):
        mixed = _evaluate(shardscope_binary, *pair)
        assert mixed.returncode == 0, mixed.stderr
        assert "1 of 2 export(s) hash values of 1 KiB or more differently" in mixed.stderr
        assert any(n["ns"] == "shop.notes" for n in json.loads(mixed.stdout)["namespaces"])

    same = _evaluate(shardscope_binary, current, current)
    assert same.returncode == 0, same.stderr
    assert "differently" not in same.stderr
