#!/usr/bin/env python3
"""Reads a shardscope /stats document on stdin and prints what the demo should show: operations per
shard with the hot-shard check (busiest/least busy above 1.5, seed 002), the share of each targeting
class, and for every lookup rewrite rule what it rescued (targeting before -> after)."""
import json
import sys

HOT = 1.5


def pct(n, d):
    return f"{100.0 * n / d:5.1f}%" if d else "    -"


def main():
    s = json.load(sys.stdin)
    shards = s.get("shards", [])
    total = sum(x["ops"] for x in shards)
    print("operations per shard (a broadcast counts once per shard):")
    for x in shards:
        bar = "#" * round(40 * x["ops"] / max(1, max(y["ops"] for y in shards)))
        print(f"  {x['name']:<8} {x['ops']:>7} {pct(x['ops'], total)}  {bar}")
    ops = [x["ops"] for x in shards if x["ops"] > 0]
    if len(ops) >= 2:
        ratio = max(ops) / min(ops)
        verdict = "HOT SHARD" if ratio > HOT else "balanced"
        print(f"  busiest/least busy = {ratio:.2f} -> {verdict} (threshold {HOT}, seed 002)")
    t = s["totals"]["targeting"]
    routed = t.get("single", 0) + t.get("multi", 0) + t.get("broadcast", 0)
    print(f"targeting: single {pct(t.get('single', 0), routed)}  multi {pct(t.get('multi', 0), routed)}  "
          f"broadcast {pct(t.get('broadcast', 0), routed)}  of {routed} routed operations")
    for rule in s.get("rewrite", []):
        before, after = rule["targetingBefore"], rule["targetingAfter"]
        seen = sum(before.values())
        m = rule["mapping"]
        # `size` is what the map holds (one entry per distinct lookup value); `learned` counts every
        # learning event (each insert or reply that taught or confirmed a mapping), so they differ.
        print(f"rewrite {rule['ns']}: {rule['lookupField']} -> {', '.join(rule['addFields'])}: "
              f"{rule['applied']} lookups rewritten; the map holds {m['size']} distinct "
              f"{rule['lookupField']} values ({m['learned']} learning events)")
        print(f"  before: broadcast {before.get('broadcast', 0)}, single {before.get('single', 0)}"
              f"   after: broadcast {after.get('broadcast', 0)}, single {after.get('single', 0)}"
              f"   -> {pct(before.get('broadcast', 0) - after.get('broadcast', 0), seen).strip()} of these lookups"
              f" rescued from a broadcast")
        falls = {k: v for k, v in rule["fallbacks"].items() if v}
        if falls:
            print(f"  fallbacks (re-run as written): {falls}")


if __name__ == "__main__":
    main()
