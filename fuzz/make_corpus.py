#!/usr/bin/env python3
"""Writes the seed corpora of the libFuzzer targets into tests/data/fuzz/<target>/.

Deterministic (same bytes every run), a few KB per target. Each seed is a valid input in the
format its target expects, so the fuzzer starts from the structure real drivers send:
  op_msg           whole wire frames: OP_MSG (find, insert with a kind-1 sequence, checksum,
                   moreToCome, exhaustAllowed), OP_QUERY isMaster, OP_REPLY, OP_COMPRESSED
                   (snappy, zlib, zstd, noop), and a stream of several frames
  query_shape      OP_MSG sections (kind-0 body + optional kind-1 sequences) of find, aggregate,
                   update, delete, count, distinct, findAndModify
  lookup_rewrite   u32 length + OP_MSG sections of a request on test.orders + a BSON reply
  pipeline         a connection's conversation: [kind u8][length u16 LE][frame] records, even kinds
                   client frames, odd kinds upstream replies (hello, rewrites and their fallbacks,
                   a confirmed retryable write, compression both ways, exhaust getMore, writes)
  client_names     OP_MSG sections whose $db, collection, command and field names hold bytes
                   that are not UTF-8, controls, the text format's escapes, or 32 KB
  filter_intervals a BSON filter document
  routing_file     one selector byte (even: JSON, odd: YAML) + a routing file
  config           a YAML config file
Needs pymongo's bson, zstandard and python-snappy.
    python3 fuzz/make_corpus.py [--out tests/data/fuzz]
"""
from __future__ import annotations

import argparse
import hashlib
import shutil
import struct
import zlib
from pathlib import Path

import bson
import snappy
import zstandard
from bson import Int64, MaxKey, MinKey, ObjectId, Regex
from bson.son import SON

REPO = Path(__file__).resolve().parents[1]
OP_REPLY, OP_QUERY, OP_COMPRESSED, OP_MSG = 1, 2004, 2012, 2013


def enc(doc) -> bytes:
    return bson.encode(SON(doc) if isinstance(doc, list) else doc)


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC = _crc32c_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def header(length: int, request_id: int, response_to: int, opcode: int) -> bytes:
    return struct.pack("<iiii", length, request_id, response_to, opcode)


def sections(body: bytes, seqs: list[tuple[str, list[bytes]]] = ()) -> bytes:
    out = b"\x00" + body
    for ident, docs in seqs:
        payload = ident.encode() + b"\x00" + b"".join(docs)
        out += b"\x01" + struct.pack("<i", 4 + len(payload)) + payload
    return out


def op_msg(body, seqs=(), flags=0, request_id=1, response_to=0, checksum=False) -> bytes:
    payload = struct.pack("<I", flags | (1 if checksum else 0)) + sections(enc(body), [(i, [enc(d) for d in ds]) for i, ds in seqs])
    length = 16 + len(payload) + (4 if checksum else 0)
    msg = header(length, request_id, response_to, OP_MSG) + payload
    if checksum:
        msg += struct.pack("<I", crc32c(msg))
    return msg


def op_query(ns: str, query, request_id=1) -> bytes:
    payload = struct.pack("<i", 0) + ns.encode() + b"\x00" + struct.pack("<ii", 0, -1) + enc(query)
    return header(16 + len(payload), request_id, 0, OP_QUERY) + payload


def op_reply(docs, response_to=1) -> bytes:
    payload = struct.pack("<iqii", 8, 0, 0, len(docs)) + b"".join(enc(d) for d in docs)
    return header(16 + len(payload), 2, response_to, OP_REPLY) + payload


def op_compressed(message: bytes, compressor: str) -> bytes:
    original_opcode = struct.unpack_from("<i", message, 12)[0]
    body = message[16:]
    cid, data = {"noop": (0, body), "snappy": (1, snappy.compress(body)), "zlib": (2, zlib.compress(body)),
                 "zstd": (3, zstandard.ZstdCompressor().compress(body))}[compressor]
    payload = struct.pack("<iiB", original_opcode, len(body), cid) + data
    rid, rto = struct.unpack_from("<ii", message, 4)
    return header(16 + len(payload), rid, rto, OP_COMPRESSED) + payload


# ---- commands shared by several targets --------------------------------------------------------

FIND = [("find", "orders"), ("filter", {"customerId": "C42", "orderDate": {"$gte": 20240101}}),
        ("sort", {"orderDate": -1}), ("limit", 10), ("$db", "shop"), ("lsid", {"id": bson.Binary(b"\x01" * 16, 4)})]
INSERT_BODY = [("insert", "orders"), ("ordered", True), ("$db", "shop")]
INSERT_DOCS = [{"_id": ObjectId("64b7f0000000000000000001"), "orderId": 1001, "customerId": "C1", "orderDate": 20240102},
               {"_id": ObjectId("64b7f0000000000000000002"), "orderId": Int64(1002), "customerId": "C2", "total": 9.5}]
AGG = [("aggregate", "orders"), ("pipeline", [{"$match": {"customerId": {"$in": ["C1", "C2"]}, "status": "open"}},
                                               {"$group": {"_id": "$customerId", "n": {"$sum": 1}}}, {"$sort": {"n": -1}}]),
       ("cursor", {}), ("$db", "shop")]
UPDATE_BODY = [("update", "orders"), ("ordered", True), ("$db", "shop")]
UPDATES = [{"q": {"orderId": 1001}, "u": {"$set": {"status": "shipped", "customerId": "C1"}}, "multi": False},
           {"q": {"customerId": {"$regex": "^C"}}, "u": {"$inc": {"n": 1}}, "multi": True, "upsert": True}]
DELETE_BODY = [("delete", "orders"), ("$db", "shop")]
DELETES = [{"q": {"$or": [{"orderId": 7}, {"customerId": None}]}, "limit": 0}]
HELLO = [("hello", 1), ("helloOk", True), ("compression", ["zstd", "snappy", "zlib"]),
         ("client", {"driver": {"name": "PyMongo", "version": "4.10.1"}}), ("$db", "admin")]


def op_msg_seeds() -> dict[str, bytes]:
    s = {
        "find": op_msg(FIND),
        "find_checksum": op_msg(FIND, checksum=True),
        "insert_sequence": op_msg(INSERT_BODY, [("documents", INSERT_DOCS)]),
        "insert_sequence_checksum": op_msg(INSERT_BODY, [("documents", INSERT_DOCS)], checksum=True),
        "update_sequence": op_msg(UPDATE_BODY, [("updates", UPDATES)]),
        "delete_sequence": op_msg(DELETE_BODY, [("deletes", DELETES)]),
        "aggregate": op_msg(AGG),
        "hello_exhaust": op_msg(HELLO + [("topologyVersion", {"processId": ObjectId("64b7f0000000000000000003"), "counter": Int64(0)}),
                                        ("maxAwaitTimeMS", 10000)], flags=1 << 16),
        "insert_w0_moretocome": op_msg(INSERT_BODY + [("writeConcern", {"w": 0})], [("documents", INSERT_DOCS[:1])], flags=2),
        "getmore": op_msg([("getMore", Int64(123456789)), ("collection", "orders"), ("batchSize", 100), ("$db", "shop")]),
        "killcursors": op_msg([("killCursors", "orders"), ("cursors", [Int64(123456789)]), ("$db", "shop")]),
        "reply_cursor": op_msg([("cursor", {"id": Int64(0), "ns": "shop.orders", "firstBatch": INSERT_DOCS}), ("ok", 1.0)], response_to=1),
        "isMaster_op_query": op_query("admin.$cmd", [("isMaster", 1), ("helloOk", True), ("compression", ["snappy", "zlib"]),
                                                      ("client", {"application": {"name": "seed"}})]),
        "isMaster_op_query_wrapped": op_query("admin.$cmd", [("$query", {"ismaster": 1}), ("$readPreference", {"mode": "secondaryPreferred"})]),
        "op_reply": op_reply([{"ismaster": True, "maxWireVersion": 17, "compression": ["zstd"], "ok": 1.0}]),
    }
    for c in ("snappy", "zlib", "zstd", "noop"):
        s[f"compressed_{c}_find"] = op_compressed(op_msg(FIND, request_id=3), c)
    s["compressed_zstd_insert"] = op_compressed(op_msg(INSERT_BODY, [("documents", INSERT_DOCS)], request_id=4), "zstd")
    s["compressed_snappy_query"] = op_compressed(op_query("admin.$cmd", [("isMaster", 1)], request_id=5), "snappy")
    s["stream_three_frames"] = op_msg(HELLO, request_id=1) + op_msg(FIND, request_id=2) + op_compressed(op_msg(AGG, request_id=3), "zlib")
    # Structural floods (issue 14): sections up to and past the 64-sequence cap, long identifiers.
    ping = [("ping", 1), ("$db", "admin")]
    s["sections_64"] = op_msg(ping, [(f"s{i}", []) for i in range(64)])
    s["sections_flood"] = op_msg(ping, [(f"s{i}", []) for i in range(3000)])
    s["sections_long_ids"] = op_msg(ping, [("x" * 250 + str(i), []) for i in range(8)])
    s["insert_many_docs"] = op_msg(INSERT_BODY, [("documents", [{"customerId": f"C{i}"} for i in range(1500)])])
    # The same bytes are also read as a document sequence's contents (BsonStreamCheck vs decodeOpMsg).
    s["document_run_all_types"] = document_run()
    return s


def document_run() -> bytes:
    """Three documents back to back holding every BSON type, the ones pymongo cannot write spelled out."""
    def element(t: int, key: bytes, value: bytes) -> bytes:
        return bytes([t]) + key + b"\x00" + value

    def string(v: bytes) -> bytes:
        return struct.pack("<i", len(v) + 1) + v + b"\x00"

    raw = (element(0x06, b"undef", b"") + element(0x0C, b"ptr", string(b"coll") + bytes(12))
           + element(0x0E, b"sym", string(b"s")) + element(0x13, "k\u00e9y".encode(), bytes(16)))
    legacy = struct.pack("<i", 4 + len(raw) + 1) + raw + b"\x00"
    typed = enc([("d", 1.5), ("s", "t\u00fc"), ("o", {"a": [1, {"b": None}]}), ("b", bson.Binary(b"xyz", 0)),
                 ("old", bson.Binary(b"xyz", 2)), ("id", ObjectId("64b7f0000000000000000003")), ("t", True),
                 ("dt", bson.datetime.datetime(2024, 1, 1)), ("r", Regex("^a", "i")), ("c", bson.Code("f()")),
                 ("w", bson.Code("g()", {"v": 1})), ("i", 7), ("ts", bson.Timestamp(1, 2)), ("l", Int64(9)),
                 ("min", MinKey()), ("max", MaxKey())])
    return typed + legacy + enc({})


def document_streams_seeds() -> dict[str, bytes]:
    """Single documents read as they pass: every type, a key path (a.b, c, _id), long and nested values."""
    typed, legacy, empty = _split_run(document_run())
    return {
        "all_types": typed,
        "legacy_types": legacy,
        "empty": empty,
        "key_path": enc([("_id", 1), ("pad", "p" * 3000), ("a", {"x": 1, "b": "C2600"}), ("c", "hashed me")]),
        "key_array": enc([("a", [{"b": 1}]), ("c", {"d": [1, 2]}), ("_id", {"k": 1})]),
        "key_duplicates": enc([("a", 1), ("a", {"b": 2}), ("c", None)]),
        "nested_deep": enc({"n": {"n": {"n": {"n": {"n": {"v": "x" * 300}}}}}}),
        "many_fields": enc({f"f{i}": i for i in range(1100)}),
        "long_values": enc([("s", "é" * 700), ("b", bson.Binary(b"\x01" * 2000, 0)), ("old", bson.Binary(b"q" * 1500, 2)),
                            ("r", Regex("x" * 400, "mix")), ("c", bson.Code("f" * 2000))]),
    }


def _split_run(run: bytes) -> list[bytes]:
    out = []
    while run:
        n = struct.unpack_from("<i", run)[0]
        out.append(run[:n])
        run = run[n:]
    return out


def query_shape_seeds() -> dict[str, bytes]:
    return {
        "find": sections(enc(FIND)),
        "find_nested": sections(enc([("find", "c"), ("filter", {"$and": [{"a.b": {"$exists": True}}, {"$nor": [{"x": {"$all": [1, 2]}}]}],
                                                                    "r": Regex("^a", "i"), "k": {"$elemMatch": {"v": {"$lt": MaxKey()}}}}),
                                     ("sort", {"a": 1, "b": -1}), ("$db", "d")])),
        "aggregate": sections(enc(AGG)),
        "aggregate_lookup": sections(enc([("aggregate", "c"), ("pipeline", [{"$match": {"$expr": {"$eq": ["$a", "$$b"]}}},
                                                                             {"$lookup": {"from": "o", "localField": "a", "foreignField": "b", "as": "j"}},
                                                                             {"$project": {"a": 1, "s": {"$concat": ["$x", "y"]}}}]),
                                          ("cursor", {"batchSize": 1}), ("$db", "d")])),
        "update_sequence": sections(enc(UPDATE_BODY), [("updates", [enc(u) for u in UPDATES])]),
        "update_inline": sections(enc(UPDATE_BODY[:1] + [("updates", UPDATES)] + UPDATE_BODY[1:])),
        "delete_sequence": sections(enc(DELETE_BODY), [("deletes", [enc(d) for d in DELETES])]),
        "count": sections(enc([("count", "orders"), ("query", {"status": {"$ne": "x"}, "n": {"$type": "int"}}), ("$db", "shop")])),
        "distinct": sections(enc([("distinct", "orders"), ("key", "customerId"), ("query", {"total": {"$gt": 1.5}}), ("$db", "shop")])),
        "findandmodify": sections(enc([("findAndModify", "orders"), ("query", {"orderId": 1}), ("sort", {"d": 1}),
                                       ("update", {"$set": {"s": 1}}), ("new", True), ("$db", "shop")])),
        "insert": sections(enc(INSERT_BODY), [("documents", [enc(d) for d in INSERT_DOCS])]),
        "weird_keys": sections(enc([("find", "c"), ("filter", {'q"uote': 1, "back\\slash": {"$in": []}, "ctl\x01": None,
                                                               "uni\u00e9": MinKey()}), ("$db", "d")])),
        # Structural cases (issue 14): shapes past the size limit, long names, long pipelines.
        "wide_or": sections(enc([("find", "c"), ("filter", {"$or": [{"a": i} for i in range(1500)]}), ("$db", "d")])),
        "wide_filter": sections(enc([("find", "c"), ("filter", {f"f{i}": i for i in range(3000)}), ("$db", "d")])),
        "long_name": sections(enc([("find", "c"), ("filter", {"k" * 3000: {"$gt": 1}}), ("sort", {"s" * 500: 1}), ("$db", "d")])),
        "long_pipeline": sections(enc([("aggregate", "c"), ("pipeline", [{"$match": {"a": i}} for i in range(800)]),
                                       ("cursor", {}), ("$db", "d")])),
    }


def raw_string(key: bytes, value: bytes) -> bytes:
    """A BSON string element with any bytes (pymongo's encoder only takes valid UTF-8)."""
    return b"\x02" + key + b"\x00" + struct.pack("<i", len(value) + 1) + value + b"\x00"


def raw_doc(elements: bytes) -> bytes:
    return struct.pack("<i", len(elements) + 5) + elements + b"\x00"


def client_names_seeds() -> dict[str, bytes]:
    def command(name: bytes, collection: bytes, db: bytes, field: bytes = b"a") -> bytes:
        filt = raw_doc(b"\x10" + field + b"\x00" + struct.pack("<i", 1))
        return sections(raw_doc(raw_string(name, collection) + b"\x03filter\x00" + filt + raw_string(b"$db", db)))

    return {
        "find": command(b"find", b"orders", b"shop"),
        "db_ff_fe": command(b"find", b"orders", b"shop\xff\xfe"),
        "collection_controls": command(b"find", b"a\x00b\nc\rd\x1b[0m\x7f", b"shop"),
        "escapes": command(b"find", b'q"uote\\back\\nslash', b'd"b'),
        "overlong_surrogate_past_max": command(b"find", b"\xc0\x80\xed\xa0\x80\xf4\x90\x80\x80", b"\xe0\x80\xaf"),
        "cut_sequence": command(b"find", b"x\xe2\x82", b"\x80"),
        "command_name_bytes": command(b"cmd\xff\n\"\\", b"c", b"db"),
        "field_name_bytes": command(b"find", b"c", b"db", field=b"f\xfe\n\""),
        "long_collection": command(b"find", b"c" * 32768, b"shop"),
        "long_command": command(b"x" * 32768, b"c", b"shop"),
        "long_db": command(b"find", b"c", b"d" * 32768),
        "valid_utf8": command(b"find", "caf\u00e9 \u20ac \U0001F600".encode(), "\u00fc".encode()),
    }


def lookup_rewrite_seeds() -> dict[str, bytes]:
    def case(body, seqs=(), reply=None) -> bytes:
        req = sections(enc(body), [(i, [enc(d) for d in ds]) for i, ds in seqs])
        return struct.pack("<I", len(req)) + req + (enc(reply) if reply is not None else b"")

    doc1 = {"_id": 1, "orderId": 1, "customerId": "C1", "region": "eu"}
    return {
        "find_eq_hit": case([("find", "orders"), ("filter", {"orderId": 1}), ("$db", "test")],
                            reply=[("cursor", {"id": Int64(0), "ns": "test.orders", "firstBatch": [doc1]}), ("ok", 1.0)]),
        "find_eq_miss_empty": case([("find", "orders"), ("filter", {"orderId": "A-7", "status": "open"}), ("$db", "test")],
                                   reply=[("cursor", {"id": Int64(0), "ns": "test.orders", "firstBatch": []}), ("ok", 1.0)]),
        "find_in": case([("find", "orders"), ("filter", {"orderId": {"$in": [1, "A-7", Int64(3), 99]}}), ("$db", "test")],
                        reply=[("cursor", {"id": Int64(0), "ns": "test.orders", "firstBatch": [doc1]}), ("ok", 1.0)]),
        "find_and": case([("find", "orders"), ("filter", {"$and": [{"orderId": 1.0}, {"x": 2}]}), ("$db", "test")]),
        "find_already_pinned": case([("find", "orders"), ("filter", {"orderId": 1, "customerId": "C1"}), ("$db", "test")]),
        "update_sequence": case([("update", "orders"), ("ordered", True), ("$db", "test")],
                                [("updates", [{"q": {"orderId": 1}, "u": {"$set": {"status": "x"}}},
                                              {"q": {"orderId": "A-7"}, "u": {"$set": {"customerId": "C9"}}}])],
                                reply=[("n", 0), ("nModified", 0), ("ok", 1.0)]),
        "delete_inline": case([("delete", "orders"), ("deletes", [{"q": {"orderId": 1}, "limit": 1}]), ("$db", "test")],
                              reply=[("n", 1), ("ok", 1.0)]),
        "insert_learns": case([("insert", "orders"), ("$db", "test")], [("documents", [doc1, {"orderId": 5, "customerId": "C5", "region": "ap"}])],
                              reply=[("n", 2), ("ok", 1.0)]),
        "findandmodify": case([("findAndModify", "orders"), ("query", {"orderId": Int64(3)}), ("update", {"$set": {"s": 1}}), ("$db", "test")],
                              reply=[("value", doc1), ("ok", 1.0)]),
        "count": case([("count", "orders"), ("query", {"orderId": 1}), ("$db", "test")], reply=[("n", 1), ("ok", 1.0)]),
        "aggregate_match": case([("aggregate", "orders"), ("pipeline", [{"$match": {"orderId": 1}}]), ("cursor", {}), ("$db", "test")],
                                reply=[("cursor", {"id": Int64(7), "ns": "test.orders", "firstBatch": [doc1]}), ("ok", 1.0)]),
        "error_reply": case([("find", "orders"), ("filter", {"orderId": 1}), ("$db", "test")],
                            reply=[("ok", 0.0), ("errmsg", "boom"), ("code", 2)]),
        "other_ns": case([("find", "customers"), ("filter", {"orderId": 1}), ("$db", "test")]),
    }


def filter_seeds() -> dict[str, bytes]:
    filters = {
        "eq": {"a": 5}, "range": {"a": {"$gte": 1, "$lt": 10}}, "in": {"a": {"$in": [1, "x", None, MinKey()]}},
        "or": {"$or": [{"a": 1}, {"a": {"$gt": 100}}], "b": {"c": 3}}, "dotted": {"b.c": {"$lte": "z"}, "a": {"$ne": 3}},
        "and_nested": {"$and": [{"a": {"$gt": 0}}, {"$or": [{"b.c": 1}, {"b.c": 2}]}]}, "regex": {"a": Regex("^abc")},
        "null": {"a": None, "b": {"$exists": False}}, "elem": {"a": {"$elemMatch": {"$gt": 1}}},
        "types": {"a": {"$gt": Int64(-5), "$lt": 2.5}, "b": {"$type": "string"}}, "not": {"a": {"$not": {"$gt": 3}}},
        "maxkey": {"a": {"$lt": MaxKey()}, "b": ObjectId("64b7f0000000000000000001")},
    }
    # Structural cases (issue 14): huge $or / $in, deep nesting, one list intersected many times.
    filters["or_wide"] = {"$or": [{"a": i} for i in range(1500)]}
    filters["or_hashed_like"] = {"$or": [{"a": i, "b": i} for i in range(1000)]}
    filters["in_wide"] = {"a": {"$in": list(range(3000))}}
    filters["and_in_ne"] = {"$and": [{"a": {"$in": list(range(800))}}] + [{"a": {"$ne": -i}} for i in range(800)]}
    deep: dict = {"a": 1}
    for _ in range(90):
        deep = {"$and": [deep, {"$or": [{"a": 2}, {"b.c": 3}]}]}
    filters["deep_and_or"] = deep
    filters["nested_or_ranges"] = {"$or": [{"a": {"$gte": i, "$lt": i + 3}} for i in range(0, 1600, 2)]}
    # Canonical forms (issue 17): rewritten by the server's optimiser before mongos targets.
    filters["all_one"] = {"a": {"$all": [10]}, "b.c": {"$all": ["x", "x"]}}
    filters["all_elem_empty"] = {"a": {"$all": [{"$elemMatch": {"$gt": 1}}]}, "b.c": {"$all": []}}
    filters["or_one_branch"] = {"$or": [{"$and": [{"a": {"$in": [3]}}, {"b.c": 1}]}]}
    filters["always_false_branch"] = {"$or": [{"a": 1}, {"$alwaysFalse": 1}, {"a": {"$in": []}}], "$alwaysTrue": 1}
    filters["always_false_top"] = {"a": 1, "$alwaysFalse": 1, "b": {"$not": {"$in": []}}}
    filters["all_wide"] = {"a": {"$all": list(range(3000))}}
    out = {k: enc(v) for k, v in filters.items()}
    # 3,000 $regex operators on one field (duplicate keys: valid BSON, built by hand).
    regex = b"".join(b"\x02$regex\x00" + struct.pack("<i", len(v) + 1) + v + b"\x00"
                     for v in (b"^a%d" % i for i in range(1500)))
    ops = struct.pack("<i", len(regex) + 5) + regex + b"\x00"
    out["regex_ops"] = struct.pack("<i", len(ops) + 8) + b"\x03a\x00" + ops + b"\x00"
    return out


def routing_file_seeds() -> dict[str, bytes]:
    out = {}
    for p in sorted((REPO / "tests" / "data" / "routing").iterdir()):
        sel = b"\x01" if p.suffix in (".yaml", ".yml") else b"\x00"
        out[p.stem] = sel + p.read_bytes()
    out["minimal_json"] = b"\x00" + b'{"collections": [{"ns": "a.b", "key": {"x": "hashed"}, "chunks": [' \
        b'{"min": {"x": {"$minKey": 1}}, "max": {"x": {"$numberLong": "0"}}, "shard": "s0"},' \
        b'{"min": {"x": {"$numberLong": "0"}}, "max": {"x": {"$maxKey": 1}}, "shard": "s1"}]}]}'
    return out


def config_seeds() -> dict[str, bytes]:
    out = {
        "minimal": b"upstream: mongodb://127.0.0.1:27017/\n",
        "full": b"""listen: 127.0.0.1:27016
upstream: mongodb://a:1,b:2/?tls=true&tlsCAFile=/ca.pem
admin: 127.0.0.1:9901
threads: 2
max_connections: 100
max_message_size: 1000000
timeouts: {connect_ms: 250, frame_read_ms: 1000, idle_ms: 0, request_ms: 0, drain_ms: 500}
compression: {client: [zstd, snappy], upstream: [zlib]}
client_tls: {cert_file: /c.pem, key_file: /k.pem}
routing: {file: routing.json, discovery: false, discovery_interval_s: 30}
stats: {record_values: false, max_shapes_per_namespace: 10}
evaluation: {enabled: true, simulated_shards: 6, candidates: ["shop.orders: {customerId: 1}"]}
rewrite: {rules: ["shop.orders: orderId -> customerId"]}
log: {level: debug}
""",
        "bad_types": b"threads: [1, 2]\ntimeouts: 5\nlisten: ':::'\nunknown_key: 1\n",
        "anchors": b"base: &b {connect_ms: 1}\ntimeouts: *b\nupstream: !!str mongodb://x/\n",
    }
    example = REPO / "examples" / "shardscope.yaml"
    if example.exists():
        out["example"] = example.read_bytes()
    return out


def pipeline_seeds() -> dict[str, bytes]:
    """Conversations of one connection: records [kind u8][length u16 LE][frame]; even kind a client
    frame, odd kind an upstream reply answering the request sent upstream kind // 2 before the latest."""
    def req(frame: bytes) -> bytes:
        return struct.pack("<BH", 0, len(frame)) + frame

    def rep(frame: bytes, back: int = 0) -> bytes:
        return struct.pack("<BH", 2 * back + 1, len(frame)) + frame

    lsid = {"id": bson.Binary(b"\x02" * 16, 4)}
    hello_reply = op_msg([("isWritablePrimary", True), ("msg", "isdbgrid"), ("maxWireVersion", 21),
                          ("compression", ["zstd"]), ("ok", 1.0)], response_to=1)
    def cursor(docs, cid=0) -> bytes:
        return op_msg([("cursor", {"id": Int64(cid), "ns": "shop.orders", "firstBatch": docs}), ("ok", 1.0)])
    by_order = [("find", "orders"), ("filter", {"orderId": "O1"}), ("$db", "shop")]
    found = [{"_id": 1, "orderId": "O1", "customerId": "C0100"}]
    ok_n = op_msg([("n", 1), ("ok", 1.0)])
    return {
        "hello_find": req(op_msg(HELLO, request_id=1)) + rep(hello_reply) + req(op_msg(FIND, request_id=2)) +
                      rep(cursor(INSERT_DOCS)),
        "rewrite_verified": req(op_msg(by_order, request_id=7)) + rep(cursor(found)),
        "rewrite_fallback": req(op_msg(by_order, request_id=7)) + rep(cursor([])) + rep(cursor([])),
        "rewrite_open_cursor": req(op_msg(by_order, request_id=7)) + rep(cursor([], cid=999)) +
                               rep(op_msg([("cursorsKilled", [Int64(999)]), ("ok", 1.0)]), back=1) + rep(cursor(found)),
        "retryable_update": req(op_msg([("update", "orders"), ("ordered", True), ("$db", "shop"), ("lsid", lsid),
                                        ("txnNumber", Int64(1))],
                                       [("updates", [{"q": {"orderId": "O1"}, "u": {"$set": {"status": "paid"}}}])], request_id=9)) +
                            rep(cursor(found)) + rep(ok_n),
        "compressed_both_ways": req(op_msg(HELLO, request_id=1)) + rep(hello_reply) +
                                req(op_compressed(op_msg(FIND, request_id=3), "zstd")) +
                                rep(op_compressed(cursor(INSERT_DOCS * 20), "zstd")) +
                                req(op_compressed(op_msg(by_order, request_id=4), "snappy")) + rep(op_compressed(cursor([]), "zlib")) +
                                rep(cursor(found)),
        "cursor_getmore_exhaust": req(op_msg(FIND, request_id=2)) + rep(cursor(INSERT_DOCS, cid=123)) +
                                  req(op_msg([("getMore", Int64(123)), ("collection", "orders"), ("$db", "shop")], flags=1 << 16,
                                             request_id=3)) +
                                  rep(op_msg([("cursor", {"id": Int64(123), "ns": "shop.orders", "nextBatch": INSERT_DOCS}),
                                              ("ok", 1.0)], flags=2)) +
                                  rep(op_msg([("cursor", {"id": Int64(0), "ns": "shop.orders", "nextBatch": []}), ("ok", 1.0)])),
        "writes": req(op_msg(INSERT_BODY, [("documents", INSERT_DOCS)], request_id=5)) + rep(ok_n) +
                  req(op_msg(UPDATE_BODY, [("updates", UPDATES)], request_id=6)) + rep(ok_n) +
                  req(op_msg(DELETE_BODY, [("deletes", DELETES)], request_id=7)) + rep(ok_n),
        "stale_config": req(op_msg(FIND, request_id=2)) +
                        rep(op_msg([("ok", 0.0), ("code", 13388), ("codeName", "StaleConfig"), ("errmsg", "stale"),
                                    ("ns", "shop.orders")])),
        "legacy_hello": req(op_query("admin.$cmd", {"isMaster": 1, "compression": ["zlib"]}, request_id=1)) +
                        rep(op_reply([{"ismaster": True, "maxWireVersion": 21, "compression": ["zlib"], "ok": 1.0}])),
    }


TARGETS = {"op_msg": op_msg_seeds, "pipeline": pipeline_seeds, "query_shape": query_shape_seeds, "client_names": client_names_seeds,
           "document_streams": document_streams_seeds,
           "lookup_rewrite": lookup_rewrite_seeds,
           "filter_intervals": filter_seeds, "routing_file": routing_file_seeds, "config": config_seeds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(REPO / "tests" / "data" / "fuzz"))
    args = ap.parse_args()
    out = Path(args.out)
    for target, make in TARGETS.items():
        d = out / target
        d.mkdir(parents=True, exist_ok=True)
        # Seeds are rewritten; inputs kept for regressions (regress-*) are left alone.
        for old in d.glob("seed-*"):
            old.unlink()
        seeds = make()
        for name, data in seeds.items():
            (d / f"seed-{name}").write_bytes(data)
        total = sum(len(v) for v in seeds.values())
        print(f"{target}: {len(seeds)} seeds, {total} bytes")


if __name__ == "__main__":
    main()
