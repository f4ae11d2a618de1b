#!/usr/bin/env python3
"""Load and soak run of the shardscope proxy, against FerretDB on 127.0.0.1 only.

Phases (all bounded in time and count):
  1. warm-up       pymongo workload threads, then the baseline RSS and fd count of the proxy
  2. soak          --connections idle raw connections (asyncio; each does one hello and then pings
                   now and then), the mixed pymongo workload, the admin endpoint polled, and waves of
                   slow clients: "dribble" (1 byte/s), "big" (a header declaring --big-declared bytes,
                   then 1 byte/s) and "half-open" (5 bytes, then silence). Each must be cut by
                   --timeouts.frame_read_ms; their cut times are recorded.
  3. release       every soak client leaves; the proxy's fd count must return to its baseline
  4. drain         writer threads insert unique documents; SIGTERM mid-load; afterwards every write
                   the proxy acknowledged must be in FerretDB (and we count applied-but-unacked ones)
RSS and open fds of the proxy are sampled every --sample-s seconds (/proc/<pid>/status, /proc/<pid>/fd).

    python3 tests/soak/soak.py                                   # CI size: 2,000 connections, 60 s
    python3 tests/soak/soak.py --connections 10000 --seconds 1800 --json-out soak.json
Needs root or `ulimit -n` >= 2 x connections + 1000 (the script raises its own limit when it may; the
proxy and FerretDB inherit it). Environment: SHARDSCOPE_BIN (proxy binary), SHARDSCOPE_FERRETDB.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import signal
import struct
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "support"))

import bson  # noqa: E402
import harness  # noqa: E402
from pymongo import MongoClient  # noqa: E402
from pymongo.errors import OperationFailure, PyMongoError  # noqa: E402

OP_MSG = 2013


def op_msg(body: dict, request_id: int) -> bytes:
    payload = struct.pack("<I", 0) + b"\x00" + bson.encode(body)
    return struct.pack("<iiii", 16 + len(payload), request_id, 0, OP_MSG) + payload


def raise_fd_limit(needed: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(needed, soft)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(want, hard)))
    except (ValueError, PermissionError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Probe:
    """RSS and open fds of one process, sampled by a thread."""

    def __init__(self, pid: int, interval: float):
        self.pid, self.interval = pid, interval
        self.samples: list[dict] = []
        self.phase = "start"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def read(self) -> dict:
        rss = 0
        try:
            for line in open(f"/proc/{self.pid}/status"):
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
            fds = len(os.listdir(f"/proc/{self.pid}/fd"))
        except (FileNotFoundError, ProcessLookupError):
            return {"t": time.monotonic(), "rss_kb": 0, "fds": 0, "phase": self.phase}
        return {"t": time.monotonic(), "rss_kb": rss, "fds": fds, "phase": self.phase}

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.samples.append(self.read())

    def start(self) -> "Probe":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def peak(self, phase: str | None = None, key: str = "rss_kb") -> int:
        vals = [s[key] for s in self.samples if phase is None or s["phase"] == phase]
        return max(vals) if vals else 0


class Workload:
    """Mixed pymongo workload in threads: inserts (acked ones counted), finds, updates, aggregates,
    counts, deletes; plus one thread polling the admin endpoint."""

    def __init__(self, uri: str, admin_url: str | None, threads: int, db: str = "soak"):
        self.client = MongoClient(uri, directConnection=True, maxPoolSize=threads, retryWrites=False,
                                  serverSelectionTimeoutMS=5000, connectTimeoutMS=5000)
        self.coll = self.client[db]["items"]
        self.admin_url = admin_url
        self.threads_n = threads
        self.ops = 0
        self.errors = 0
        self.error_samples: list[str] = []
        self.upstream_errors = 0
        self.upstream_error_samples: list[str] = []
        self.acked_inserts = 0
        self.admin_polls = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def _worker(self, wid: int) -> None:
        rnd = random.Random(wid)
        n = 0
        while not self._stop.is_set():
            n += 1
            key = rnd.randrange(1000)
            try:
                r = rnd.random()
                if r < 0.35:
                    self.coll.insert_one({"_id": f"w{wid}-{n}", "k": key, "customerId": f"C{key:04d}", "v": n, "pad": "x" * rnd.randrange(10, 400)})
                    with self._lock:
                        self.acked_inserts += 1
                elif r < 0.65:
                    list(self.coll.find({"k": key}).limit(5))
                elif r < 0.80:
                    self.coll.update_one({"k": key}, {"$inc": {"v": 1}})
                elif r < 0.90:
                    list(self.coll.aggregate([{"$match": {"k": {"$lt": key}}}, {"$group": {"_id": None, "n": {"$sum": 1}}}]))
                elif r < 0.97:
                    self.coll.count_documents({"customerId": f"C{key:04d}"})
                else:
                    self.coll.delete_one({"k": key, "v": {"$lt": 0}})
                with self._lock:
                    self.ops += 1
            except OperationFailure as e:
                # The upstream answered ok:0 (FerretDB's SQLite backend reports lock contention
                # under this load): the proxy forwarded it faithfully. Counted apart from transport
                # errors, which would be the proxy's.
                with self._lock:
                    self.upstream_errors += 1
                    if len(self.upstream_error_samples) < 3:
                        self.upstream_error_samples.append(repr(e)[:200])
                time.sleep(0.05)
            except PyMongoError as e:
                with self._lock:
                    self.errors += 1
                    if len(self.error_samples) < 5:
                        self.error_samples.append(repr(e)[:200])
                time.sleep(0.05)

    def _admin(self) -> None:
        while not self._stop.wait(0.5):
            for path in ("/stats", "/metrics", "/readyz"):
                try:
                    urllib.request.urlopen(self.admin_url + path, timeout=5).read()
                    self.admin_polls += 1
                except OSError:
                    pass

    def start(self) -> "Workload":
        self._threads = [threading.Thread(target=self._worker, args=(i,), daemon=True) for i in range(self.threads_n)]
        if self.admin_url:
            self._threads.append(threading.Thread(target=self._admin, daemon=True))
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)
        self.client.close()


# ---- raw asyncio clients ----------------------------------------------------------------------

async def read_message(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readexactly(16)
    length = struct.unpack_from("<i", head)[0]
    return head + await reader.readexactly(length - 16)


async def idle_client(port: int, ready: asyncio.Event, stop: asyncio.Event, stats: dict, rid: int) -> None:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 20)
    except (OSError, asyncio.TimeoutError):
        stats["connect_failed"] += 1
        return
    try:
        writer.write(op_msg({"hello": 1, "$db": "admin"}, rid))
        await writer.drain()
        await asyncio.wait_for(read_message(reader), 30)
        stats["connected"] += 1
        await ready.wait()
        rnd = random.Random(rid)
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), rnd.uniform(5, 15))
            except asyncio.TimeoutError:
                writer.write(op_msg({"ping": 1, "$db": "admin"}, rid))
                await writer.drain()
                await asyncio.wait_for(read_message(reader), 30)
                stats["pings"] += 1
    except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
        stats["idle_errors"] += 1
        if len(stats["idle_error_samples"]) < 5:
            stats["idle_error_samples"].append(repr(e)[:200])
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except OSError:
            pass


async def slow_client(port: int, kind: str, declared: int, limit_s: float) -> float | None:
    """Seconds from the first byte until the proxy cut the connection (None: not cut within limit_s)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    header = struct.pack("<iiii", declared, 7, 0, OP_MSG)
    start = time.monotonic()

    async def feed() -> None:
        try:
            if kind == "half-open":
                writer.write(header[:5])
                await writer.drain()
                return
            if kind == "big":
                writer.write(header)
                await writer.drain()
            i = 0
            body = header if kind == "dribble" else b"\x00" * declared
            while True:
                writer.write(body[i % len(body):i % len(body) + 1])
                await writer.drain()
                i += 1
                await asyncio.sleep(1.0)
        except (OSError, asyncio.CancelledError):
            return

    feeder = asyncio.create_task(feed())
    try:
        data = await asyncio.wait_for(reader.read(1), limit_s)
        cut = time.monotonic() - start if data == b"" else None
    except asyncio.TimeoutError:  # before OSError: since Python 3.11 it is the builtin TimeoutError
        cut = None
    except (ConnectionError, OSError):
        cut = time.monotonic() - start
    feeder.cancel()
    writer.close()
    return cut


async def idle_cycle(args, port: int) -> dict:
    stats = {"connected": 0, "connect_failed": 0, "pings": 0, "idle_errors": 0, "idle_error_samples": []}
    ready, stop = asyncio.Event(), asyncio.Event()
    tasks = [asyncio.create_task(idle_client(port, ready, stop, stats, i + 100)) for i in range(args.connections)]
    deadline = time.monotonic() + 120
    while stats["connected"] + stats["connect_failed"] + stats["idle_errors"] < args.connections and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    ready.set()
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {"connected": stats["connected"], "errors": stats["idle_errors"] + stats["connect_failed"]}


async def soak_phase(args, port: int, probe: Probe) -> dict:
    stats = {"connected": 0, "connect_failed": 0, "pings": 0, "idle_errors": 0, "idle_error_samples": []}
    ready, stop = asyncio.Event(), asyncio.Event()
    tasks = []
    opened_at = time.monotonic()
    for i in range(args.connections):
        tasks.append(asyncio.create_task(idle_client(port, ready, stop, stats, i + 100)))
        if i % 200 == 199:
            await asyncio.sleep(0.05)
    while stats["connected"] + stats["connect_failed"] + stats["idle_errors"] < args.connections:
        if time.monotonic() - opened_at > 120:
            break
        await asyncio.sleep(0.2)
    stats["open_s"] = round(time.monotonic() - opened_at, 2)
    ready.set()
    probe.phase = "soak"
    stats["fds_with_idle"] = probe.read()["fds"]

    limit = args.frame_read_ms / 1000 + 5
    cuts: dict[str, list] = {"dribble": [], "big": [], "half-open": []}
    deadline = time.monotonic() + args.seconds
    wave = 0
    while time.monotonic() < deadline:
        wave += 1
        jobs = []
        for kind, count in (("dribble", args.slow), ("big", args.big_slow), ("half-open", args.slow)):
            jobs += [(kind, asyncio.create_task(slow_client(port, kind, args.big_declared if kind == "big" else 4096, limit)))
                     for _ in range(count)]
        for kind, job in jobs:
            try:
                cuts[kind].append(await job)
            except OSError:
                cuts[kind].append(None)
        remaining = deadline - time.monotonic()
        if remaining > 0:
            await asyncio.sleep(min(remaining, max(0.0, args.wave_s - limit)))
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    stats["slow_waves"] = wave
    stats["slow_cut_s"] = {k: {"n": len(v), "not_cut": sum(1 for c in v if c is None),
                               "max": round(max([c for c in v if c is not None], default=0), 2),
                               "min": round(min([c for c in v if c is not None], default=0), 2)} for k, v in cuts.items()}
    return stats


# ---- drain --------------------------------------------------------------------------------------

def drain_phase(args, proxy: harness.Proxy, upstream_uri: str) -> dict:
    acked: list[set] = [set() for _ in range(args.drain_writers)]
    failures = [0] * args.drain_writers
    stop = threading.Event()

    def writer(w: int) -> None:
        c = MongoClient(proxy.uri, directConnection=True, maxPoolSize=1, retryWrites=False,
                        serverSelectionTimeoutMS=2000, connectTimeoutMS=2000, socketTimeoutMS=20000)
        coll = c["soak"]["drain"]
        n = 0
        try:
            while not stop.is_set():
                n += 1
                _id = f"d{w}-{n}"
                try:
                    coll.insert_one({"_id": _id, "w": w, "pad": "y" * 200})
                    acked[w].add(_id)
                except PyMongoError:
                    failures[w] += 1
                    if failures[w] > 3:  # the proxy is gone: stop
                        return
                    time.sleep(0.05)
        finally:
            c.close()

    threads = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(args.drain_writers)]
    for t in threads:
        t.start()
    time.sleep(args.drain_after_s)
    acked_before = sum(len(a) for a in acked)
    t0 = time.monotonic()
    proxy.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 60
    while proxy.alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    exit_s = time.monotonic() - t0
    rc = proxy.stop()
    stop.set()
    for t in threads:
        t.join(timeout=30)
    all_acked = set().union(*acked)
    direct = MongoClient(upstream_uri, directConnection=True)
    in_db = {d["_id"] for d in direct["soak"]["drain"].find({}, {"_id": 1})}
    direct.close()
    return {"writers": args.drain_writers, "acked_before_sigterm": acked_before, "acked": len(all_acked),
            "documents": len(in_db), "lost_acked": len(all_acked - in_db),
            "applied_unacked": len(in_db - all_acked), "proxy_exit_code": rc, "exit_after_sigterm_s": round(exit_s, 2)}


# ---- main ---------------------------------------------------------------------------------------

def run(args) -> dict:
    fd_limit = raise_fd_limit(2 * args.connections + 2 * (args.slow * 2 + args.big_slow) + 2000)
    workdir = Path(tempfile.mkdtemp(prefix="shardscope-soak-"))
    upstream = None
    if args.upstream:
        upstream_uri = args.upstream
    else:
        upstream = harness.FerretDB(workdir / "ferretdb").start()
        upstream_uri = upstream.uri
    extra = ["--timeouts.frame_read_ms", str(args.frame_read_ms), "--threads", str(args.threads),
             "--max_connections", str(args.connections + 1000), "--log-level", args.log_level]
    if args.routing:
        extra += ["--routing", args.routing]
    proxy = harness.Proxy(upstream_uri, *extra, workdir=workdir / "proxy", admin=True,
                          binary=Path(args.proxy_bin) if args.proxy_bin else None).start()
    result: dict = {"connections": args.connections, "seconds": args.seconds, "workers": args.workers,
                    "threads": args.threads, "frame_read_ms": args.frame_read_ms, "fd_limit": fd_limit,
                    "logs": str(workdir)}
    probe = Probe(proxy.process.pid, args.sample_s).start()
    try:
        baseline_idle = probe.read()
        probe.phase = "warmup"
        wl = Workload(proxy.uri, proxy.admin_url, args.workers).start()
        warm_t0 = time.monotonic()
        if args.warmup_cycle:
            # One open/close cycle of the idle connections first: the allocator keeps what N
            # sessions needed (free lists), so growth measured from here on is a leak, not a plateau.
            result["warmup_cycle"] = asyncio.run(idle_cycle(args, proxy.port))
        time.sleep(max(0.0, args.warmup_s - (time.monotonic() - warm_t0)))
        warm = probe.read()
        t0 = time.monotonic()
        soak = asyncio.run(soak_phase(args, proxy.port, probe))
        probe.phase = "release"
        wl.stop()
        soak_s = time.monotonic() - t0
        end_loaded = probe.samples[-1] if probe.samples else probe.read()
        # fds back to the idle baseline once every client has left (sessions close asynchronously).
        deadline = time.monotonic() + 20
        after = probe.read()
        while after["fds"] > baseline_idle["fds"] and time.monotonic() < deadline:
            time.sleep(0.25)
            after = probe.read()
        time.sleep(1)
        after = probe.read()
        result.update({
            "fds_idle_baseline": baseline_idle["fds"], "fds_after_warmup": warm["fds"],
            "fds_peak": probe.peak(key="fds"), "fds_after_release": after["fds"],
            "rss_mb_idle_baseline": round(baseline_idle["rss_kb"] / 1024, 1),
            "rss_mb_after_warmup": round(warm["rss_kb"] / 1024, 1),
            "rss_mb_peak_soak": round(probe.peak("soak") / 1024, 1),
            "rss_mb_end_of_soak": round(end_loaded["rss_kb"] / 1024, 1),
            "rss_mb_after_release": round(after["rss_kb"] / 1024, 1),
            "rss_mb_growth_after_warmup": round((after["rss_kb"] - warm["rss_kb"]) / 1024, 1),
            "workload_ops": wl.ops, "workload_ops_per_s": round(wl.ops / max(soak_s + args.warmup_s, 1), 1),
            "workload_errors": wl.errors, "workload_error_samples": wl.error_samples,
            "upstream_errors": wl.upstream_errors, "upstream_error_samples": wl.upstream_error_samples,
            "acked_inserts": wl.acked_inserts, "admin_polls": wl.admin_polls, **soak,
        })
        # RSS trend during the soak (first and last third), to tell a leak from a plateau.
        ss = [s for s in probe.samples if s["phase"] == "soak"]
        if len(ss) >= 6:
            third = len(ss) // 3
            result["rss_mb_soak_first_third_avg"] = round(sum(s["rss_kb"] for s in ss[:third]) / third / 1024, 1)
            result["rss_mb_soak_last_third_avg"] = round(sum(s["rss_kb"] for s in ss[-third:]) / third / 1024, 1)
        probe.phase = "drain"
        if args.drain_writers:
            result["drain"] = drain_phase(args, proxy, upstream_uri)
        result["samples"] = [{"t": round(s["t"] - probe.samples[0]["t"], 1), "phase": s["phase"],
                              "rss_mb": round(s["rss_kb"] / 1024, 1), "fds": s["fds"]} for s in probe.samples]
    finally:
        probe.stop()
        proxy.stop()
        if upstream:
            upstream.stop()
        result["proxy_stderr_tail"] = proxy.stderr_text()[-3000:]
    return result


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--connections", type=int, default=2000, help="idle raw connections held during the soak")
    ap.add_argument("--seconds", type=float, default=60, help="soak duration")
    ap.add_argument("--warmup-s", type=float, default=10)
    ap.add_argument("--no-warmup-cycle", dest="warmup_cycle", action="store_false",
                    help="skip opening and closing the idle connections once during warm-up")
    ap.add_argument("--workers", type=int, default=8, help="pymongo workload threads")
    ap.add_argument("--threads", type=int, default=1, help="proxy I/O threads")
    ap.add_argument("--slow", type=int, default=20, help="dribble and half-open clients per wave (each)")
    ap.add_argument("--big-slow", type=int, default=10, help="clients per wave declaring --big-declared bytes")
    ap.add_argument("--big-declared", type=int, default=40_000_000)
    ap.add_argument("--wave-s", type=float, default=15, help="a wave of slow clients every this many seconds")
    ap.add_argument("--frame-read-ms", type=int, default=2000)
    ap.add_argument("--sample-s", type=float, default=2)
    ap.add_argument("--drain-writers", type=int, default=8, help="0 skips the SIGTERM drain phase")
    ap.add_argument("--drain-after-s", type=float, default=3)
    ap.add_argument("--routing", default=str(HERE.parents[1] / "tests/data/routing/orders_6shards.json"))
    ap.add_argument("--upstream", help="use this upstream URI instead of starting FerretDB (127.0.0.1 only)")
    ap.add_argument("--proxy-bin", help="default: SHARDSCOPE_BIN or build/shardscope")
    ap.add_argument("--log-level", default="warn")
    ap.add_argument("--json-out")
    return ap


def main() -> int:
    args = parser().parse_args()
    result = run(args)
    text = json.dumps(result, indent=1)
    if args.json_out:
        Path(args.json_out).write_text(text)
    summary = {k: v for k, v in result.items() if k not in ("samples", "proxy_stderr_tail")}
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
