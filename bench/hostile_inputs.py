#!/usr/bin/env python3
"""Worst-case client inputs through a real proxy: what one crafted message costs everyone else.

Starts FerretDB and `shardscope proxy` (one event-loop thread, a routing table with a compound
key on shop.orders and a hashed key on shop.events), runs a pymongo `ping` loop on its own
connection, and sends each crafted message on a raw socket. Per case it prints the message size,
the proxy's CPU time (user+sys from /proc, from sending the message until its reply or close),
the ping latency p99 / max measured while the message was being handled, and the proxy's RSS
after the case (settled 1 s after the client left) minus before it.

Issue 28's classes are scenarios (several messages, or the admin endpoint): long names, random
bytes as names (then `promtool check metrics` on /metrics), 20,000 pipelined requests, a frame
with a compressor the connection did not negotiate, and a 10 MB URL / 10 MB header /
million-chunk body on the admin port, 3,000 orders with 16 KB ids taught to the lookup mapping
(`mapping_long_ids`) and a `$in` of 2,500 / 20,000 known orders (`rewrite_in_*`). Run each alone (`--only`, a fresh proxy each) when its
"RSS after" matters: a case's memory is measured against the end of the one before. The `names_*` cases then scrape /metrics once and print its
size, the time to its first byte and the proxy's RSS peak while it rendered.

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
from bson.codec_options import CodecOptions
from bson.son import SON
from pymongo import MongoClient

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "support"))
import harness  # noqa: E402
from raw_http import status_line_while_sending  # noqa: E402

OP_MSG = 2013
MB = 1_000_000
LENIENT = CodecOptions(unicode_decode_error_handler="replace")


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


def ping_padded(n: int) -> bytes:
    # The control for kill_cursors(n): the same bytes in a command nothing analyses (a ping whose
    # extra field mongod ignores), so the difference is what the cursor list costs.
    return command([("ping", 1), ("cursors", [Int64(i + 1) for i in range(n)])])


# ---- issue 28: scenarios of several messages ------------------------------------------------------
# Each takes the proxy (harness.Proxy) and returns (bytes sent, answer).


def exchange_all(port: int, frames: list[bytes], timeout: float) -> str:
    """Sends the frames one after the other on one connection, each after the previous answer."""
    answers: dict[str, int] = {}
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(timeout)
    try:
        for frame in frames:
            s.sendall(frame)
            head = recv_exact(s, 16)
            if head is None:
                answers["closed"] = answers.get("closed", 0) + 1
                s.close()
                s = socket.create_connection(("127.0.0.1", port))
                s.settimeout(timeout)
                continue
            body = recv_exact(s, struct.unpack_from("<i", head)[0] - 16) or b""
            try:  # the server's errmsg may quote a name that is not UTF-8
                reply = bson.decode(body[5:], codec_options=LENIENT)
                key = "ok" if reply.get("ok") else f"error {reply.get('code')}"
            except Exception:  # noqa: BLE001
                key = "reply"
            answers[key] = answers.get(key, 0) + 1
    except socket.timeout:
        answers["timeout"] = 1
    finally:
        s.close()
    return ", ".join(f"{n} {k}" for k, n in sorted(answers.items()))


def recv_exact(s: socket.socket, n: int) -> bytes | None:
    out = b""
    while len(out) < n:
        chunk = s.recv(min(n - len(out), 1 << 20))
        if not chunk:
            return None
        out += chunk
    return out


def long_names(px, timeout: float) -> tuple[int, str]:
    """300 finds on distinct 32 KB collection names, 200 distinct 32 KB command names."""
    frames = [command([("find", f"c{i:03d}" + "x" * 32768), ("filter", {"a": 1})]) for i in range(300)]
    frames += [command([(f"cmd{i:03d}" + "y" * 32768, 1)]) for i in range(200)]
    return sum(map(len, frames)), exchange_all(px.port, frames, timeout)


NASTY = [b"\xff\xfe", b"\x00", b"\n", b"\r", b'"', b"\\", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
         b"\xe2\x82", b"\x80", b"\x1b[0m", b"\x7f"]


def random_names(px, timeout: float) -> tuple[int, str]:
    """450 commands whose $db, collection and command names are random bytes."""
    import random
    rng = random.Random(28)

    def name(cstring: bool) -> bytes:
        n = b"".join(rng.choice(NASTY) if rng.random() < 0.6 else bytes(rng.randrange(256) for _ in range(4))
                     for _ in range(rng.randint(1, 6)))
        return n.replace(b"\x00", b"\x01") if cstring else n

    frames = []
    for _ in range(150):
        db, coll, cmd = name(False), name(False), name(True)
        frames.append(op_msg(raw_doc(raw_string(b"find", coll) + raw_string(b"$db", db))))
        frames.append(op_msg(raw_doc(b"\x10" + cmd + b"\x00" + struct.pack("<i", 1) + raw_string(b"$db", db))))
        frames.append(op_msg(raw_doc(raw_string(cmd, coll) + raw_string(b"$db", db))))
    return sum(map(len, frames)), exchange_all(px.port, frames, timeout)


PIPELINED = 20_000


def pipelined(px, timeout: float) -> tuple[int, str]:
    """20,000 pings sent at once on one connection (more than 4,096 are in flight: the upstream
    answers slower than the proxy reads), replies read afterwards."""
    frames = b"".join(op_msg(enc([("ping", 1), ("$db", "admin")]), request_id=i) for i in range(1, PIPELINED + 1))
    s = socket.create_connection(("127.0.0.1", px.port))
    s.settimeout(timeout)
    answers: dict[str, int] = {}
    try:
        s.sendall(frames)
        for _ in range(PIPELINED):
            head = recv_exact(s, 16)
            if head is None:
                answers["closed"] = 1
                break
            reply = bson.decode(recv_exact(s, struct.unpack_from("<i", head)[0] - 16)[5:])
            key = "ok" if reply.get("ok") else f"error {reply.get('code')}"
            answers[key] = answers.get(key, 0) + 1
    except (socket.timeout, OSError) as e:
        answers[type(e).__name__] = 1
    finally:
        s.close()
    return len(frames), ", ".join(f"{n} {k}" for k, n in sorted(answers.items()))


def unnegotiated_zstd(px, timeout: float) -> tuple[int, str]:
    """A zstd-compressed find on a connection that sent no hello (zstd enabled for clients)."""
    import zstandard
    plain = command([("find", "orders"), ("filter", {"customerId": "C1"})])
    body = zstandard.ZstdCompressor().compress(plain[16:])
    payload = struct.pack("<iiB", OP_MSG, len(plain) - 16, 3) + body
    frame = struct.pack("<iiii", 16 + len(payload), 1, 0, 2012) + payload
    return len(frame), send_and_wait(px.port, frame, timeout)


def admin_status(px, request: bytes, timeout: float) -> str:
    line = status_line_while_sending(px.admin_url, request, timeout)
    return line.decode(errors="replace") or "closed without a status line"


def admin_url_10mb(px, timeout: float) -> tuple[int, str]:
    r = b"GET /" + b"u" * 10_000_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    return len(r), admin_status(px, r, timeout)


def admin_header_10mb(px, timeout: float) -> tuple[int, str]:
    r = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"h" * 10_000_000 + b"\r\n\r\n"
    return len(r), admin_status(px, r, timeout)


def admin_chunks_1m(px, timeout: float) -> tuple[int, str]:
    r = (b"POST /stats/reset HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
         b"1\r\nc\r\n" * 1_000_000 + b"0\r\n\r\n")
    return len(r), admin_status(px, r, timeout)


# Issue 28 items 2 and 3: the lookup rule on shop.mapped (unsharded in the bench's routing file, so
# the other cases are not rewritten: what the rewrite costs is the same either way).
REWRITE_RULE = "shop.mapped: orderId -> customerId"


def _client(px) -> MongoClient:
    return MongoClient(px.uri, directConnection=True, serverSelectionTimeoutMS=20_000, socketTimeoutMS=600_000)


def mapping_long_ids(px, timeout: float) -> tuple[int, str]:
    """3,000 orders with 16 KB orderId and 16 KB customerId inserted through the proxy (each
    confirmed insert teaches the mapping), then the client leaves."""
    c = _client(px)
    coll = c.shop.mapped
    coll.drop()
    docs = [{"_id": i, "orderId": f"{i:06d}" + "o" * 16_384, "customerId": f"{i:06d}" + "c" * 16_384}
            for i in range(3_000)]
    for i in range(0, len(docs), 100):
        coll.insert_many(docs[i:i + 100])
    c.close()
    return sum(len(bson.encode(d)) for d in docs), "inserted; " + rewrite_mapping(px)


def rewrite_mapping(px) -> str:
    import urllib.request
    with urllib.request.urlopen(px.admin_url + "/rewrite", timeout=10) as r:
        rule = next(x for x in json.load(r) if x["ns"] == "shop.mapped")
    m = rule["mapping"]
    over = sum(n for why, n in rule["skipped"].items() if "budget" in why)
    return (f"mapping size {m['size']}, bytes {m.get('bytes', 'n/a')}, valuesTooLong {m.get('valuesTooLong', 'n/a')}, "
            f"applied {rule['applied']}, over budget {over}")


def _learn_orders(px, n: int, customers: int) -> list[str]:
    c = _client(px)
    coll = c.shop.mapped
    coll.drop()
    ids = [f"O{i:07d}" for i in range(n)]
    docs = [{"_id": i, "orderId": ids[i], "customerId": f"C{i % customers:06d}"} for i in range(n)]
    for i in range(0, n, 1_000):
        coll.insert_many(docs[i:i + 1_000])
    c.close()
    return ids


def rewrite_in(n: int):
    """`find {orderId: {$in: [n known ids]}}` on 20,000 known orders over 8,000 customers (learned
    through the proxy first, outside the measured window), answered as a driver would see it (a
    rewritten $in whose first batch cannot show every value re-runs as written)."""
    def setup(px) -> None:
        setup.ids = _learn_orders(px, 20_000, 8_000)

    def run(px, timeout: float) -> tuple[int, str]:
        frame = command([("find", "mapped"), ("filter", {"orderId": {"$in": setup.ids[:n]}})])
        answer = send_and_wait(px.port, frame, timeout)
        return len(frame), f"{answer}; " + rewrite_mapping(px)
    return run, setup


SCENARIOS = {
    "names_long_32k": ("300 finds on 32 KB collection names + 200 32 KB command names", long_names),
    "names_random_bytes": ("450 commands with random bytes as $db / collection / command names", random_names),
    "pipelined_20k": ("20,000 pipelined pings on one connection", pipelined),
    "unnegotiated_zstd": ("zstd find on a connection that negotiated nothing", unnegotiated_zstd),
    "admin_url_10mb": ("admin: a 10 MB URL", admin_url_10mb),
    "admin_header_10mb": ("admin: a 10 MB header", admin_header_10mb),
    "admin_chunks_1m": ("admin: a body of 1,000,000 chunks", admin_chunks_1m),
    "mapping_long_ids": ("3,000 orders with 16 KB orderId and customerId (lookup mapping)", mapping_long_ids),
    "rewrite_in_2500": ("$in of 2,500 known orderIds (8,000 customers)", *rewrite_in(2_500)),
    "rewrite_in_20k": ("$in of 20,000 known orderIds (8,000 customers)", *rewrite_in(20_000)),
}


def proc_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) * 1024


def scrape_metrics(px, timeout: float) -> str:
    """GET /metrics once: declared size, time to first byte, the proxy's RSS peak meanwhile, and
    what promtool says of the page (read whole only when under 64 MB)."""
    import shutil
    import subprocess
    import urllib.request
    pid = px.process.pid
    peak = [proc_rss(pid)]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], proc_rss(pid))
            time.sleep(0.01)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    t0 = time.perf_counter()
    with urllib.request.urlopen(px.admin_url + "/metrics", timeout=timeout) as r:
        first = r.read(1)
        ttfb = time.perf_counter() - t0
        declared = int(r.headers.get("Content-Length") or 0)
        page = first + r.read(64 << 20) if declared <= 64 << 20 else b""
    done.set()
    t.join()
    lint = "not read"
    if page and shutil.which("promtool"):
        rc = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True).returncode
        lint = "promtool ok" if rc == 0 else f"promtool rc {rc}"
    return (f"/metrics {declared / 1e6:.2f} MB, first byte {ttfb * 1e3:.0f} ms, "
            f"RSS peak {peak[0] / (1 << 20):.0f} MiB, {lint}")


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
    "kill_cursors_1m": ("killCursors with 1,000,000 ids", lambda: kill_cursors(1_000_000)),
    "control_1m": ("ping of the same size (control for kill_cursors_1m)", lambda: ping_padded(1_000_000)),
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
        if struct.unpack_from("<i", head, 12)[0] == 2012:
            return "compressed reply"
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
        for k, (d, _) in {**CASES, **SCENARIOS}.items():
            print(f"{k:20} {d}")
        return
    names = [n for n in args.only.split(",") if n] or list(CASES) + list(SCENARIOS)
    work = Path(tempfile.mkdtemp(prefix="shardscope-hostile-"))
    routing = work / "routing.json"
    routing_file(routing)
    ferret = harness.FerretDB(work / "ferretdb").start()
    proxy = harness.Proxy(ferret.uri, "--routing.file", str(routing), "--threads", "1", "--timeouts.frame_read_ms", "600000",
                          "--rewrite-rule", REWRITE_RULE,
                          workdir=work / "proxy", binary=Path(args.binary), admin=True).start()
    pid = proxy.process.pid
    pings = PingLoop(proxy.uri)
    pings.start()
    time.sleep(1.0)
    base = pings.window(time.perf_counter() - 0.8, time.perf_counter())
    print(f"binary {args.binary}; idle ping p99 {p99(base) * 1e3:.1f} ms")
    print(f"{'case':20} {'bytes':>12} {'proxy CPU s':>12} {'ping p99 ms':>12} {'ping max ms':>12} {'RSS after MiB':>14}  answer")
    try:
        for name in names:
            rss0 = proc_rss(pid)
            cpu0 = proc_cpu(pid)
            t0 = time.perf_counter()
            if name in SCENARIOS:
                desc, run, *setup = SCENARIOS[name]
                if setup:  # outside the measured window
                    setup[0](proxy)
                    rss0, cpu0, t0 = proc_rss(pid), proc_cpu(pid), time.perf_counter()
                size, answer = run(proxy, args.timeout)
            else:
                desc, make = CASES[name]
                frame = make()
                size = len(frame)
                answer = send_and_wait(proxy.port, frame, args.timeout)
            t1 = time.perf_counter()
            time.sleep(0.05)
            cpu = proc_cpu(pid) - cpu0
            lat = pings.window(t0, t1)
            time.sleep(1.0)  # the client has left: what stays
            grown = (proc_rss(pid) - rss0) / (1 << 20)
            print(f"{name:20} {size:>12,} {cpu:>12.3f} {p99(lat) * 1e3:>12.1f} {(max(lat) if lat else 0) * 1e3:>12.1f} "
                  f"{grown:>+14.1f}  {answer} ({t1 - t0:.2f} s)", flush=True)
            if name.startswith("names_") and proxy.alive():
                print(f"{'':20} {scrape_metrics(proxy, args.timeout)}", flush=True)
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
