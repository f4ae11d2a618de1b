"""The sections of bench/RESULTS.md for issue 19: TLS on both hops, 16 MB messages, the reply-size sweep,
threads and io_uring. Called by report.py with the runs of one bench/run.sh; each section is skipped when
its rows were not run (run.sh --only)."""


def _pick(runs, label, loop="closed"):
    for r in runs:
        if r.get("label") == label and r.get("mode") == "load" and r.get("loop") == loop and r.get("ops"):
            return r
    return None


def _proxy(r):
    p = (r or {}).get("watch", {}).get("proxy")
    return p if p and p.get("alive", True) else None


def _cpu(r):
    p = _proxy(r)
    return p["cpu_us_per_op"] if p else None


def _f(v, d=0):
    return "—" if v is None else f"{v:,.{d}f}"


def _other(r):
    return _f(r.get("other_cores"), 2) if r else "—"


def tls(runs, w):
    rows = [("direct-tls", "direct to the canned upstream (TLS)"),
            ("haproxy-tls", "haproxy 2.6, TLS terminated and re-originated"),
            ("shardscope-fwd-tls", "shardscope, forwarding only, TLS both hops"),
            ("shardscope-full-tls", "shardscope, routing + stats + evaluation + admin, TLS both hops")]
    if not any(_pick(runs, k) for k, _ in rows):
        return
    w("## TLS on both hops (issue 19)")
    w("")
    w("Client → TLS → proxy → TLS → canned upstream; TLS 1.3, `TLS_AES_128_GCM_SHA256` on every hop (the load "
      "generator offers and the upstream accepts only that suite), P-256 certificate; same mix, connections and "
      "pinning as the plain rows; connections (and handshakes) are made before the window.")
    w("")
    w("| setup | ops/s | vs haproxy-tls | added p50 / p99 µs at the open-loop rate | proxy CPU µs/op | "
      "ops per proxy CPU-s | other processes (cores) | errors |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|")
    hap = _pick(runs, "haproxy-tls")
    base = _pick(runs, "direct-tls", "open")
    for k, title in rows:
        r = _pick(runs, k)
        if not r:
            w(f"| {title} | not measured | | | | | | |")
            continue
        o = _pick(runs, k, "open")
        added = "—"
        if o and base and k != "direct-tls":
            added = (f"+{o['service_us']['p50'] - base['service_us']['p50']:.1f} / "
                     f"+{o['service_us']['p99'] - base['service_us']['p99']:.1f}")
        elif o and k == "direct-tls":
            added = f"(base {o['service_us']['p50']:.1f} / {o['service_us']['p99']:.1f})"
        c = _cpu(r)
        w(f"| {title} | {r['ops_per_s']:,.0f} | {_f(r['ops_per_s'] / hap['ops_per_s'] if hap else None, 2)}× | "
          f"{added} | {_f(c, 2)} | {_f(1e6 / c if c else None)} | {_other(r)} | {r['errors']} |")
    m = next((r for r in runs if r.get("label") == "shardscope-full-tls-malloc" and "mallocs" in r), None)
    w("")
    if m:
        w(f"Heap allocations, everything on, TLS both hops (`malloc_counter.so`, 4 s window): {m['mallocs']:,} in "
          f"{m['ops']:,} operations = **{m['mallocs_per_op']:.3f} per operation**.")
        w("")


def large(runs, w):
    base = {r["label"]: r["rss_kib"] for r in runs if r.get("mode") == "baseline"}
    kinds = [("direct", "direct"), ("haproxy", "haproxy (TCP)"), ("shardscope-fwd", "shardscope, forwarding only"),
             ("shardscope-full", "shardscope, everything on")]
    if not any(_pick(runs, f"large-{what}-{k}") for what in ("insert", "insertmany", "reply") for k, _ in kinds):
        return
    w("## 16 MB messages (issue 19)")
    w("")
    w("One connection, depth 1: inserts of one 16,000,000-byte document back to back, the same bytes as an insertMany "
      "batch of 1,024 documents (~16 KB each; issue 29), or finds each answered by a "
      "16 MB cursor batch (~68,000 order documents). A fresh proxy per row; *peak over start* = the proxy's VmHWM "
      "after the row minus its RSS before it, divided by the message size (one message in flight).")
    w("")
    w("| message | setup | msgs/s | MB/s | vs haproxy | proxy CPU ms/msg | proxy CPU µs/MB | peak over start, MB | "
      "× message size | other processes |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for what in ("insert", "insertmany", "reply"):
        hap = _pick(runs, f"large-{what}-haproxy")
        for k, title in kinds:
            label = f"large-{what}-{k}"
            r = _pick(runs, label)
            if not r:
                continue
            secs = r["seconds"]
            size = (r["bytes_out"] if what != "reply" else r["bytes_in"]) / max(1, r["ops"])
            mbs = r["ops"] * size / secs / 1e6
            hmbs = None
            if hap:
                hsize = (hap["bytes_out"] if what != "reply" else hap["bytes_in"]) / max(1, hap["ops"])
                hmbs = hap["ops"] * hsize / hap["seconds"] / 1e6
            p = _proxy(r)
            cpu_ms = p["cpu_us_per_op"] / 1000 if p else None
            peak = (p["hwm_kib"] - base[label]) * 1024 / 1e6 if p and label in base else None
            message = "insert 16 MB as 1,024 documents" if what == "insertmany" else f"{what} 16 MB"
            w(f"| {message} | {title} | {r['ops_per_s']:,.1f} | {mbs:,.0f} | "
              f"{_f(mbs / hmbs if hmbs else None, 2)}× | {_f(cpu_ms, 2)} | "
              f"{_f(p['cpu_us_per_op'] / (size / 1e6) if p else None, 0)} | {_f(peak, 1)} | "
              f"{_f(peak * 1e6 / size if peak is not None else None, 2)} | {_other(r)} |")
    w("")


def sweep(runs, w):
    sizes = [(1024, "1 KiB"), (16384, "16 KiB"), (262144, "256 KiB"), (4194304, "4 MiB")]
    kinds = [("direct", "direct"), ("haproxy", "haproxy"), ("shardscope-fwd", "shardscope fwd"),
             ("shardscope-full", "shardscope full")]
    if not any(_pick(runs, f"sweep-{b}-{k}") for b, _ in sizes for k, _ in kinds):
        return
    w("## Reply-size sweep (issue 19)")
    w("")
    w("Finds only, 16 connections, depth 1; the canned upstream answers each with a cursor batch of about the given "
      "size (order documents of ~236 bytes with a note and an items array). Proxy CPU per operation and per MB of "
      "reply; *fwd* = stats and evaluation off, *full* = routing + stats + evaluation + admin.")
    w("")
    w("| batch | reply bytes | setup | ops/s | vs haproxy | proxy CPU µs/op | proxy CPU µs/MB | "
      "CPU vs haproxy | other processes |")
    w("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for b, name in sizes:
        hap = _pick(runs, f"sweep-{b}-haproxy")
        for k, title in kinds:
            r = _pick(runs, f"sweep-{b}-{k}")
            if not r:
                continue
            size = r["bytes_in"] / max(1, r["ops"])
            c = _cpu(r)
            hc = _cpu(hap)
            w(f"| {name} | {size:,.0f} | {title} | {r['ops_per_s']:,.0f} | "
              f"{_f(r['ops_per_s'] / hap['ops_per_s'] if hap else None, 2)}× | {_f(c, 1)} | "
              f"{_f(c / (size / 1e6) if c else None, 0)} | {_f(c / hc if c and hc else None, 2)}× | {_other(r)} |")
    w("")


def threads(runs, w):
    rows = [("threads-shardscope-full", "shardscope, everything on", 1),
            ("threads-shardscope-full-t2", "shardscope, everything on", 2),
            ("threads-shardscope-fwd-t2", "shardscope, forwarding only", 2)]
    if not any(_pick(runs, k) for k, _, _ in rows):
        return
    w("## Threads (issue 19)")
    w("")
    w("Closed loop, the standard mix and 64 connections. `--threads 1` is pinned to CPU 1 alone; `--threads 2` may "
      "use both CPUs, one of which also runs the load generator and the upstream (2 cores in all here). "
      "*ops per proxy CPU-s* is what one proxy core carries at this efficiency.")
    w("")
    w("| setup | threads | ops/s | proxy CPU (cores) | proxy CPU µs/op | ops per proxy CPU-s | other processes |")
    w("|---|---:|---:|---:|---:|---:|---:|")
    for k, title, n in rows:
        r = _pick(runs, k)
        if not r:
            continue
        p = _proxy(r)
        cores = p["cpu_s"] / r["seconds"] if p else None
        c = _cpu(r)
        w(f"| {title} | {n} | {r['ops_per_s']:,.0f} | {_f(cores, 2)} | {_f(c, 2)} | {_f(1e6 / c if c else None)} | "
          f"{_other(r)} |")
    w("")


def uring(runs, w):
    rows = [("ab-shardscope-fwd", "forwarding only", "epoll"), ("ab-shardscope-fwd-uring", "forwarding only", "io_uring"),
            ("ab-shardscope-full", "everything on", "epoll"), ("ab-shardscope-full-uring", "everything on", "io_uring")]
    if not any(_pick(runs, k) for k, _, _ in rows):
        return
    w("## io_uring A/B (issue 19)")
    w("")
    w("The same sources built twice: `build/` (Asio's epoll reactor) and `build-uring/` "
      "(`-DSHARDSCOPE_IO_URING=ON`: `BOOST_ASIO_HAS_IO_URING` + `BOOST_ASIO_DISABLE_EPOLL`, liburing 2.3), rows "
      "alternating, closed loop, standard mix.")
    w("")
    w("| setup | backend | ops/s | proxy CPU µs/op | ops per proxy CPU-s | other processes |")
    w("|---|---|---:|---:|---:|---:|")
    for k, title, backend in rows:
        r = _pick(runs, k)
        if not r:
            w(f"| {title} | {backend} | not measured | | | |")
            continue
        c = _cpu(r)
        w(f"| {title} | {backend} | {r['ops_per_s']:,.0f} | {_f(c, 2)} | {_f(1e6 / c if c else None)} | {_other(r)} |")
    m = next((r for r in runs if r.get("label") == "shardscope-full-uring-malloc" and "mallocs" in r), None)
    if m:
        w("")
        w(f"Heap allocations with io_uring, everything on: {m['mallocs_per_op']:.3f} per operation.")
    w("")


def render(runs, w):
    for part in (tls, large, sweep, threads, uring):
        part(runs, w)
