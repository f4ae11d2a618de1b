#!/usr/bin/env python3
"""Turns the load generator's JSON lines (one per run) into the Markdown of bench/RESULTS.md.

usage: report.py RESULTS.jsonl NOTES.txt CMDLINE PIN RATE IDLE DURATION
"""
import datetime
import json
import os
import platform
import re
import statistics
import sys

ROWS = [
    ("direct", "direct to the canned upstream"),
    ("haproxy", "haproxy 2.6, TCP mode (byte relay)"),
    ("shardscope-fwd", "shardscope, forwarding only (stats and evaluation off)"),
    ("shardscope-full", "shardscope, routing + stats + evaluation + admin"),
    ("mongobetween", "mongobetween v0.1.0"),
]


def load(path):
    runs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                runs.append(json.loads(line))
    return runs


def pick(runs, label, mode, loop=None):
    for r in runs:
        if r.get("label") == label and r.get("mode") == mode and (loop is None or r.get("loop") == loop):
            return r
    return None


def fmt(v, digits=0, dash="—"):
    if v is None:
        return dash
    return f"{v:,.{digits}f}"


# --- run.sh's latency section: interleaved rounds (issue 29 item 4) --------------------------------------
LAT_TARGETS = [
    ("direct", "direct to the canned upstream"),
    ("haproxy", "haproxy, TCP mode"),
    ("shardscope-fwd", "shardscope, forwarding only"),
    ("shardscope-full", "shardscope, routing + stats + evaluation + admin"),
    ("shardscope-full-base", "baseline build (BENCH_BASELINE_BIN), everything on"),
]
OTHER_LOAD_LIMIT = 0.15  # cores used by other processes during a run above which the run is flagged


def round_runs(runs, prefix):
    """{(target, round): run} for an interleaved section's runs (label PREFIX-TARGET, tag "round=N slot=M")."""
    out = {}
    for r in runs:
        label = r.get("label", "")
        m = re.search(r"round=(\d+)", r.get("tag", ""))
        if r.get("mode") == "load" and label.startswith(prefix + "-") and m:
            out[(label[len(prefix) + 1:], int(m.group(1)))] = r
    return out


def lat_runs(runs):
    return round_runs(runs, "lat")


def lat_slot(r):
    """The run's place in its round (tag "slot=M"), for showing the order."""
    m = re.search(r"slot=(\d+)", r.get("tag", ""))
    return int(m.group(1)) if m else 0


def per_round_table(w, present, rounds, got, ok, cell):
    """An interleaved section's runs, one row per round in run order: cell(target, run, the round's runs)."""
    w("| round | order | " + " | ".join(t for t, _ in present) + " | other load, max (cores) |")
    w("|---:|---|" + "---:|" * len(present) + "---:|")
    for rd in rounds:
        here = {t: got.get((t, rd)) for t, _ in present}
        order = sorted((r for r in here.values() if r), key=lat_slot)
        cells = []
        for t, _ in present:
            r = here[t]
            cells.append("—" if not r else "failed" if not ok(r) else ("⚠ " if lat_flagged(r) else "") + cell(t, r, here))
        other = max((r.get("other_cores", 0) for r in here.values() if r), default=0)
        names = " → ".join(r["label"].split("-", 1)[1] for r in order)  # without the section's prefix
        w(f"| {rd} | {names} | " + " | ".join(cells) + f" | {other:.2f} |")
    w("")


def lat_ok(r):
    """A run that measured something: operations done, no run error, the proxy alive to the end."""
    return bool(r and r.get("ops") and not r.get("run_error") and r.get("service_us")
                and r.get("watch", {}).get("proxy", {}).get("alive", True))


def lat_flagged(r):
    return bool(r and r.get("other_cores", 0) > OTHER_LOAD_LIMIT)


def lat_added(lat, target, rounds, q):
    """Per round in `rounds`: the target's service-latency quantile q minus that round's direct run's."""
    out = {}
    for rd in rounds:
        t, d = lat.get((target, rd)), lat.get(("direct", rd))
        if lat_ok(t) and lat_ok(d):
            out[rd] = t["service_us"][q] - d["service_us"][q]
    return out


def latency_rounds(runs, w, rate):
    lat = lat_runs(runs)
    if not lat:
        return
    rounds = sorted({rd for _, rd in lat})
    seconds = statistics.median(r["seconds"] for r in lat.values() if r.get("seconds"))
    present = [(t, title) for t, title in LAT_TARGETS if any((t, rd) in lat for rd in rounds)]
    med = lambda xs: statistics.median(xs) if xs else None
    w("## Added latency, interleaved rounds (issue 29 item 4)")
    w("")
    w(f"All four targets kept up for the whole section, each proxy on its own port; {len(rounds)} rounds, each one "
      f"open-loop run per target at {int(float(rate)):,} ops/s, 64 connections, ~{seconds:.0f} s measured after 2 s "
      "warm-up, the order changing per round (a Williams square: each target comes right after every other once "
      f"per {len(present)} rounds). Load generator, upstream and proxy on CPU 0. Latency is service latency (from the actual "
      "send). *p50 / p99* = median over rounds; *added* = the run's figure minus the same round's direct run, "
      "median over rounds; ⚠ = a run during which other processes used more than "
      f"{OTHER_LOAD_LIMIT} of a core (kept in the medians, listed below).")
    w("")
    w("| target | rounds | p50 µs | p99 µs | added p50 µs | added p99 µs | added p99 min – max µs | flagged rounds |")
    w("|---|---:|---:|---:|---:|---:|---:|---|")
    summary = {}
    for target, title in LAT_TARGETS:
        mine = [lat.get((target, rd)) for rd in rounds]
        good = [r for r in mine if lat_ok(r)]
        if not any(mine):
            continue
        p50 = med([r["service_us"]["p50"] for r in good])
        p99 = med([r["service_us"]["p99"] for r in good])
        flagged = [str(rd) for rd in rounds if lat_flagged(lat.get((target, rd)))]
        failed = [str(rd) for rd in rounds if (target, rd) in lat and not lat_ok(lat[(target, rd)])]
        flag_cell = ", ".join(flagged) or "—"
        if failed:
            flag_cell += f"; failed: {', '.join(failed)}"
        if target == "direct":
            w(f"| {title} | {len(good)} | {fmt(p50, 1)} | {fmt(p99, 1)} | (base) | (base) | | {flag_cell} |")
            continue
        a50 = lat_added(lat, target, rounds, "p50")
        a99 = lat_added(lat, target, rounds, "p99")
        summary[target] = a99
        spread = f"{min(a99.values()):+,.1f} – {max(a99.values()):+,.1f}" if a99 else "—"
        m50, m99 = med(list(a50.values())), med(list(a99.values()))
        w(f"| {title} | {len(good)} | {fmt(p50, 1)} | {fmt(p99, 1)} | "
          f"{'—' if m50 is None else f'{m50:+,.1f}'} | {'—' if m99 is None else f'{m99:+,.1f}'} | {spread} | {flag_cell} |")
    w("")

    # Per round, so a reader can see which rounds drove the spread and which were disturbed.
    w("Per round: service p50 / p99 µs (added p99 in brackets); the order is the run order in the round.")
    w("")
    def cell(t, r, here):
        d = here.get("direct")
        c = f"{r['service_us']['p50']:,.1f} / {r['service_us']['p99']:,.1f}"
        if t != "direct" and lat_ok(d):
            c += f" ({r['service_us']['p99'] - d['service_us']['p99']:+,.1f})"
        return c
    per_round_table(w, present, rounds, lat, lat_ok, cell)

    # The item-4 check: shardscope's median added p99 within 1.5x haproxy's.
    def check(rounds_used, note="", indent=""):
        h = med(list(lat_added(lat, "haproxy", rounds_used, "p99").values()))
        base = ("shardscope-full-base",) if any(("shardscope-full-base", rd) in lat for rd in rounds) else ()
        for target in ("shardscope-full", "shardscope-fwd") + base:
            s = med(list(lat_added(lat, target, rounds_used, "p99").values()))
            if s is None or h is None:
                w(f"{indent}- {target}{note}: median added p99 vs 1.5 × haproxy's — not measured")
                continue
            line = f"{indent}- {target}{note}: median added p99 {s:+,.1f} µs vs 1.5 × haproxy's {h:+,.1f} µs = {1.5 * h:+,.1f} µs — "
            if h <= 0:
                line += "**not decidable** (haproxy's median added p99 is not above zero: within the noise)"
            else:
                line += f"**{'met' if s <= 1.5 * h else 'not met'}** ({s / h:.2f}× haproxy's)"
            w(line)

    w("Issue 29 item 4, added p99 within 1.5× haproxy's (medians over rounds):")
    w("")
    check(rounds)
    clean = [rd for rd in rounds if not any(lat_flagged(lat.get((t, rd))) for t, _ in LAT_TARGETS)]
    dirty = len(rounds) - len(clean)
    if dirty:
        w(f"- {dirty} of {len(rounds)} rounds had a flagged run (above, included)"
          + (f"; over the {len(clean)} unflagged rounds only:" if clean else "; no round was unflagged."))
        if clean:
            check(clean, f" (rounds {', '.join(map(str, clean))})", "  ")
    if len(rounds) < 3:
        w(f"- only {len(rounds)} rounds: a median over fewer than 3 rounds does not outvote one disturbed round")
    w("")


# --- run.sh's closed section: closed-loop throughput, interleaved rounds (issue 29 item 3) ----------------
CLOSED_TARGETS = [  # {tls}: "" for the plain rows, "-tls" for TLS on both hops
    ("haproxy{tls}", "haproxy, TCP mode"),
    ("shardscope-fwd{tls}", "shardscope, forwarding only"),
    ("shardscope-full{tls}", "shardscope, routing + stats + evaluation + admin"),
    ("shardscope-fwd{tls}-base", "baseline build (BENCH_BASELINE_BIN), forwarding only"),
    ("shardscope-full{tls}-base", "baseline build (BENCH_BASELINE_BIN), everything on"),
]


def closed_ok(r):
    return bool(r and r.get("ops") and not r.get("run_error") and r.get("watch", {}).get("proxy", {}).get("alive", True))


def closed_rounds(runs, w, tls=""):
    targets = [(t.format(tls=tls), title.replace("TCP mode", "TLS terminated and re-originated") if tls else title)
               for t, title in CLOSED_TARGETS]
    got = {k: r for k, r in round_runs(runs, "closed").items() if k[0] in dict(targets)}
    if not got:
        return
    base = "haproxy" + tls
    rounds = sorted({rd for _, rd in got})
    seconds = statistics.median(r["seconds"] for r in got.values() if r.get("seconds"))
    present = [(t, title) for t, title in targets if any((t, rd) in got for rd in rounds)]
    med = lambda xs: statistics.median(xs) if xs else None
    span = lambda xs, f: f"{f(min(xs))} – {f(max(xs))}" if xs else "—"
    w(f"## Closed loop{', TLS on both hops' if tls else ''}, interleaved rounds (issue 29 item 3)")
    w("")
    w(f"The three proxies kept up for the whole section, each on its own port and pinned to CPU 1 (load generator "
      f"and upstream on CPU 0); {len(rounds)} rounds, each one closed-loop run per target, 64 connections, "
      f"~{seconds:.0f} s measured after 2 s warm-up, the order changing per round (as in the latency section). "
      "*× haproxy* = the run's ops/s over the same round's haproxy run, median over rounds (min – max); *proxy CPU "
      "µs/op* = the proxy's utime + stime over the window per operation, median over rounds; *user / sys* = the "
      "same split into user and kernel time; *loop user* = the user time of the proxy's main thread alone (the event "
      "loop, where the features' per-request work runs; a shardscope row's other threads are the evaluation worker "
      f"and the admin server); ⚠ = a run during which other processes used more than {OTHER_LOAD_LIMIT} of a core "
      "(kept in the medians).")
    w("")
    w("| target | rounds | ops/s, median (min – max) | × haproxy, median (min – max) | proxy CPU µs/op, median | "
      "user / sys µs/op, median | loop user µs/op, median | flagged rounds |")
    w("|---|---:|---:|---:|---:|---:|---:|---|")
    watched = lambda r, k: r["watch"]["proxy"].get(k) if "proxy" in r.get("watch", {}) else None
    for target, title in present:
        good = {rd: got[(target, rd)] for rd in rounds if closed_ok(got.get((target, rd)))}
        ops = [r["ops_per_s"] for r in good.values()]
        ratios = [r["ops_per_s"] / got[(base, rd)]["ops_per_s"] for rd, r in good.items()
                  if closed_ok(got.get((base, rd)))]
        cpu = {k: [v for r in good.values() if (v := watched(r, k)) is not None]
               for k in ("cpu_us_per_op", "user_us_per_op", "sys_us_per_op", "main_user_us_per_op")}
        flagged = [str(rd) for rd in rounds if lat_flagged(got.get((target, rd)))]
        failed = [str(rd) for rd in rounds if (target, rd) in got and not closed_ok(got[(target, rd)])]
        flag_cell = ", ".join(flagged) or "—"
        if failed:
            flag_cell += f"; failed: {', '.join(failed)}"
        ratio_cell = "(base)" if target == base else (
            f"{med(ratios):.2f}× ({span(ratios, lambda v: f'{v:.2f}')})" if ratios else "—")
        w(f"| {title} | {len(good)} | {fmt(med(ops))} ({span(ops, fmt)}) | {ratio_cell} | {fmt(med(cpu['cpu_us_per_op']), 2)} | "
          f"{fmt(med(cpu['user_us_per_op']), 2)} / {fmt(med(cpu['sys_us_per_op']), 2)} | "
          f"{fmt(med(cpu['main_user_us_per_op']), 2)} | {flag_cell} |")
    w("")
    # The features' work on the request path: the event loop's user time with everything on minus
    # forwarding only, per round (the same round's two runs), median over rounds.
    def loop_user(target, rd):  # None unless the run is good and measured the main thread
        r = got.get((target, rd))
        return watched(r, "main_user_us_per_op") if closed_ok(r) else None
    for suffix in ("", "-base"):
        pairs = [(loop_user(f"shardscope-full{tls}{suffix}", rd), loop_user(f"shardscope-fwd{tls}{suffix}", rd))
                 for rd in rounds]
        diffs = [full - fwd for full, fwd in pairs if full is not None and fwd is not None]
        if diffs:
            w(f"- the features' work on the event loop{' (baseline build)' if suffix else ''}: everything on minus "
              f"forwarding only, loop user µs/op per round: {med(diffs):.2f} median "
              f"({span(diffs, lambda v: f'{v:.2f}')}; the goal of issue 29 item 3: ~0.5)")
    w("")
    w("Per round: ops/s (× that round's haproxy); the order is the run order in the round.")
    w("")
    def cell(t, r, here):
        h = here.get(base)
        return fmt(r["ops_per_s"]) + (f" ({r['ops_per_s'] / h['ops_per_s']:.2f}×)" if t != base and closed_ok(h) else "")
    per_round_table(w, present, rounds, got, closed_ok, cell)
    if len(rounds) < 3:
        w(f"- only {len(rounds)} rounds: a median over fewer than 3 rounds does not outvote one disturbed round")
        w("")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main():
    jsonl, notes_path, cmdline, pin, rate, idle, duration = sys.argv[1:8]
    runs = load(jsonl)
    notes = [n for n in open(notes_path).read().splitlines() if n.strip()] if os.path.exists(notes_path) else []
    out = []
    w = out.append
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    w("# shardscope benchmark results")
    w("")
    w(f"- command: `{cmdline.strip()}`")
    w(f"- date: {now}; machine: {os.cpu_count()} cores ({cpu_model()}), kernel {platform.release()}")
    w(f"- load: {os.environ.get('BENCH_CONNECTIONS', '64')} connections, pipelining depth 1, mix find 70 % / insert 10 % / update 10 % / getMore 10 %, "
      f"real OP_MSG messages; {duration} s measured after 2 s warm-up (closed loop), "
      f"then an open-loop run at {int(float(rate)):,} ops/s for the added-latency columns")
    if pin == "1":
        w("- CPU layout: closed loop — load generator + canned upstream pinned to CPU 0, the proxy under test pinned to "
          "CPU 1 (`taskset`), one proxy thread, so every row does identical work on CPU 0; open-loop latency runs — "
          "the proxy moved to CPU 0 as well (no cross-CPU wake-ups, whose cost on this VM is 50–200 µs and not the "
          "proxy's)")
    else:
        w("- CPU layout: not pinned (scheduler's choice)")
    w("")

    direct = pick(runs, "direct", "load", "closed")
    direct_open = pick(runs, "direct", "load", "open")
    haproxy = pick(runs, "haproxy", "load", "closed")

    w("## Side by side (canned upstream)")
    w("")
    w("| setup | ops/s | vs direct | vs haproxy | p50 / p99 µs (closed loop) | added p50 / p99 µs at "
      f"{int(float(rate)):,} ops/s | proxy CPU µs/op | ops per proxy CPU-s | proxy RSS MiB | KiB per idle conn | errors |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    disturbed = []
    for label, title in ROWS:
        c = pick(runs, label, "load", "closed")
        o = pick(runs, label, "load", "open")
        idle_run = pick(runs, label, "idle")
        if not c and not o:
            if label != "direct":
                w(f"| {title} | not measured | | | | | | | | | |")
            continue
        ops = c["ops_per_s"] if c and c.get("ops") else None
        vs_d = ops / direct["ops_per_s"] if ops and direct and direct.get("ops") else None
        vs_h = ops / haproxy["ops_per_s"] if ops and haproxy and haproxy.get("ops") else None
        lat = f"{fmt(c['lat_us']['p50'], 1)} / {fmt(c['lat_us']['p99'], 1)}" if ops else "—"
        added = "—"
        if o and o.get("ops") and direct_open and direct_open.get("ops") and label != "direct":
            a50 = o["service_us"]["p50"] - direct_open["service_us"]["p50"]
            a99 = o["service_us"]["p99"] - direct_open["service_us"]["p99"]
            added = f"{a50:+.1f} / {a99:+.1f}"
        elif o and label == "direct":
            added = f"(base {o['service_us']['p50']:.1f} / {o['service_us']['p99']:.1f})"
        proxy = (c or {}).get("watch", {}).get("proxy")
        died = proxy is not None and proxy.get("alive") is False
        if died:
            proxy = None
        cpu = "died" if died else (fmt(proxy["cpu_us_per_op"], 2) if proxy else "—")
        capacity = fmt(1e6 / proxy["cpu_us_per_op"]) if proxy and proxy["cpu_us_per_op"] > 0 else "—"
        rss = fmt(proxy["rss_kib"] / 1024, 1) if proxy else "—"
        per_conn = "—"
        if idle_run and "proxy" in idle_run.get("watch", {}) and idle_run.get("connections", 0) > 0:
            per_conn = f"{idle_run['watch']['proxy']['kib_per_conn']:.1f} (N={idle_run['connections']:,})"
        errs = sum((r or {}).get("errors", 0) for r in (c, o))
        first = next((r["first_error"] for r in (c, o) if r and r.get("first_error")), "")
        err_cell = str(errs) + (f" ({first[:80]})" if first else "")
        for r in (c, o):
            if r and r.get("run_error"):
                err_cell += f"; run: {r['run_error']}"
            if r and r.get("other_cores", 0) > 0.15:
                disturbed.append(f"{label} ({r['loop']} loop): other processes used {r['other_cores']:.2f} cores")
        vs_d_s = f"{vs_d:.2f}×" if vs_d else "—"
        vs_h_s = f"{vs_h:.2f}×" if vs_h else "—"
        w(f"| {title} | {fmt(ops)} | {vs_d_s} | {vs_h_s} | {lat} | {added} | {cpu} | {capacity} | {rss} | {per_conn} | {err_cell} |")
    w("")
    w("Columns: *ops/s* closed loop (each connection sends its next request when the reply arrives); "
      "*added p50 / p99* = this row's open-loop latency minus the direct row's, both measured from the moment the "
      "request was written (service latency); *proxy CPU µs/op* = (utime + stime of the proxy process over the "
      "window, from /proc/PID/stat) / operations; *ops per proxy CPU-s* = 1 / that, the throughput one proxy core "
      "could carry at this efficiency (the figure least disturbed by other load on the machine); *proxy RSS* at the end of the closed-loop run; *KiB per idle conn* "
      "= (RSS with N idle clients that each did a hello − RSS before) / N.")
    w("")

    w("## Targets (issue 8)")
    w("")
    full = pick(runs, "shardscope-full", "load", "closed")
    full_open = pick(runs, "shardscope-full", "load", "open")
    full_idle = pick(runs, "shardscope-full", "idle")
    def verdict(ok):
        return "**met**" if ok else "**not met**"
    if full and full.get("ops") and haproxy and haproxy.get("ops") and full["watch"].get("proxy", {}).get("alive", True):
        ratio = full["ops_per_s"] / haproxy["ops_per_s"]
        cap_full = 1 / full["watch"]["proxy"]["cpu_us_per_op"]
        cap_h = 1 / haproxy["watch"]["proxy"]["cpu_us_per_op"]
        w(f"- shardscope with everything on ≥ haproxy throughput: {ratio:.2f}× measured, {cap_full / cap_h:.2f}× in "
          f"CPU per operation — {verdict(ratio >= 1)}")
    if full_open and full_open.get("ops") and direct_open and direct_open.get("ops"):
        a50 = full_open["service_us"]["p50"] - direct_open["service_us"]["p50"]
        a99 = full_open["service_us"]["p99"] - direct_open["service_us"]["p99"]
        w(f"- added latency at 64 connections ({int(float(rate)):,} ops/s): p50 {a50:+.1f} µs (target ≤ 25) — "
          f"{verdict(a50 <= 25)}; p99 {a99:+.1f} µs (target ≤ 150) — {verdict(a99 <= 150)}")
    if full_idle and "proxy" in full_idle.get("watch", {}) and full_idle.get("connections", 0) > 0:
        k = full_idle["watch"]["proxy"]["kib_per_conn"]
        w(f"- RSS per idle client connection: {k:.1f} KiB at N = {full_idle['connections']:,} (target ≤ 64 KiB at "
          f"10,000) — {verdict(k <= 64)}")
    for r in runs:
        if r.get("label", "").endswith("-malloc") and r.get("mallocs_per_op") is not None:
            per = r["mallocs_per_op"]
            w(f"- no heap allocation per operation ({r['label'].replace('-malloc', '')}): {per:.2f} per op — "
              f"{verdict(per < 0.01)}")
    w("")

    closed_rounds(runs, w)
    closed_rounds(runs, w, "-tls")
    latency_rounds(runs, w, rate)

    w("## Cost breakdown (closed loop)")
    w("")
    w("| setup | loadgen CPU µs/op | upstream CPU µs/op | proxy CPU µs/op | machine busy (cores) | other processes (cores) |")
    w("|---|---:|---:|---:|---:|---:|")
    for label, title in ROWS:
        c = pick(runs, label, "load", "closed")
        if not c or not c.get("ops"):
            continue
        up = c["watch"].get("upstream")
        px = c["watch"].get("proxy")
        px = px if px and px.get("alive", True) else None
        w(f"| {title} | {c['loadgen_cpu_s'] * 1e6 / c['ops']:.2f} | {fmt(up['cpu_us_per_op'] if up else None, 2)} | "
          f"{fmt(px['cpu_us_per_op'] if px else None, 2)} | {c['machine_busy_cores']:.2f} | {c['other_cores']:.2f} |")
    w("")

    w("## Latency detail (µs)")
    w("")
    w("| setup | run | p50 | p90 | p99 | p99.9 | max |")
    w("|---|---|---:|---:|---:|---:|---:|")
    for label, title in ROWS:
        for loop in ("closed", "open"):
            r = pick(runs, label, "load", loop)
            if not r or not r.get("ops"):
                continue
            l = r["service_us"] if loop == "open" else r["lat_us"]
            name = "closed loop" if loop == "closed" else f"{int(r['rate']):,} ops/s (service)"
            w(f"| {title} | {name} | {l['p50']:.1f} | {l['p90']:.1f} | {l['p99']:.1f} | {l['p999']:.1f} | "
              f"{(r['lat_us']['max'] if loop == 'closed' else float('nan')):.1f} |".replace("nan", "—"))
    w("")

    mallocs = [r for r in runs if r.get("label", "") in ("shardscope-fwd-malloc", "shardscope-full-malloc")]
    w("## Heap allocations on the forward path")
    w("")
    if mallocs:
        w("Short closed-loop run with the proxy under `LD_PRELOAD=build/bench-loadgen/malloc_counter.so` "
          "(counts malloc, calloc, realloc, aligned allocations; operator new goes through malloc); SIGUSR2 at the "
          "window's start and end.")
        w("")
        w("| setup | ops | allocations | per operation |")
        w("|---|---:|---:|---:|")
        for r in mallocs:
            w(f"| {r['label'].replace('-malloc', '')} | {r.get('ops', 0):,} | {r.get('mallocs', '—'):,} | "
              f"{r.get('mallocs_per_op', -1):.2f} |")
    else:
        w("Not measured (shardscope did not run).")
    w("")

    import report_issue19
    report_issue19.render(runs, w)

    fd = pick(runs, "ferret-direct", "load")
    fs = pick(runs, "ferret-shardscope-full", "load")
    w("## End to end: FerretDB (SQLite) upstream")
    w("")
    if fd or fs:
        w("16 connections, depth 1, find 70 % / insert 15 % / update 15 %, 5 s closed loop, a fresh FerretDB (SQLite in /dev/shm) per row, pinned with the load generator on CPU 0.")
        w("")
        w("| setup | ops/s | p50 µs | p99 µs | proxy CPU µs/op | errors |")
        w("|---|---:|---:|---:|---:|---:|")
        for name, r in (("direct to FerretDB", fd), ("shardscope (routing + stats + evaluation) → FerretDB", fs)):
            if not r or not r.get("ops"):
                w(f"| {name} | not measured ({(r or {}).get('error', '')}) | | | | |")
                continue
            px = r["watch"].get("proxy")
            px = px if px and px.get("alive", True) else None
            err = str(r["errors"]) + (f" ({r['first_error'][:80]})" if r.get("first_error") else "")
            w(f"| {name} | {r['ops_per_s']:,.0f} | {r['lat_us']['p50']:.1f} | {r['lat_us']['p99']:.1f} | "
              f"{fmt(px['cpu_us_per_op'] if px else None, 2)} | {err} |")
    else:
        w("Not measured.")
    w("")

    if notes or disturbed:
        w("## Notes from this run")
        w("")
        for n in notes:
            w(f"- {n}")
        for d in disturbed:
            w(f"- disturbed: {d} — this machine was shared during the run; treat those rows with care")
        w("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
