#!/usr/bin/env python3
"""Reads a shardscope /stats document on stdin and prints what the demo should show: operations per
shard, the hot-shard verdict and the targeted / broadcast shares as /stats computed them (the same
figures as the dashboard and `shardscope stats`), and for every lookup rewrite rule what it rescued
(targeting before -> after)."""
import json
import sys

def share(x):
    """A /stats share as the dashboard and `shardscope stats` print it: one decimal, two under 0.1%,
    "-" for no number (null: no denominator). Never recomputed here from the counts."""
    if not isinstance(x, (int, float)):
        return "    -"
    return f"{100 * x:5.2f}%" if 0 < x < 0.001 else f"{100 * x:5.1f}%"


def main():
    s = json.load(sys.stdin)
    shards = s.get("shards", [])
    print("operations per shard (a broadcast counts once per shard):")
    for x in shards:
        bar = "#" * round(40 * x["ops"] / max(1, max(y["ops"] for y in shards)))
        print(f"  {x['name']:<8} {x['ops']:>7} {share(x.get('share'))}  {bar}")
    # The figures /stats computed (docs/stats-schema.md, "One meaning per figure"), as the dashboard and
    # `shardscope stats` show them: hotness on targeted operations per namespace, shares of the
    # operations on sharded collections.
    for n in s.get("hotness", {}).get("namespaces", []):
        if not n["judged"]:
            continue
        ratio = "inf" if n["ratio"] is None else f"{n['ratio']:.2f}"
        verdict = "HOT SHARD " + n["hottest"] if n["hot"] else "balanced"
        print(f"  {n['ns']}: busiest/least busy chunk owner = {ratio} on targeted operations -> {verdict}"
              f" (threshold {s['hotness']['threshold']}, seed 002)")
    t = s["totals"]
    print(f"of {t.get('shardedOps', 0)} operations on sharded collections: targeted {share(t.get('targetedShare')).strip()}"
          f" (oneShard)  broadcast {share(t.get('allShardsShare')).strip()} (allShards)")
    for rule in s.get("rewrite", []):
        before, after = rule["targetingBefore"], rule["targetingAfter"]
        m = rule["mapping"]
        # `size` is what the map holds (one entry per distinct lookup value); `learned` counts every
        # learning event (each insert or reply that taught or confirmed a mapping), so they differ.
        print(f"rewrite {rule['ns']}: {rule['lookupField']} -> {', '.join(rule['addFields'])}: "
              f"{rule['applied']} lookups rewritten; the map holds {m['size']} distinct "
              f"{rule['lookupField']} values ({m['learned']} learning events)")
        print(f"  before: broadcast {before.get('broadcast', 0)}, single {before.get('single', 0)}"
              f"   after: broadcast {after.get('broadcast', 0)}, single {after.get('single', 0)}"
              + (f"   -> {rule['rescued']} of the {rule['lookups']} {rule['lookupField']} lookups rescued"
                 f" ({share(rule.get('rescuedShare')).strip()}; /stats rescuedShare, as the dashboard shows it)"
                 if "rescued" in rule else ""))  # a sidecar older than the figure: nothing claimed
        stayed = {k: v for k, v in rule.get("skipped", {}).items() if v}
        if stayed:
            print(f"  not rewritten, sent as written: {stayed}")
        falls = {k: v for k, v in rule["fallbacks"].items() if v}
        if falls:
            print(f"  fallbacks (re-run as written): {falls}")


if __name__ == "__main__":
    main()
