"""What a multi-document transaction writes counts in /evaluate only once its commit answers ok,
never after an abort (docs/evaluation.md "Where it comes from"), through the real proxy with
pymongo's own transaction commands (lsid, txnNumber, autocommit: false, startTransaction,
commitTransaction / abortTransaction on admin).

FerretDB has no transactions, so the upstream is a scripted mongos STAND-IN (NOT mongos; the
retryable-write stand-in of tests/support/retryable_mongos.py) taught here just enough of a
transaction: it keeps each transaction's inserts and upserts aside and applies them at
commitTransaction, drops them at abortTransaction, and answers an upsert with `upserted` as mongos
does. main counted the upsert of an aborted transaction, and its inserts when the connection closed.
"""
from __future__ import annotations

import json
import urllib.request

import pymongo


def _evaluation(p) -> dict:
    with urllib.request.urlopen(p.admin_url + "/evaluate", timeout=30) as r:
        return json.load(r)


def _transactional_standin():
    from retryable_mongos import RetryableMongos
    from wire_peer import WirePeer, _matches

    class TransactionalMongos(RetryableMongos):
        """Inserts and upserts of a transaction wait for its commit (keyed by lsid and txnNumber)."""

        def __init__(self, **kw):
            super().__init__(**kw)
            self.pending: dict[tuple[bytes, int], list[tuple[str, dict]]] = {}

        def _hello(self, conn, cmd, legacy):
            d = super()._hello(conn, cmd, legacy)
            d["maxWireVersion"] = max(d["maxWireVersion"], 17)  # pymongo runs transactions on mongos 4.2+
            d["logicalSessionTimeoutMinutes"] = 30
            return d

        @staticmethod
        def _key(cmd):
            return bytes(cmd["lsid"]["id"]), int(cmd["txnNumber"])

        def _cmd_insert(self, conn, cmd, seqs, db):
            if cmd.get("autocommit") is not False:
                return super()._cmd_insert(conn, cmd, seqs, db)
            docs = list(cmd.get("documents") or []) + list(seqs.get("documents") or [])
            with self._lock:
                self.pending.setdefault(self._key(cmd), []).extend((f"{db}.{cmd['insert']}", d) for d in docs)
            return {"n": len(docs), "ok": 1.0}

        def _cmd_update(self, conn, cmd, seqs, db):
            if cmd.get("autocommit") is not False:
                return super()._cmd_update(conn, cmd, seqs, db)
            ns = f"{db}.{cmd['update']}"
            upserted = []
            with self._lock:
                for i, st in enumerate(list(cmd.get("updates") or []) + list(seqs.get("updates") or [])):
                    if st.get("upsert") and not any(_matches(d, st["q"]) for d in self.store.get(ns, [])):
                        doc = {**st["q"], **st["u"].get("$set", {}), "_id": 1000 + len(self.pending)}
                        self.pending.setdefault(self._key(cmd), []).append((ns, doc))
                        upserted.append({"index": i, "_id": doc["_id"]})
            return {"n": len(upserted), "nModified": 0, "upserted": upserted, "ok": 1.0}

        def _cmd_committransaction(self, conn, cmd, seqs, db):
            with self._lock:
                for ns, d in self.pending.pop(self._key(cmd), []):
                    self.store.setdefault(ns, []).append(d)
            return {"ok": 1.0}

        def _cmd_aborttransaction(self, conn, cmd, seqs, db):
            with self._lock:
                self.pending.pop(self._key(cmd), None)
            return {"ok": 1.0}

    return TransactionalMongos().start()


def test_a_transaction_counts_its_writes_at_the_commit_never_after_an_abort(proxy):
    peer = _transactional_standin()
    try:
        p = proxy(peer.uri, "--evaluation.candidates", 'app.kv: {"k": 1}', admin=True)
        with pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=10000) as client:
            kv = client.app.kv
            kv.insert_one({"_id": 0, "k": "k0"})  # outside any transaction: counts at its reply
            with client.start_session() as s:
                s.start_transaction()
                kv.insert_many([{"_id": 1, "k": "k1"}, {"_id": 2, "k": "k2"}], session=s)
                kv.update_one({"k": "u1"}, {"$set": {"v": 1}}, upsert=True, session=s)
                s.abort_transaction()
            kv_report = next(n for n in _evaluation(p)["namespaces"] if n["ns"] == "app.kv")
            assert kv_report["inserts"] == 1  # main: 2 (the aborted upsert counted)
            assert kv_report["upserted"] == 0
            with client.start_session() as s:
                s.start_transaction()
                kv.insert_many([{"_id": 3, "k": "k3"}, {"_id": 4, "k": "k4"}], session=s)
                kv.update_one({"k": "u2"}, {"$set": {"v": 1}}, upsert=True, session=s)
                assert next(n for n in _evaluation(p)["namespaces"] if n["ns"] == "app.kv")["inserts"] == 1
                s.commit_transaction()
            assert len(peer.store["app.kv"]) == 4
        report = _evaluation(p)
        kv_report = next(n for n in report["namespaces"] if n["ns"] == "app.kv")
        assert kv_report["inserts"] == 4  # the committed two, and the upsert's document, besides _id 0
        assert kv_report["upserted"] == 1
        assert report["transactionWritesPending"] == 0
        assert report["transactionWritesOutcomeUnknown"] == 0
    finally:
        peer.stop()
