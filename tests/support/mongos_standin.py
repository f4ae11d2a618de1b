"""A scripted mongos STAND-IN for the routing-freshness tests.

No MongoDB server is obtainable in this environment (the SSPL binaries are not packaged for it),
so this stand-in plays mongos: it is NOT mongos and implements only what discovery and a few
client commands need. It serves, through the WirePeer machinery (OP_MSG, hello, cursors held
globally so a getMore works from any connection):
  * a mongos hello (`msg: "isdbgrid"`) and buildInfo of the release it plays;
  * the catalog as a real cluster stores it, in the 4.4 format (config.collections keyed by ns
    with lastmodEpoch/lastmod Date/dropped, config.chunks with ns, lastmod Timestamp and
    lastmodEpoch) or the 5.0+ format (collections with uuid and timestamp, chunks keyed by uuid);
  * find on config.* with the operators discovery uses ($or, $in, $gt on Timestamps, equality)
    and sort by lastmod; it counts the chunk documents it returns (`chunk_documents_returned`);
  * catalog changes as the balancer and DDL make them: a chunk migration (the moved chunk gets
    major+1|0, a chunk left on the donor major+1|1), a drop and re-create (new uuid, epoch and
    timestamp);
  * injected faults: the next N config.* reads fail; the next write answers with a StaleConfig in
    writeErrors (ok: 1), or as its top-level error.
  * SCRAM-SHA-256 and SCRAM-SHA-1 (RFC 5802/7677, MongoDB's SHA-1 password digest) when `users`
    is given: every command but the handshake then requires an authenticated connection
    ("command find requires authentication", code 13, as mongos answers).
"""
from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import os
import uuid as uuidlib

import bson
from bson.binary import Binary, UuidRepresentation
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.timestamp import Timestamp

from wire_peer import WirePeer


def _match_value(value, cond) -> bool:
    if isinstance(cond, dict) and cond and all(k.startswith("$") for k in cond):
        for op, arg in cond.items():
            if op == "$gt" and not (value is not None and value > arg):
                return False
            if op == "$gte" and not (value is not None and value >= arg):
                return False
            if op == "$in" and value not in arg:
                return False
            if op not in ("$gt", "$gte", "$in"):
                raise ValueError(f"stand-in: unsupported operator {op}")
        return True
    return value == cond


def matches(doc: dict, flt: dict) -> bool:
    for k, cond in flt.items():
        if k == "$or":
            if not any(matches(doc, branch) for branch in cond):
                return False
        elif not _match_value(doc.get(k), cond):
            return False
    return True


class MongosStandIn(WirePeer):
    def __init__(self, catalog: str = "5.0", shards=("shardA", "shardB", "shardC"),
                 users: dict[str, str] | None = None, **kw):
        assert catalog in ("4.4", "5.0")
        super().__init__(max_wire_version=9 if catalog == "4.4" else 21, **kw)
        self.catalog = catalog
        self.users = users or {}
        self.authenticated_connections = 0
        self._conversations: dict[int, dict] = {}
        self.chunk_documents_returned = 0
        self.chunk_filters: list[dict] = []
        self._config_failures = 0
        self._stale_writes: list[str] = []
        self._clock = 100
        self.store["config.shards"] = [{"_id": s, "host": f"{s}/h-{s}:27018", "state": 1} for s in shards]
        self.store["config.collections"] = []
        self.store["config.chunks"] = []

    # ---- catalog changes
    def _next_timestamp(self) -> Timestamp:
        self._clock += 1
        return Timestamp(self._clock, 1)

    def shard_collection(self, ns: str, field: str, splits: list, shards: list[str], extra: dict | None = None) -> None:
        """Chunks [MinKey, s0), [s0, s1), ... [sN, MaxKey) on `shards` in turn, versions 1|0, 1|1...
        extra: more fields of the config.collections document (e.g. timeseriesFields)."""
        with self._lock:
            epoch, uid, ts = ObjectId(), Binary.from_uuid(uuidlib.uuid4(), UuidRepresentation.STANDARD), self._next_timestamp()
            coll = {"_id": ns, "lastmodEpoch": epoch, "lastmod": datetime.datetime.now(datetime.timezone.utc),
                    "key": {field: 1}, "unique": False, "uuid": uid}
            coll.update(extra or {})
            if self.catalog == "4.4":
                coll["dropped"] = False
            else:
                coll["timestamp"] = ts
            self.store["config.collections"] = [c for c in self.store["config.collections"] if c["_id"] != ns] + [coll]
            bounds = [MinKey()] + list(splits) + [MaxKey()]
            for i in range(len(bounds) - 1):
                chunk = {"min": {field: bounds[i]}, "max": {field: bounds[i + 1]}, "shard": shards[i % len(shards)],
                         "lastmod": Timestamp(1, i)}
                if self.catalog == "4.4":
                    chunk.update({"_id": f"{ns}-{field}_{bounds[i]!r}", "ns": ns, "lastmodEpoch": epoch})
                else:
                    chunk.update({"_id": ObjectId(), "uuid": uid, "onCurrentShardSince": ts,
                                  "history": [{"validAfter": ts, "shard": chunk["shard"]}]})
                self.store["config.chunks"].append(chunk)

    def _chunks_of(self, ns: str) -> list[dict]:
        coll = next(c for c in self.store["config.collections"] if c["_id"] == ns)
        key = ("ns", ns) if self.catalog == "4.4" else ("uuid", coll["uuid"])
        return [c for c in self.store["config.chunks"] if c.get(key[0]) == key[1]]

    def migrate(self, ns: str, min_value, to_shard: str) -> None:
        """moveChunk: the chunk starting at min_value goes to to_shard at major+1|0; one chunk left
        on the donor is bumped to major+1|1 (as the config server commits a migration)."""
        with self._lock:
            chunks = self._chunks_of(ns)
            major = max(c["lastmod"].time for c in chunks)
            moved = next(c for c in chunks if next(iter(c["min"].values())) == min_value)
            donor = moved["shard"]
            moved["shard"] = to_shard
            moved["lastmod"] = Timestamp(major + 1, 0)
            left = [c for c in chunks if c["shard"] == donor and c is not moved]
            if left:
                left[0]["lastmod"] = Timestamp(major + 1, 1)

    def split(self, ns: str, at_value) -> None:
        """splitChunk: the chunk holding at_value becomes [min, at) and [at, max), versions major|m+1, m+2."""
        with self._lock:
            chunks = self._chunks_of(ns)
            top = max(c["lastmod"] for c in chunks)
            field = next(iter(chunks[0]["min"]))
            holder = next(c for c in chunks if self._holds(c, field, at_value))
            right = bson.decode(bson.encode(holder))
            right["_id"] = ObjectId() if self.catalog == "5.0" else f"{ns}-{field}_{at_value!r}"
            holder["max"] = {field: at_value}
            right["min"] = {field: at_value}
            holder["lastmod"] = Timestamp(top.time, top.inc + 1)
            right["lastmod"] = Timestamp(top.time, top.inc + 2)
            self.store["config.chunks"].append(right)

    @staticmethod
    def _holds(chunk: dict, field: str, value) -> bool:
        lo, hi = chunk["min"][field], chunk["max"][field]
        return (isinstance(lo, MinKey) or lo <= value) and (isinstance(hi, MaxKey) or value < hi)

    def tear_next_chunk_read(self) -> None:
        """The next read of config.chunks that returns several documents loses its newest one, as a
        read spanning a commit can (the proxy must notice the gap and read the collection whole)."""
        with self._lock:
            self._tear_next = True

    def drop_and_recreate(self, ns: str, field: str, splits: list, shards: list[str]) -> None:
        with self._lock:
            old = self._chunks_of(ns)
            self.store["config.chunks"] = [c for c in self.store["config.chunks"] if all(c is not o for o in old)]
        self.shard_collection(ns, field, splits, shards)

    # ---- faults
    def fail_config_reads(self, n: int) -> None:
        with self._lock:
            self._config_failures = n

    def stale_on_next_write(self, where: str = "writeErrors") -> None:
        """where: writeErrors (ok: 1, a per-statement StaleConfig) or top (ok: 0, code 13388)."""
        with self._lock:
            self._stale_writes.append(where)

    # ---- authentication
    _OPEN = {"hello", "ismaster", "saslstart", "saslcontinue", "ping", "buildinfo", "endsessions"}

    def _handle(self, conn, cmd, seqs):
        name = next(iter(cmd), "").lower()
        if self.users and name not in self._OPEN and not getattr(conn, "user", None):
            return {"ok": 0.0, "errmsg": f"command {next(iter(cmd), '')} requires authentication", "code": 13,
                    "codeName": "Unauthorized"}
        return super()._handle(conn, cmd, seqs)

    @staticmethod
    def _scram_hash(mechanism: str):
        return hashlib.sha256 if mechanism == "SCRAM-SHA-256" else hashlib.sha1

    def _salted(self, mechanism: str, user: str, salt: bytes, iterations: int) -> bytes:
        password = self.users[user]
        if mechanism == "SCRAM-SHA-1":  # MongoDB hashes the password first for SHA-1
            password = hashlib.md5(f"{user}:mongo:{password}".encode()).hexdigest()
        return hashlib.pbkdf2_hmac(self._scram_hash(mechanism)().name, password.encode(), salt, iterations)

    def _cmd_saslstart(self, conn, cmd, seqs, db):
        mechanism = cmd.get("mechanism")
        payload = bytes(cmd.get("payload") or b"").decode()
        if mechanism not in ("SCRAM-SHA-256", "SCRAM-SHA-1") or not payload.startswith("n,,"):
            return {"ok": 0.0, "errmsg": f"stand-in: unsupported mechanism {mechanism}", "code": 2, "codeName": "BadValue"}
        bare = payload[3:]
        fields = dict(kv.split("=", 1) for kv in bare.split(","))
        user = fields.get("n", "").replace("=2C", ",").replace("=3D", "=")
        if user not in self.users:
            return {"ok": 0.0, "errmsg": "Authentication failed.", "code": 18, "codeName": "AuthenticationFailed"}
        sha256 = mechanism == "SCRAM-SHA-256"  # mongod's salt lengths (libmongoc checks them)
        salt, iterations = os.urandom(28 if sha256 else 16), 15000 if sha256 else 10000
        nonce = fields["r"] + base64.b64encode(os.urandom(18)).decode()
        first = f"r={nonce},s={base64.b64encode(salt).decode()},i={iterations}"
        with self._lock:
            cid = len(self._conversations) + 1
            self._conversations[cid] = {"mechanism": mechanism, "user": user, "bare": bare, "first": first,
                                        "salted": self._salted(mechanism, user, salt, iterations), "nonce": nonce,
                                        "conn": conn.id,
                                        "skip_empty": bool((cmd.get("options") or {}).get("skipEmptyExchange"))}
        return {"conversationId": cid, "done": False, "payload": first.encode(), "ok": 1.0}

    def _cmd_saslcontinue(self, conn, cmd, seqs, db):
        with self._lock:
            conv = self._conversations.get(int(cmd.get("conversationId") or 0))
        if conv is None or conv["conn"] != conn.id:
            return {"ok": 0.0, "errmsg": "No SASL session state found", "code": 17, "codeName": "ProtocolError"}
        payload = bytes(cmd.get("payload") or b"").decode()
        if conv.get("verified"):  # the client's empty last step
            return {"conversationId": cmd["conversationId"], "done": True, "payload": b"", "ok": 1.0}
        without_proof, _, proof = payload.rpartition(",p=")
        h = self._scram_hash(conv["mechanism"])
        auth_message = f"{conv['bare']},{conv['first']},{without_proof}".encode()
        client_key = hmac.new(conv["salted"], b"Client Key", h).digest()
        signature = hmac.new(h(client_key).digest(), auth_message, h).digest()
        expected = bytes(a ^ b for a, b in zip(client_key, signature))
        if f"r={conv['nonce']}" not in without_proof or base64.b64decode(proof) != expected:
            return {"ok": 0.0, "errmsg": "Authentication failed.", "code": 18, "codeName": "AuthenticationFailed"}
        server_key = hmac.new(conv["salted"], b"Server Key", h).digest()
        verifier = base64.b64encode(hmac.new(server_key, auth_message, h).digest()).decode()
        conv["verified"] = True
        conn.user = conv["user"]
        with self._lock:
            self.authenticated_connections += 1
        return {"conversationId": cmd["conversationId"], "done": conv["skip_empty"], "payload": f"v={verifier}".encode(), "ok": 1.0}

    # ---- commands
    def _hello(self, conn, cmd, legacy):
        d = super()._hello(conn, cmd, legacy)
        d["msg"] = "isdbgrid"
        return d

    def _cmd_buildinfo(self, conn, cmd, seqs, db):
        v = [4, 4, 29, 0] if self.catalog == "4.4" else [7, 0, 12, 0]
        return {"version": ".".join(map(str, v[:3])), "versionArray": v, "ok": 1.0}

    def _cmd_find(self, conn, cmd, seqs, db):
        if db != "config":
            return super()._cmd_find(conn, cmd, seqs, db)
        ns = f"config.{cmd['find']}"
        flt = cmd.get("filter") or {}
        with self._lock:
            if self._config_failures > 0:
                self._config_failures -= 1
                return {"ok": 0.0, "errmsg": "stand-in: config server unavailable", "code": 133,
                        "codeName": "FailedToSatisfyReadPreference"}
            docs = [d for d in self.store.get(ns, []) if matches(d, flt)]
            if cmd.get("sort"):
                field, direction = next(iter(cmd["sort"].items()))
                docs.sort(key=lambda d: d.get(field) or Timestamp(0, 0), reverse=direction < 0)
            if ns == "config.chunks":
                if getattr(self, "_tear_next", False) and len(docs) > 1:
                    self._tear_next = False
                    docs = docs[:-1]
                self.chunk_documents_returned += len(docs)
                self.chunk_filters.append(flt)
            docs = [bson.decode(bson.encode(d)) for d in docs]  # a snapshot, as a cursor sees it
        bs = int(cmd.get("batchSize") or self.default_batch_size)
        return self._batch(0, ns, docs, bs, True)

    def _cmd_insert(self, conn, cmd, seqs, db):
        with self._lock:
            where = self._stale_writes.pop(0) if self._stale_writes else None
        if where is None:
            return super()._cmd_insert(conn, cmd, seqs, db)
        ns = f"{db}.{cmd['insert']}"
        info = {"ns": ns, "vReceived": {"e": ObjectId(), "t": Timestamp(1, 1), "v": Timestamp(1, 0)},
                "vWanted": {"e": ObjectId(), "t": Timestamp(1, 1), "v": Timestamp(2, 0)}, "shardId": "shardA"}
        if where == "top":
            return {"ok": 0.0, "errmsg": "stand-in: stale config", "code": 13388, "codeName": "StaleConfig", **info}
        return {"n": 0, "writeErrors": [{"index": 0, "code": 13388, "codeName": "StaleConfig",
                                         "errmsg": "stand-in: stale config", "errInfo": info}], "ok": 1.0}
