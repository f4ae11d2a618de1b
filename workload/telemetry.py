#!/usr/bin/env python3
"""Seed 002's telemetry platform as a seeded workload driven through a real driver (pymongo).

--sensors sensors (default 10,000); the lowest --fast-share of ids (default 40%, "Building HQ",
sensor-00000..sensor-03999) report every 2 s, the rest every 5 s. Time is simulated, never slept:
--seconds simulated seconds of reports, each reading {sensorId, ts, value} with ts = the tick plus a
per-sensor millisecond offset, in random sensor order per tick. Then --queries finds of one sensor
over a time range. Scale down with --sensors (the 40/60 split and the 2 s / 5 s rates are kept, so
the ranged-vs-hashed imbalance is the same: about 2.5x expected for ranged {sensorId: 1, ts: 1}).
Prints one JSON object with what it did.
"""
import argparse
import datetime
import json
import random
import sys
import time

from pymongo import MongoClient

EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def sensor_id(i):
    return "sensor-%05d" % i


def run(args):
    rng = random.Random(args.seed)
    client = MongoClient(args.uri, serverSelectionTimeoutMS=10000)
    coll = client[args.db][args.collection]
    if args.drop:
        coll.drop()
    fast = int(args.sensors * args.fast_share)
    phase = [rng.randrange(2 if s < fast else 5) for s in range(args.sensors)]
    offset_ms = [rng.randrange(1000) for _ in range(args.sensors)]
    order = list(range(args.sensors))
    done = {"inserted": 0, "queries": 0, "sensors": args.sensors, "fast_sensors": fast, "seconds": args.seconds}
    started = time.time()
    batch = []
    for t in range(args.seconds):
        rng.shuffle(order)  # reports arrive in no particular sensor order
        for s in order:
            every = 2 if s < fast else 5
            if (t + phase[s]) % every:
                continue
            batch.append({"sensorId": sensor_id(s),
                          "ts": EPOCH + datetime.timedelta(seconds=t, milliseconds=offset_ms[s]),
                          "value": round(rng.uniform(0, 100), 2)})
            if len(batch) >= args.batch:
                coll.insert_many(batch, ordered=False)
                done["inserted"] += len(batch)
                batch = []
    if batch:
        coll.insert_many(batch, ordered=False)
        done["inserted"] += len(batch)
    for _ in range(args.queries):
        start = EPOCH + datetime.timedelta(seconds=rng.randrange(max(1, args.seconds)))
        list(coll.find({"sensorId": sensor_id(rng.randrange(args.sensors)),
                        "ts": {"$gte": start, "$lt": start + datetime.timedelta(hours=1)}}))
        done["queries"] += 1
    done["wall_seconds"] = round(time.time() - started, 3)
    return done


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--uri", required=True)
    p.add_argument("--db", default="telemetry")
    p.add_argument("--collection", default="readings")
    p.add_argument("--sensors", type=int, default=10000)
    p.add_argument("--fast-share", type=float, default=0.4, help="share of sensors reporting every 2 s")
    p.add_argument("--seconds", type=int, default=20, help="simulated seconds of reports")
    p.add_argument("--queries", type=int, default=500)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--seed", type=int, default=2)
    p.add_argument("--drop", action="store_true", help="drop the collection first")
    json.dump(run(p.parse_args()), sys.stdout)
    print()


if __name__ == "__main__":
    main()
