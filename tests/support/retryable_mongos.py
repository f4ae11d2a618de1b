"""A scripted mongos STAND-IN that keeps retryable-write semantics (issue 27 item 5).

NOT mongos: a WirePeer (tests/support/wire_peer.py) that says `msg: "isdbgrid"` in its hello, so
pymongo sends every single-document write as a retryable write (lsid + txnNumber), and that
enforces what mongos and the shards do with those numbers:
  * a write whose (lsid, txnNumber) already ran is NOT executed again: the first execution's reply
    comes back (so a proxy that re-sent a retryable write with another filter would get the first
    answer, never the second);
  * a txnNumber below the highest one seen for the session is refused (TransactionTooOld, 225).
It implements only what the lookup-rewrite tests need: insert/delete (from WirePeer), update and
findAndModify with equality filters and $set/$inc, find/count/aggregate (from WirePeer), and an
aggregate ending in {$out: "coll"} (replaces that collection with the pipeline's output).
`executions` records each executed write as (command, filter, txnNumber); `replayed` counts writes
answered from the record.
"""
from __future__ import annotations

import copy

from wire_peer import WirePeer, _matches


def _apply(doc: dict, u: dict) -> dict:
    if not any(k.startswith("$") for k in u):  # a replacement keeps _id
        return {"_id": doc.get("_id"), **{k: v for k, v in u.items() if k != "_id"}}
    out = dict(doc)
    for op, args in u.items():
        for k, v in args.items():
            if op == "$set":
                out[k] = v
            elif op == "$inc":
                out[k] = out.get(k, 0) + v
            else:
                raise ValueError(f"stand-in: unsupported update operator {op}")
    return out


class RetryableMongos(WirePeer):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.executions: list[tuple[str, dict, int | None]] = []
        self.replayed = 0
        self._txns: dict[bytes, tuple[int, dict]] = {}  # lsid id -> (highest txnNumber, its reply)

    def _hello(self, conn, cmd, legacy):
        d = super()._hello(conn, cmd, legacy)
        d["msg"] = "isdbgrid"
        return d

    def _retryable(self, cmd, run):
        """Runs a write once per (lsid, txnNumber): a retry gets the recorded reply."""
        txn = cmd.get("txnNumber")
        lsid = (cmd.get("lsid") or {}).get("id")
        if txn is None or lsid is None:
            return run()
        key = bytes(lsid)
        with self._lock:
            seen = self._txns.get(key)
            if seen and txn < seen[0]:
                return {"ok": 0.0, "errmsg": f"txnNumber {txn} is less than last txnNumber {seen[0]} seen in session",
                        "code": 225, "codeName": "TransactionTooOld"}
            if seen and txn == seen[0]:
                self.replayed += 1
                return copy.deepcopy(seen[1])
            reply = run()
            self._txns[key] = (txn, copy.deepcopy(reply))
            return reply

    def _cmd_insert(self, conn, cmd, seqs, db):
        return self._retryable(cmd, lambda: WirePeer._cmd_insert(self, conn, cmd, seqs, db))

    def _cmd_delete(self, conn, cmd, seqs, db):
        def run():
            for st in list(cmd.get("deletes") or []) + list(seqs.get("deletes") or []):
                self.executions.append(("delete", st.get("q", {}), cmd.get("txnNumber")))
            return WirePeer._cmd_delete(self, conn, cmd, seqs, db)
        return self._retryable(cmd, run)

    def _cmd_update(self, conn, cmd, seqs, db):
        ns = f"{db}.{cmd['update']}"

        def run():
            n = modified = 0
            with self._lock:
                coll = self.store.setdefault(ns, [])
                for st in list(cmd.get("updates") or []) + list(seqs.get("updates") or []):
                    self.executions.append(("update", st.get("q", {}), cmd.get("txnNumber")))
                    for i, d in enumerate(coll):
                        if _matches(d, st.get("q", {})):
                            new = _apply(d, st["u"])
                            modified += new != d
                            coll[i] = new
                            n += 1
                            if not st.get("multi"):
                                break
            return {"n": n, "nModified": modified, "ok": 1.0}
        return self._retryable(cmd, run)

    def _cmd_findandmodify(self, conn, cmd, seqs, db):
        ns = f"{db}.{cmd.get('findAndModify') or cmd.get('findandmodify')}"

        def run():
            self.executions.append(("findAndModify", cmd.get("query", {}), cmd.get("txnNumber")))
            with self._lock:
                coll = self.store.setdefault(ns, [])
                for i, d in enumerate(coll):
                    if _matches(d, cmd.get("query") or {}):
                        if cmd.get("remove"):
                            del coll[i]
                            return {"lastErrorObject": {"n": 1}, "value": d, "ok": 1.0}
                        new = _apply(d, cmd["update"])
                        coll[i] = new
                        return {"lastErrorObject": {"n": 1, "updatedExisting": True},
                                "value": new if cmd.get("new") else d, "ok": 1.0}
            return {"lastErrorObject": {"n": 0, "updatedExisting": False}, "value": None, "ok": 1.0}
        return self._retryable(cmd, run)

    def _cmd_aggregate(self, conn, cmd, seqs, db):
        pipeline = list(cmd.get("pipeline") or [])
        if not pipeline or "$out" not in pipeline[-1]:
            return WirePeer._cmd_aggregate(self, conn, cmd, seqs, db)
        target = f"{db}.{pipeline[-1]['$out']}"
        reply = WirePeer._cmd_aggregate(self, conn, {**cmd, "pipeline": pipeline[:-1], "cursor": {"batchSize": 1 << 30}},
                                        seqs, db)
        with self._lock:
            self.store[target] = [dict(d) for d in reply["cursor"]["firstBatch"]]
        return {"cursor": {"id": reply["cursor"]["id"], "ns": reply["cursor"]["ns"], "firstBatch": []}, "ok": 1.0}
