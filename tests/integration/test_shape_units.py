"""One shape id, two units, each under its own name on every surface (the surfaces3 probe):
/stats' `count` counts commands, /evaluate's per-shape figures weigh statements. A batched update
of two statements of one shape is 1 command and 2 statements; /evaluate's byShape, the fleet export
`shardscope evaluate --from` merges and the text report show both, the commands equal to /stats'
count under the same id. Through a real proxy to FerretDB, with pymongo.
"""
from __future__ import annotations

import json
import re
import subprocess
import urllib.request

import pymongo
import pytest
from bson.son import SON
from pymongo import UpdateOne

from stats_helpers import CUSTOMERS, ROUTING_FILE, get_stats, seed_orders

pytestmark = pytest.mark.needs_proxy

UPDATE_COMMANDS = 7


def _get_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def _evaluate_cli(binary, *args: str) -> str:
    return subprocess.run([str(binary), "evaluate", *args], check=True, capture_output=True, text=True, timeout=120).stdout


def _by_shape(report: dict, shape_id: str) -> list[dict]:
    ns = next(n for n in report["namespaces"] if n["ns"] == "shop.orders")
    return [s for c in ns["candidates"] if c.get("evaluable") for s in c["byShape"] if s["id"] == shape_id]


def test_batched_update_shows_commands_equal_to_stats_count_on_every_surface(ferretdb, proxy, shardscope_binary):
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), "--evaluation.candidates", "shop.orders: {customerId: 1}",
              admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        coll = client.shop.orders
        for i in range(UPDATE_COMMANDS):  # one update command of two statements of the same shape
            coll.bulk_write([UpdateOne({"orderId": f"O{i:05d}"}, {"$set": {"status": "paid"}}),
                             UpdateOne({"orderId": f"O{i + 20:05d}"}, {"$set": {"status": "paid"}})])
        for c in CUSTOMERS:
            coll.find_one({"customerId": c})

    stats = get_stats(p.admin_url)
    row = next(s for s in stats["shapes"] if s["command"] == "update" and s["ns"] == "shop.orders")
    assert row["count"] == UPDATE_COMMANDS, row

    local = json.loads(_get_text(p.admin_url + "/evaluate"))
    exported = json.loads(_evaluate_cli(shardscope_binary, "--from", p.admin_url, "--json"))
    for what, report in (("/evaluate", local), ("evaluate --from", exported)):
        shapes = _by_shape(report, row["id"])
        assert shapes, (what, row["id"])
        for s in shapes:
            assert s["commands"] == row["count"], (what, s)
            assert s["statements"] == s["count"] == 2 * UPDATE_COMMANDS, (what, s)
        # A read is one statement per command: both units agree with /stats.
        find = next(x for x in stats["shapes"] if x["command"] == "find" and x["shape"] == '{"customerId":"<string>"}')
        for s in _by_shape(report, find["id"]):
            assert s["commands"] == s["statements"] == find["count"], (what, s)

    # The text report (the proxy's and the CLI's, one renderer) names both units and the id.
    text = _evaluate_cli(shardscope_binary, "--from", p.admin_url)
    assert text == _get_text(p.admin_url + "/evaluate?format=text")
    assert re.search(r"share\*\s+commands\s+statements\s+shape id", text), text
    line = next(l for l in text.splitlines() if l.rstrip().endswith(row["id"]))
    assert line.split()[-3:] == [str(UPDATE_COMMANDS), str(2 * UPDATE_COMMANDS), row["id"]], line
    assert "commands: as /stats counts them" in text, text


def test_explain_names_the_shape_id_every_live_surface_files_the_command_under(ferretdb, proxy, shardscope_binary):
    """`shardscope explain` showed no shape: nothing joined its answer to the /stats row, the
    /metrics series or the /evaluate entry of the same command. It now prints the shape and the id,
    the client's command's (a rewritten lookup is filed under what the client sent)."""
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), "--rewrite-rule", "shop.orders: orderId -> customerId",
              admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        coll = client.shop.orders
        list(coll.find({"status": "paid", "customerId": CUSTOMERS[0]}).sort("orderDate", -1))
        coll.find_one({"orderId": "O00003"})  # rewritten: mapped from the seed's inserts
        coll.update_one({"orderId": "O00004"}, {"$set": {"status": "paid"}})
    stats = get_stats(p.admin_url)
    with urllib.request.urlopen(p.admin_url + "/metrics", timeout=30) as r:
        metrics = r.read().decode()
    commands = [
        ('{find: "orders", filter: {customerId: "C0100", status: "x"}, sort: {orderDate: -1}, $db: "shop"}', "find"),
        ('{find: "orders", filter: {orderId: "O00003"}, limit: 1, singleBatch: true, $db: "shop"}', "find"),
        ('{update: "orders", updates: [{q: {orderId: "O00004"}, u: {$set: {status: "y"}}}], $db: "shop"}', "update"),
    ]
    for command, name in commands:
        for extra in ((), ("--rewrite-rule", "shop.orders: orderId -> customerId")):
            out = subprocess.run([str(shardscope_binary), "explain", "--routing", str(ROUTING_FILE), "--command", command, *extra],
                                 capture_output=True, text=True, timeout=60, check=True).stdout
            explained = json.loads(out)
            row = next((s for s in stats["shapes"] if s["id"] == explained["shapeId"]), None)
            assert row is not None, (command, extra, explained, [(s["id"], s["shape"]) for s in stats["shapes"]])
            assert (row["ns"], row["command"], row["shape"]) == ("shop.orders", name, explained["shape"]), (row, explained)
            assert f'shape_id="{explained["shapeId"]}"' in metrics, explained


def test_a_legacy_spelling_is_the_same_shape_under_the_same_id(ferretdb, proxy, shardscope_binary):
    """The server accepts "findandmodify" for findAndModify (the legacy shell sends it): /stats filed
    the same shape twice, under two ids, and /evaluate listed two findAndModify rows of one shape
    text with different ids. One command, one shape, one id, one row, whichever spelling."""
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), "--evaluation.candidates", "shop.orders: {customerId: 1}",
              admin=True)
    with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000) as client:
        seed_orders(client)
        for name in ("findAndModify", "findandmodify"):
            for i in range(3):
                client.shop.command(SON([(name, "orders"), ("query", {"orderId": f"O{i:05d}"}),
                                         ("update", {"$set": {"status": "x"}})]))
    rows = [s for s in get_stats(p.admin_url)["shapes"] if s["ns"] == "shop.orders" and s["command"].lower() == "findandmodify"]
    assert [(r["command"], r["count"]) for r in rows] == [("findAndModify", 6)], rows
    ns = next(n for n in json.loads(_get_text(p.admin_url + "/evaluate"))["namespaces"] if n["ns"] == "shop.orders")
    fam = [s for s in ns["candidates"][0]["byShape"] if s["command"] == "findAndModify"]
    assert [(s["id"], s["commands"]) for s in fam] == [(rows[0]["id"], 6)], fam
    explained = json.loads(subprocess.run(
        [str(shardscope_binary), "explain", "--routing", str(ROUTING_FILE), "--command",
         '{findandmodify: "orders", query: {orderId: "O1"}, update: {$set: {status: "y"}}, $db: "shop"}'],
        capture_output=True, text=True, timeout=60, check=True).stdout)
    assert explained["shapeId"] == rows[0]["id"], explained
