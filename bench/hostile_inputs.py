#!/usr/bin/env python3
"""Worst-case client inputs through a real proxy: what one crafted message costs everyone else.

Starts FerretDB and `shardscope proxy` (one event-loop thread, a routing table with a compound
key on shop.orders and a hashed key on shop.events), runs a pymongo `ping` loop on its own
connection, and sends each crafted message on a raw socket. Per case it prints the message size,
the proxy's CPU time (user+sys from /proc, from sending the message until its reply or close)
and the ping latency p99 / max measured while the message was being handled.

    python3 bench/hostile_inputs.py [--binary build/shardscope] [--only or_4000,sections_60k]
    python3 bench/hostile_inputs.py --binary /work/main/build/shardscope --timeout 60   # "before"

The table in docs/hardening.md ("Worst cases a client can construct") comes from this script.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

import bson
from bson import Int64
from bson.son import SON
from pymongo import MongoClient

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "support"))
import harness  # noqa: E402

OP_MSG = 2013
MB = 1_000_000


def enc(doc) -> bytes:
    return bson.encode(SON(doc) if isinstance(doc, list) else doc)


def op_msg(body: bytes, seqs: list[tuple[bytes, bytes]] = (), request_id: int = 1) -> bytes:
    """seqs: (identifier, concatenated documents)."""
    parts = [struct.pack("<I", 0), b"\x00", body]
    for ident, docs in seqs:
        payload = ident + b"\x00" + docs
        parts.append(b"\x01" + struct.pack("<i", 4 + len(payload)) + payload)
    payload = b"".join(parts)
    return struct.pack("<iiii", 16 + len(payload), request_id, 0, OP_MSG) + payload


def command(doc: list) -> bytes:
    return op_msg(enc(doc + [("$db", "shop")]))


# ---- the crafted messages -------------------------------------------------------------------------


def sections(n: int) -> bytes:
    # Distinct identifiers: duplicates are refused at the first repeat.
    body = enc([("ping", 1), ("$db", "admin")])
    return op_msg(body, [(b"s%d" % i, b"") for i in range(n)])


def or_branches(n: int) -> bytes:
    return command([("find", "orders"), ("filter", {"$or": [{"customerId": "C%06d" % i} for i in range(n)]})])


def in_values(n: int) -> bytes:
    return command([("find", "orders"), ("filter", {"customerId": {"$in": ["C%07d" % i for i in range(n)]}})])


def hashed_or(n: int) -> bytes:
    return command([("find", "events"), ("filter", {"$or": [{"_id": i} for i in range(n)]})])


def and_of_ne(n: int) -> bytes:
    # A big $in intersected again and again with lists that are not full: each step walks the list.
    k = n // 2
    return command([("find", "orders"), ("filter", {"$and": [{"customerId": {"$in": ["C%06d" % i for i in range(k)]}}] +
                                                   [{"customerId": {"$ne": "Z%d" % i}} for i in range(n - k)]})])


def raw_doc(elements: bytes) -> bytes:
    return struct.pack("<i", 4 + len(elements) + 1) + elements + b"\x00"


def raw_string(key: bytes, value: bytes) -> bytes:
    return b"\x02" + key + b"\x00" + struct.pack("<i", len(value) + 1) + value + b"\x00"


def regex_ops(n: int) -> bytes:
    # Many $regex operators on one field (duplicate keys are valid BSON): each one looked up its
    # $options in the whole operator object.
    ops = raw_doc(b"".join(raw_string(b"$regex", b"^C%d" % i) for i in range(n)))
    filt = raw_doc(b"\x03customerId\x00" + ops)
    body = raw_doc(raw_string(b"find", b"orders") + b"\x03filter\x00" + filt + raw_string(b"$db", b"shop"))
    return op_msg(body)


def deep_and(depth: int) -> bytes:
    f: dict = {"customerId": "C1"}
    for _ in range(depth):
        f = {"$and": [f, {"x": 1}]}
    return command([("find", "orders"), ("filter", f)])


def insert_docs(n: int) -> bytes:
    docs = b"".join(enc({"_id": i, "customerId": "C%06d" % i, "orderDate": i}) for i in range(n))
    return op_msg(enc([("insert", "orders"), ("ordered", False), ("$db", "shop")]), [(b"documents", docs)])


def empty_docs(n: int) -> bytes:
    # Shard-key evaluation's worst case per byte: one event per 5 bytes.
    return op_msg(enc([("insert", "hostile_empty"), ("$db", "shop")]), [(b"documents", b"\x05\x00\x00\x00\x00" * n)])


def update_statements(n: int) -> bytes:
    stmts = b"".join(enc({"q": {"customerId": {"$gte": "C%06d" % i, "$lt": "C%06d" % (i + 1)}},
                          "u": {"$set": {"s": 1}}, "multi": True}) for i in range(n))
    return op_msg(enc([("update", "orders"), ("ordered", False), ("$db", "shop")]), [(b"updates", stmts)])


def pipeline_stages(n: int) -> bytes:
    return command([("aggregate", "orders"), ("pipeline", [{"$match": {"customerId": {"$gte": "C%d" % i}}} for i in range(n)]),
                    ("cursor", {})])


def wide_filter(n: int) -> bytes:
    # Query shape of a filter with very many top-level fields (and long names).
    return command([("find", "orders"), ("filter", {"f%07d" % i + "x" * 40: i for i in range(n)})])


def kill_cursors(n: int) -> bytes:
    return command([("killCursors", "orders"), ("cursors", [Int64(i + 1) for i in range(n)])])


CASES = {
    "sections_60k": ("60,000 empty kind-1 sections", lambda: sections(60_000)),
    "sections_3m": ("3,300,000 empty kind-1 sections", lambda: sections(3_300_000)),
    "or_4000": ("$or of 4,000 shard-key equalities", lambda: or_branches(4_000)),
    "or_50000": ("$or of 50,000 shard-key equalities", lambda: or_branches(50_000)),
    "or_1m": ("$or of 1,000,000 shard-key equalities", lambda: or_branches(1_000_000)),
    "in_2m": ("$in of 2,000,000 shard-key values", lambda: in_values(2_000_000)),
    "hashed_or_50000": ("$or of 50,000 hashed _id equalities", lambda: hashed_or(50_000)),
    "and_in_ne_20000": ("$and: $in of 10,000 + 10,000 $ne on the key", lambda: and_of_ne(20_000)),
    "regex_ops_20000": ("20,000 $regex operators on the key", lambda: regex_ops(20_000)),
    "deep_and_95": ("$and nested 95 deep", lambda: deep_and(95)),
    "insert_800k": ("insert of 800,000 documents", lambda: insert_docs(800_000)),
    "empty_docs_9m": ("insert of 9,500,000 empty documents", lambda: empty_docs(9_500_000)),
    "update_400k": ("update with 400,000 ranged statements", lambda: update_statements(400_000)),
    "pipeline_600k": ("aggregate with 600,000 leading $match stages", lambda: pipeline_stages(600_000)),
    "wide_filter_800k": ("filter with 800,000 fields (query shape)", lambda: wide_filter(800_000)),
    "kill_cursors_2m": ("killCursors with 2,800,000 ids", lambda: kill_cursors(2_800_000)),
}

# ---- measurement ----------------------------------------------------------------------------------


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class PingLoop(threading.Thread):
    def __init__(self, uri: str):
        super().__init__(daemon=True)
        self.client = MongoClient(uri, directConnection=True, serverSelectionTimeoutMS=600_000,
                                  socketTimeoutMS=600_000, maxPoolSize=1)
        self.samples: list[tuple[float, float]] = []  # (start, latency)
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            t = time.perf_counter()
            try:
                self.client.admin.command("ping")
            except Exception:  # noqa: BLE001
                pass
            self.samples.append((t, time.perf_counter() - t))
            time.sleep(0.002)

    def window(self, start: float, end: float) -> list[float]:
        # A ping started before the window but finishing inside it was delayed by it too.
        return sorted(lat for s, lat in self.samples if s + lat >= start and s <= end)


def p99(xs: list[float]) -> float:
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))] if xs else float("nan")


def send_and_wait(port: int, frame: bytes, timeout: float) -> str:
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(timeout)
    try:
        s.sendall(frame)
        head = b""
        while len(head) < 16:
            chunk = s.recv(16 - len(head))
            if not chunk:
                return "closed"
            head += chunk
        length = struct.unpack_from("<i", head)[0]
        left = length - 16
        body = b""
        while left > 0:
            chunk = s.recv(min(left, 1 << 20))
            if not chunk:
                return "closed mid-reply"
            body += chunk
            left -= len(chunk)
        try:
            reply = bson.decode(body[5:]) if len(body) > 5 else {}
            return "ok" if reply.get("ok") else f"error {reply.get('code')}"
        except Exception:  # noqa: BLE001
            return "reply"
    except socket.timeout:
        return f"no answer in {timeout:.0f} s"
    except OSError as e:
        return f"closed ({e.__class__.__name__})"
    finally:
        s.close()


def routing_file(path: Path) -> None:
    data = REPO / "tests" / "data" / "routing"
    orders = json.loads((data / "orders_6shards.json").read_text())
    hashed = json.loads((data / "hashed_4shards.json").read_text())
    orders["shards"] += hashed["shards"]
    orders["collections"] += [c for c in hashed["collections"] if c["ns"] == "shop.events"]
    path.write_text(json.dumps(orders))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=str(REPO / "build" / "shardscope"))
    ap.add_argument("--only", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for one message's answer")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.list:
        for k, (d, _) in CASES.items():
            print(f"{k:20} {d}")
        return
    names = [n for n in args.only.split(",") if n] or list(CASES)
    work = Path(tempfile.mkdtemp(prefix="shardscope-hostile-"))
    routing = work / "routing.json"
    routing_file(routing)
    ferret = harness.FerretDB(work / "ferretdb").start()
    proxy = harness.Proxy(ferret.uri, "--routing.file", str(routing), "--threads", "1", "--timeouts.frame_read_ms", "600000",
                          workdir=work / "proxy", binary=Path(args.binary)).start()
    pid = proxy.process.pid
    pings = PingLoop(proxy.uri)
    pings.start()
    time.sleep(1.0)
    base = pings.window(time.perf_counter() - 0.8, time.perf_counter())
    print(f"binary {args.binary}; idle ping p99 {p99(base) * 1e3:.1f} ms")
    print(f"{'case':20} {'bytes':>12} {'proxy CPU s':>12} {'ping p99 ms':>12} {'ping max ms':>12}  answer")
    try:
        for name in names:
            desc, make = CASES[name]
            frame = make()
            cpu0 = proc_cpu(pid)
            t0 = time.perf_counter()
            answer = send_and_wait(proxy.port, frame, args.timeout)
            t1 = time.perf_counter()
            time.sleep(0.05)
            cpu = proc_cpu(pid) - cpu0
            lat = pings.window(t0, t1)
            print(f"{name:20} {len(frame):>12,} {cpu:>12.3f} {p99(lat) * 1e3:>12.1f} {(max(lat) if lat else 0) * 1e3:>12.1f}  "
                  f"{answer} ({t1 - t0:.2f} s)", flush=True)
            if not proxy.alive():
                print("proxy died")
                break
            if answer.startswith("no answer"):
                print("(the proxy is still busy with it: stopping here)")
                break
    finally:
        pings.stop.set()
        proxy.kill()
        ferret.stop()


if __name__ == "__main__":
    main()
