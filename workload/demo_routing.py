#!/usr/bin/env python3
"""Writes a routing file whose chunks fit order_service.py's customers: the customerId range is cut
where the cumulative order weight crosses 1/N, 2/N, ... (as the balancer would split chunks by data
size), and the chunks go round-robin to N shards, so every shard owns orders and none is hot by
construction. The demo (scripts/demo.sh) uses examples/routing/demo_orders_6shards.json, made with
the defaults of both scripts:

    python3 workload/demo_routing.py --customers 300 > examples/routing/demo_orders_6shards.json
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from order_service import customer_id, customer_weights  # noqa: E402

MIN = {"$minKey": 1}
MAX = {"$maxKey": 1}


def bounds(customers, top_share, seed, chunks):
    weights = customer_weights(customers, top_share, seed)
    total = sum(weights)
    cuts, running = [], 0.0
    for i, w in enumerate(weights[:-1]):
        running += w
        if running >= total * (len(cuts) + 1) / chunks and len(cuts) < chunks - 1:
            cuts.append(customer_id(i + 1))  # the next customer starts the next chunk
    return cuts


def routing(customers, top_share, seed, shards, chunks_per_shard):
    names = ["shard" + chr(ord("A") + i) for i in range(shards)]
    cuts = bounds(customers, top_share, seed, shards * chunks_per_shard)
    edges = [{"customerId": MIN, "orderDate": MIN}] + [{"customerId": c, "orderDate": MIN} for c in cuts] + \
            [{"customerId": MAX, "orderDate": MAX}]
    chunks = [{"min": edges[i], "max": edges[i + 1], "shard": names[i % shards]} for i in range(len(edges) - 1)]
    return {"collections": [{"ns": "shop.orders", "key": {"customerId": 1, "orderDate": 1}, "unique": False,
                             "defaultCollation": None, "chunks": chunks}]}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--customers", type=int, default=500)
    p.add_argument("--top-share", type=float, default=0.03)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--shards", type=int, default=6)
    p.add_argument("--chunks-per-shard", type=int, default=2)
    a = p.parse_args()
    json.dump(routing(a.customers, a.top_share, a.seed, a.shards, a.chunks_per_shard), sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
