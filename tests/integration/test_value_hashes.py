"""Exports say which value hashes they hold, and the fleet merge says when it mixes two kinds.

Values of 1 KiB or more are hashed in four lanes (issue 29: the single chain took a third of an
insertMany's cycles), so the same long value hashes differently in sidecars before that change.
Through pymongo and the proxy to FerretDB: the export carries "valueHashes": 2, and `shardscope
evaluate` over it and an export without the field (what an older sidecar sends) notes the mixture,
while a merge of exports of one kind does not.
"""
from __future__ import annotations

import json
import subprocess
import time
import urllib.request

import pymongo


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def _evaluate(binary, *files) -> subprocess.CompletedProcess:
    args = [str(binary), "evaluate", "--json"]
    for f in files:
        args += ["--file", str(f)]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def test_export_names_its_value_hashes_and_a_mixed_merge_says_so(proxy, ferretdb, shardscope_binary, tmp_path):
    px = proxy(ferretdb.uri, admin=True)
    client = pymongo.MongoClient(px.uri)
    coll = client.shop.notes
    # 300 distinct 2,000-byte values (hashed in four lanes) beside a short key field.
    coll.insert_many([{"customerId": i % 40, "blob": f"{i:06d}" + "x" * 1994} for i in range(300)])
    client.close()
    deadline = time.time() + 10
    while True:
        export = json.loads(_get(px.admin_url + "/evaluate/sketches"))
        ns = next((n for n in export["namespaces"] if n["ns"] == "shop.notes"), None)
        if ns and int(ns["inserts"]["$numberLong"]) == 300:
            break
        assert time.time() < deadline, "the evaluation did not count the 300 inserts"
        time.sleep(0.2)
    assert export["valueHashes"] == {"$numberInt": "2"}  # canonical Extended JSON, as every count

    current = tmp_path / "current.json"
    current.write_text(json.dumps(export))
    older = dict(export)
    del older["valueHashes"]
    older_file = tmp_path / "older.json"
    older_file.write_text(json.dumps(older))

    mixed = _evaluate(shardscope_binary, current, older_file)
    assert mixed.returncode == 0, mixed.stderr
    assert "1 of 2 export(s) hash values of 1 KiB or more differently" in mixed.stderr
    assert any(n["ns"] == "shop.notes" for n in json.loads(mixed.stdout)["namespaces"])

    same = _evaluate(shardscope_binary, current, current)
    assert same.returncode == 0, same.stderr
    assert "differently" not in same.stderr
