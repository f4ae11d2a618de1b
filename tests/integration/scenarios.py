"""The driver scenario for pymongo and helpers to run the other drivers' scenario programs.

Every scenario is deterministic (its own _ids, no generated timestamps in the
output), so the result dict of a run directly against the upstream must equal
the result of the same run through the proxy.
"""
from __future__ import annotations

import json
import subprocess

import pymongo
from pymongo import monitoring
from pymongo.errors import OperationFailure, BulkWriteError

BULK_COUNT = 1500
CURSOR_BATCH = 100
BIG_SIZE = 15 * 1024 * 1024
ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def big_string() -> str:
    reps = BIG_SIZE // len(ALPHABET) + 1
    return (ALPHABET * reps)[:BIG_SIZE]


class _Counter(monitoring.CommandListener):
    def __init__(self):
        self.get_mores = 0
        self.lsid_commands = 0
        self.commands: list[str] = []

    def started(self, event):
        self.commands.append(event.command_name)
        if event.command_name == "getMore":
            self.get_mores += 1
        if "lsid" in event.command:
            self.lsid_commands += 1

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def _code(exc: Exception) -> int:
    if isinstance(exc, BulkWriteError):
        errs = exc.details.get("writeErrors") or []
        return errs[0]["code"] if errs else -1
    code = getattr(exc, "code", None)
    return code if isinstance(code, int) else -1


def run_pymongo_scenario(uri: str, db_name: str = "scenario_py", big: bool = True, **client_kw) -> dict:
    counter = _Counter()
    client = pymongo.MongoClient(uri, event_listeners=[counter], serverSelectionTimeoutMS=20000, **client_kw)
    try:
        res: dict = {"driver": "pymongo"}
        client.drop_database(db_name)
        db = client[db_name]
        res["ping_ok"] = db.command("ping")["ok"]

        crud = db.crud
        crud.insert_one({"_id": 1, "name": "alpha", "n": 1})
        crud.insert_many([{"_id": 2, "name": "beta", "n": 2}, {"_id": 3, "name": "gamma", "n": 3}])
        res["find_one_name"] = crud.find_one({"_id": 1})["name"]
        ur = crud.update_one({"_id": 1}, {"$set": {"n": 10}})
        res["update_matched"], res["update_modified"] = ur.matched_count, ur.modified_count
        res["replace_modified"] = crud.replace_one({"_id": 3}, {"name": "gamma2", "n": 30}).modified_count
        res["delete_count"] = crud.delete_one({"_id": 2}).deleted_count
        res["crud_docs"] = [f"{d['_id']}:{d['name']}:{d['n']}" for d in crud.find({}).sort("_id", 1)]
        res["crud_count"] = crud.count_documents({})

        bulk = db.bulk
        r = bulk.insert_many([{"_id": 100000 + i, "i": i, "tag": f"t{i % 7}"} for i in range(BULK_COUNT)])
        res["bulk_inserted"] = len(r.inserted_ids)
        bw = bulk.bulk_write([
            pymongo.InsertOne({"_id": 1, "i": -1}),
            pymongo.UpdateMany({"tag": "t3"}, {"$set": {"flag": True}}),
            pymongo.DeleteMany({"tag": "t5"}),
        ])
        res["bulkwrite"] = [bw.inserted_count, bw.matched_count, bw.modified_count, bw.deleted_count]

        before = counter.get_mores
        n = total = 0
        first = last = None
        for d in bulk.find({}).sort("_id", 1).batch_size(CURSOR_BATCH):
            if n == 0:
                first = d["_id"]
            last = d["_id"]
            n += 1
            total += d["i"]
        res.update(cursor_count=n, cursor_sum=total, cursor_first=first, cursor_last=last,
                   cursor_getmores=counter.get_mores - before)

        if big:
            data = big_string()
            db.big.insert_one({"_id": "big", "data": data})
            got = db.big.find_one({"_id": "big"})["data"]
            res["big_len"] = len(got)
            res["big_equal"] = got == data

        lsid_before = counter.lsid_commands
        with client.start_session() as s:
            db.sess.insert_one({"_id": 1, "v": "s"}, session=s)
            res["session_find"] = db.sess.find_one({"_id": 1}, session=s)["v"]
        res["session_lsid_commands"] = counter.lsid_commands - lsid_before

        try:
            crud.insert_one({"_id": 1, "name": "dup"})
            res["dup_code"] = 0
        except OperationFailure as e:
            res["dup_code"] = _code(e)
        try:
            db.command("noSuchCommandForShardscope")
            res["unknown_cmd_code"] = 0
        except OperationFailure as e:
            res["unknown_cmd_code"] = _code(e)
        return res
    finally:
        client.close()


def run_program(cmd: list[str], uri: str, db_name: str, timeout: float = 240) -> dict:
    r = subprocess.run([*cmd, uri, db_name], capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise AssertionError(f"{cmd[0]} exited {r.returncode}\nstdout: {r.stdout[-2000:]}\nstderr: {r.stderr[-4000:]}")
    lines = [ln for ln in r.stdout.splitlines() if ln.strip().startswith("{")]
    if not lines:
        raise AssertionError(f"{cmd} printed no JSON\nstdout: {r.stdout[-2000:]}\nstderr: {r.stderr[-4000:]}")
    return json.loads(lines[-1])


def check_expected(res: dict, big: bool = True) -> None:
    """What every driver's scenario must report against a correct upstream."""
    assert res["ping_ok"] == 1, res
    assert res["find_one_name"] == "alpha", res
    assert res["crud_docs"] == ["1:alpha:10", "3:gamma2:30"], res
    assert res["crud_count"] == 2, res
    assert res["bulk_inserted"] == BULK_COUNT, res
    assert res["bulkwrite"] == [1, 214, 214, 214], res
    assert res["cursor_count"] == 1287, res
    assert res["cursor_first"] == 1 and res["cursor_last"] == 101499, res
    assert res["cursor_getmores"] >= 5, res
    if big:
        assert res["big_len"] == BIG_SIZE and res["big_equal"] is True, res
    assert res["session_find"] == "s", res
    assert res["session_lsid_commands"] >= 2, res
    assert res["dup_code"] == 11000, res
    assert res["unknown_cmd_code"] == 59, res
