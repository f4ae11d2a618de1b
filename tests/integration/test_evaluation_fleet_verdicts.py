"""Issue 25: one verdict everywhere. Seven workloads of our own (beyond the seed scenarios), each
run twice with real pymongo through real sidecars to FerretDB, default settings (no values leave a
sidecar): once through one proxy, once spread over a fleet of three sidecars (operation by
operation, round robin). Then:

- one proxy's `shardscope evaluate --from URL` prints exactly its `/evaluate?format=text`, and its
  JSON figures equal `/evaluate`'s;
- the fleet, merged by `evaluate --from` three URLs and by `--from-collection`, recommends the key
  one proxy recommends, and every candidate's targeted share is within the documented bound of one
  proxy's (docs/evaluation.md "Fleet evaluation": the traffic share of shapes whose sampled
  statements do not all route alike; 0 when each shape routes one way);
- the recommended key is the one MongoDB's shard-key guidance gives (each workload says why);
- nothing is shown as 0 where it is unknown: every candidate is evaluable, and a key with
  documents has a cardinality.
"""
from __future__ import annotations

import datetime
import json
import random
import re
import subprocess
import time
import urllib.error
import urllib.request

import pymongo
import pytest

pytestmark = [pytest.mark.needs_proxy, pytest.mark.slow]

START = datetime.datetime(2026, 3, 1, tzinfo=datetime.timezone.utc)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.read().decode()


class Traffic:
    """Sends each operation through the next client in turn (one client: one proxy)."""

    def __init__(self, uris: list[str], db: str):
        self.clients = [pymongo.MongoClient(u, serverSelectionTimeoutMS=20000) for u in uris]
        self.db = db
        self.turn = 0
        for c in self.clients[:1]:
            c.drop_database(db)

    def coll(self, name: str):
        c = self.clients[self.turn % len(self.clients)][self.db][name]
        self.turn += 1
        return c

    def insert(self, name: str, docs: list[dict], batch: int = 25) -> None:
        for i in range(0, len(docs), batch):
            self.coll(name).insert_many([dict(d) for d in docs[i:i + batch]])

    def close(self) -> None:
        for c in self.clients:
            c.close()


def _ts(i: int, step_s: float = 1.0) -> datetime.datetime:
    return START + datetime.timedelta(seconds=i * step_s)


# ---- the workloads: (collection, expected key, traffic) ----

def saas(t: Traffic, rng: random.Random) -> None:
    # Multi-tenant SaaS, one tenant at 40% of events. Every query is tenant-scoped. MongoDB's
    # guidance: a key of low frequency and high cardinality that supports the common queries;
    # {tenantId: 1} alone has 20 values (cardinality) and a 40% value (a jumbo chunk); {userId: 1}
    # misses the tenant's time-range dashboards; {tenantId: 1, userId: 1} keeps a tenant's queries
    # targeted and splits the large tenant by user.
    tenants = [f"tenant-{i:02d}" for i in range(20)]
    docs = []
    for i in range(900):
        tenant = tenants[0] if rng.random() < 0.4 else rng.choice(tenants[1:])
        docs.append({"tenantId": tenant, "userId": f"{tenant}-user-{rng.randrange(60):03d}", "ts": _ts(i), "kind": rng.choice("abc")})
    t.insert("events", docs)
    for q in range(150):
        d = rng.choice(docs)
        if q % 10 < 7:
            list(t.coll("events").find({"tenantId": d["tenantId"], "userId": d["userId"]}))
        else:
            list(t.coll("events").find({"tenantId": d["tenantId"], "ts": {"$gte": d["ts"], "$lt": _ts(900)}}))


def iot(t: Traffic, rng: random.Random) -> None:
    # IoT readings by device with ascending time, read by device and time range. Guidance: avoid a
    # monotonically increasing key ({ts: 1} sends every insert to one shard) and a low-cardinality
    # one ({deviceId: 1}: 50 values, each device's chunk growing without bound); the compound
    # {deviceId: 1, ts: 1} has unbounded cardinality, spreads inserts over devices and targets the
    # per-device range queries.
    devices = [f"dev-{rng.randrange(10**6):06d}" for _ in range(50)]
    docs = [{"deviceId": rng.choice(devices), "ts": _ts(i), "v": rng.random()} for i in range(1000)]
    t.insert("readings", docs)
    for _ in range(120):
        d = rng.choice(docs)
        list(t.coll("readings").find({"deviceId": d["deviceId"], "ts": {"$gte": d["ts"], "$lt": _ts(1000)}}))


def profiles(t: Traffic, rng: random.Random) -> None:
    # User profiles read by ObjectId _id (60%) and by email (40%), updated by _id. Guidance: an
    # ObjectId grows with time, so {_id: 1} is monotonic; hashed sharding on a monotonic field
    # spreads inserts and still targets equality on it: {_id: "hashed"} targets the _id lookups and
    # the updates, more than {email: 1} targets.
    docs = [{"_id": bson_oid(), "email": f"{rng.randrange(10**9):09d}@example.com", "plan": rng.choice("fpe")} for _ in range(600)]
    t.insert("users", docs)
    for q in range(150):
        d = rng.choice(docs)
        if q % 10 < 6:
            list(t.coll("users").find({"_id": d["_id"]}))
        else:
            list(t.coll("users").find({"email": d["email"]}))
    for _ in range(50):
        t.coll("users").update_one({"_id": rng.choice(docs)["_id"]}, {"$set": {"seen": True}})


def bson_oid():
    from bson import ObjectId
    return ObjectId()


def event_log(t: Traffic, rng: random.Random) -> None:
    # Append-only event log read by time ranges, mostly per source. Guidance: a timestamp alone is
    # monotonic (one hot shard), 20 sources are too few values; {source: 1, ts: 1} spreads inserts
    # over the sources' ranges and targets the per-source range queries.
    sources = [f"svc-{rng.randrange(10**6):06d}" for _ in range(20)]
    docs = [{"ts": _ts(i, 0.5), "source": rng.choice(sources), "level": rng.choice(["info", "warn", "error"])} for i in range(800)]
    t.insert("events", docs)
    for q in range(120):
        d = rng.choice(docs)
        window = {"$gte": d["ts"], "$lt": d["ts"] + datetime.timedelta(seconds=30)}
        if q % 10 < 7:
            list(t.coll("events").find({"source": d["source"], "ts": window}))
        else:
            list(t.coll("events").find({"ts": window}))


def tickets(t: Traffic, rng: random.Random) -> None:
    # Tickets whose status changes on updates (open -> closed). Guidance: a key field should not
    # change (an update of the key needs a retryable write or transaction, and status has a handful
    # of values); 150 customers are too few values for {customerId: 1} alone; the customer-scoped
    # reads and the updates by customer and ticket are targeted by {customerId: 1, ticketId: 1},
    # which has a value per ticket and spreads a customer's tickets.
    customers = [f"cust-{rng.randrange(10**7):07d}" for _ in range(150)]
    docs = [{"ticketId": f"{rng.randrange(16**10):010x}", "customerId": rng.choice(customers), "status": "open"} for _ in range(1500)]
    t.insert("tickets", docs)
    for q in range(200):
        d = rng.choice(docs)
        if q % 10 < 5:
            list(t.coll("tickets").find({"customerId": d["customerId"]}))
        elif q % 10 < 7:
            list(t.coll("tickets").find({"status": "open"}).limit(5))
        else:
            t.coll("tickets").update_one({"customerId": d["customerId"], "ticketId": d["ticketId"]}, {"$set": {"status": "closed"}})


def carts(t: Traffic, rng: random.Random) -> None:
    # Carts written by upserts (retryable writes, pymongo's default) and read by user. Guidance: an
    # upsert must pin the full shard key (refused before 7.1 otherwise), so {_id: "hashed"} fails;
    # {userId: 1} targets every upsert and read, and user ids are many and random.
    users = [f"user-{rng.randrange(10**8):08d}" for _ in range(800)]
    for i in range(700):
        u = rng.choice(users)
        t.coll("carts").update_one({"userId": u}, {"$push": {"items": {"sku": rng.randrange(1000)}}, "$setOnInsert": {"created": _ts(i)}},
                                   upsert=True)
    for _ in range(150):
        list(t.coll("carts").find({"userId": rng.choice(users)}))


def catalog(t: Traffic, rng: random.Random) -> None:
    # A catalog whose tags field is an array in a third of the documents. Guidance: a shard key
    # cannot hold arrays, so {tags: 1} fails; 30 categories are too few values; {sku: 1} (random
    # skus: no monotonic growth) targets the lookups by sku and keeps ranges of skus together.
    docs = []
    for i in range(600):
        tags = [f"t{rng.randrange(20)}", f"t{rng.randrange(20)}"] if i % 3 == 0 else f"t{rng.randrange(20)}"
        docs.append({"sku": f"SKU-{rng.randrange(10**8):08d}", "category": f"cat-{rng.randrange(30):02d}", "tags": tags})
    t.insert("products", docs)
    for q in range(150):
        d = rng.choice(docs)
        if q % 10 < 6:
            list(t.coll("products").find({"sku": d["sku"]}))
        elif q % 10 < 8:
            list(t.coll("products").find({"category": d["category"]}).limit(5))
        else:
            list(t.coll("products").find({"tags": "t3"}).limit(5))


def whale_chat(t: Traffic, rng: random.Random) -> None:
    # Chat messages, one room at 35% of them (above a 4-shard cluster's 25% fair share), read by
    # room. Guidance: a compound hashed key (4.4+) with the hashed field after the room: a query on
    # roomId targets that room's chunks, and the busy room's messages spread by the hash of _id;
    # {roomId: 1, ts: 1} keeps the room's new messages in one chunk (ts rises), {_id: "hashed"}
    # targets no read.
    rooms = [f"room-{rng.randrange(10**6):06d}" for _ in range(80)]
    docs = [{"roomId": rooms[0] if rng.random() < 0.35 else rng.choice(rooms[1:]), "ts": _ts(i), "text": "hi"} for i in range(1600)]
    t.insert("messages", docs, batch=50)
    for _ in range(160):
        room = rng.choice(docs)["roomId"]
        if rng.random() < 2 / 3:  # not by turn: every sidecar of the round robin sees both shapes
            list(t.coll("messages").find({"roomId": room}).sort("ts", -1).limit(20))
        else:
            start = _ts(rng.randrange(1600))
            list(t.coll("messages").find({"roomId": room, "ts": {"$gte": start, "$lt": start + datetime.timedelta(seconds=60)}}))


def tiny_tenants(t: Traffic, rng: random.Random) -> None:
    # Orders of many tiny tenants: half the reads by orderId alone, 30% a tenant's orders, 20% by
    # tenant and order. Guidance: the key the common queries name, {orderId: 1} (random ids, 70% of
    # reads), not the tenant (50%).
    tenants = [f"t-{rng.randrange(10**7):07d}" for _ in range(400)]
    docs = [{"tenantId": rng.choice(tenants), "orderId": f"{rng.randrange(16**12):012x}", "createdAt": _ts(i)} for i in range(900)]
    t.insert("orders", docs)
    for q in range(200):
        d = rng.choice(docs)
        if q % 10 < 5:
            list(t.coll("orders").find({"orderId": d["orderId"]}))
        elif q % 10 < 8:
            list(t.coll("orders").find({"tenantId": d["tenantId"]}).sort("createdAt", -1).limit(10))
        else:
            list(t.coll("orders").find({"tenantId": d["tenantId"], "orderId": d["orderId"]}))


# Facts the verdict rests on that only the sampled documents and filters hold: they must survive
# the value-free export (checked on one proxy and on the merged fleet).
def _facts(name: str, ns: dict) -> None:
    def cand(key):
        return next(c for c in ns["candidates"] if c["key"] == key)
    if name == "catalog":  # 200 of 600 documents hold a tags array (issue 25 item 5: not 200/400)
        share = cand({"tags": 1})["shardscope"]["arrays"]["shareOfDocuments"]  # JSON keeps 6 digits
        assert abs(share - 200 / 600) < 1e-5 and cand({"tags": 1})["shardscope"]["arrays"]["pass"] is False, share
    if name == "tickets":
        assert cand({"status": 1})["shardscope"]["mutability"]["pass"] is False
    if name == "profiles":
        assert cand({"_id": 1})["monotonicity"]["pass"] is False
    if name == "carts":
        assert cand({"_id": "hashed"})["shardscope"]["upsertTargeting"]["pass"] is False
        assert cand({"userId": 1})["shardscope"]["upsertTargeting"]["pass"] is True
    if name == "whalechat":  # the room key with a rising suffix fails on the busy room; _id targets nothing
        assert cand({"roomId": 1, "ts": 1})["frequency"]["pass"] is False
        assert cand({"_id": "hashed"})["singleOrMultiShardShare"] == 0
        assert cand({"roomId": 1, "_id": "hashed"})["singleOrMultiShardShare"] == 1
    if name == "iot":
        assert cand({"deviceId": 1})["cardinality"]["pass"] is False
        assert cand({"ts": 1})["monotonicity"]["pass"] is False


WORKLOADS = [
    ("saas", saas, "events", {"tenantId": 1, "userId": 1}),
    ("iot", iot, "readings", {"deviceId": 1, "ts": 1}),
    ("profiles", profiles, "users", {"_id": "hashed"}),
    ("eventlog", event_log, "events", {"source": 1, "ts": 1}),
    ("tickets", tickets, "tickets", {"customerId": 1, "ticketId": 1}),
    ("carts", carts, "carts", {"userId": 1}),
    ("catalog", catalog, "products", {"sku": 1}),
    ("whalechat", whale_chat, "messages", {"roomId": 1, "_id": "hashed"}),
    ("tinytenants", tiny_tenants, "orders", {"orderId": 1}),
]


def _ns(report: dict, ns: str) -> dict:
    return next(n for n in report["namespaces"] if n["ns"] == ns)


def _cli(binary, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), "evaluate", *args], check=True, capture_output=True, text=True, timeout=300)


def _mixed_share(ns: dict, key: dict) -> float:
    """The documented bound: the traffic share of shapes whose sampled statements do not all route
    alike under `key` (neither all targeted nor all scatter-gather)."""
    all_ops = ns["reads"] + ns["writes"] + ns["otherShapeOps"]
    c = next(c for c in ns["candidates"] if c["key"] == key)
    return sum(s["count"] for s in c["byShape"] if 0 < s["scatterGather"] < 1) / max(1, all_ops)


def _wait_published(sidecars, count: int, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if all(json.loads(_get(p.admin_url + "/stats")).get("evaluationPublish", {}).get("published", 0) >= count
               for p in sidecars):
            return
        time.sleep(0.2)
    raise AssertionError("sidecars did not publish in time")


def _check_known(ns: dict, what: str) -> None:
    for c in ns["candidates"]:
        assert c["evaluable"] is True, (what, c["key"], c.get("notEvaluable"))
        if ns["inserts"] > 0:
            assert c["cardinality"]["estimate"] > 0, (what, c["key"])


def _fleet_verdict_equals_one_proxy(name, workload, coll, expected, proxy, ferretdb, shardscope_binary):
    one = proxy(ferretdb.uri, admin=True)
    collection = f"shardscope.sketches_{name}"
    # Published every 2 s (a document expires 3 intervals after its last publication: a loaded
    # machine delays publications by seconds).
    fleet = [proxy(ferretdb.uri, "--evaluation.publish.interval_ms", "2000", "--evaluation.publish.collection", collection,
                   "--evaluation.publish.id", f"{name}-{i}", admin=True) for i in range(3)]
    for uris, db in (([one.uri], f"one_{name}"), ([p.uri for p in fleet], f"fleet_{name}")):
        t = Traffic(uris, db)
        workload(t, random.Random(25))
        t.close()
    ns_one, ns_fleet = f"one_{name}.{coll}", f"fleet_{name}.{coll}"

    # One proxy: its export, without values, evaluates exactly as its own report.
    local = json.loads(_get(one.admin_url + "/evaluate"))
    local_ns = _ns(local, ns_one)
    assert local_ns["verdict"]["key"] == expected, local_ns["verdict"]["text"]
    _check_known(local_ns, "one proxy")
    _facts(name, local_ns)
    assert _cli(shardscope_binary, "--from", one.admin_url).stdout == _get(one.admin_url + "/evaluate?format=text")
    exported = _ns(json.loads(_cli(shardscope_binary, "--from", one.admin_url, "--json").stdout), ns_one)
    for c in local_ns["candidates"]:
        e = next(x for x in exported["candidates"] if x["key"] == c["key"])
        assert e["singleOrMultiShardShare"] == c["singleOrMultiShardShare"], (c["key"], e["singleOrMultiShardShare"], c["singleOrMultiShardShare"])

    # Three sidecars merged, by URL and from the collection they publish to.
    base = max(json.loads(_get(p.admin_url + "/stats"))["evaluationPublish"]["published"] for p in fleet)
    by_url = _ns(json.loads(_cli(shardscope_binary, *sum((["--from", p.admin_url] for p in fleet), []), "--json").stdout), ns_fleet)
    _wait_published(fleet, base + 2)
    out = _cli(shardscope_binary, "--from-collection", ferretdb.uri, "--collection", collection, "--json")
    assert "merging 3 live sidecar(s)" in out.stderr, out.stderr
    by_collection = _ns(json.loads(out.stdout), ns_fleet)
    for merged, what in ((by_url, "--from x3"), (by_collection, "--from-collection")):
        _check_known(merged, what)
        _facts(name, merged)
        assert merged["verdict"]["key"] == local_ns["verdict"]["key"], (what, merged["verdict"]["text"], local_ns["verdict"]["text"])
        for c in local_ns["candidates"]:
            m = next((x for x in merged["candidates"] if x["key"] == c["key"]), None)
            assert m is not None, (what, c["key"])
            bound = max(_mixed_share(local_ns, c["key"]), _mixed_share(merged, c["key"]))
            assert abs(m["singleOrMultiShardShare"] - c["singleOrMultiShardShare"]) <= bound + 1e-9, (what, c["key"], m["singleOrMultiShardShare"], c["singleOrMultiShardShare"])
    text = _cli(shardscope_binary, *sum((["--from", p.admin_url] for p in fleet), [])).stdout
    assert "not evaluable" not in text, text


# One test per workload, named after it (not parametrized: FerretDB's SQLite URL refuses the
# brackets a parametrized test puts in its working directory's name).
def _test_for(name, workload, coll, expected):
    def test(proxy, ferretdb, shardscope_binary):
        _fleet_verdict_equals_one_proxy(name, workload, coll, expected, proxy, ferretdb, shardscope_binary)
    test.__name__ = f"test_fleet_verdict_equals_one_proxy_{name}"
    return test


for _w in WORKLOADS:
    globals()[f"test_fleet_verdict_equals_one_proxy_{_w[0]}"] = _test_for(*_w)


# ---- uneven traffic: each sidecar proposes candidate keys from its own traffic ----

def _uneven(clients: list, db: str, rng: random.Random) -> None:
    # User profiles: the application's sidecar inserts them and looks them up by email (91% of
    # reads); an admin tool behind another sidecar reads 30 by ObjectId _id; a third sidecar alone
    # sees an audit namespace. Guidance: the key that targets the common query, {email: 1} (random,
    # one value per user), and not {_id: "hashed"}, which targets the admin tool's 9% only.
    docs = [{"_id": bson_oid(), "email": f"{rng.randrange(10**9):09d}@example.com"} for _ in range(600)]
    app, admin_tool, auditor = (clients[i % len(clients)][db] for i in range(3))
    for i in range(0, 600, 50):
        app.users.insert_many(docs[i:i + 50])
    for _ in range(300):
        app.users.find_one({"email": rng.choice(docs)["email"]})
    for _ in range(30):
        admin_tool.users.find_one({"_id": rng.choice(docs)["_id"]})
    auditor.audit.insert_many([{"actor": f"actor-{rng.randrange(10**6):06d}", "at": _ts(i)} for i in range(300)])
    for _ in range(50):
        list(auditor.audit.find({"actor": f"actor-{rng.randrange(10**6):06d}"}))


def test_fleet_with_uneven_traffic_ranks_keys_one_sidecar_never_proposed(proxy, ferretdb, shardscope_binary):
    """A sidecar computes facts for the keys its own traffic proposes: the admin tool's sidecar never
    saw an email lookup. The fleet verdict asks each live sidecar for the keys it lacks and equals one
    proxy's; published documents cannot be asked, and then nothing is recommended on missing facts
    (before: {_id: "hashed"} recommended with {email: 1} "not evaluable")."""
    one = proxy(ferretdb.uri, admin=True)
    collection = "shardscope.sketches_uneven"
    fleet = [proxy(ferretdb.uri, "--evaluation.publish.interval_ms", "2000", "--evaluation.publish.collection", collection,
                   "--evaluation.publish.id", f"uneven-{i}", admin=True) for i in range(3)]
    for uris, db in (([one.uri], "one_uneven"), ([p.uri for p in fleet], "fleet_uneven")):
        clients = [pymongo.MongoClient(u, serverSelectionTimeoutMS=20000) for u in uris]
        clients[0].drop_database(db)
        _uneven(clients, db, random.Random(26))
        for c in clients:
            c.close()
    local = json.loads(_get(one.admin_url + "/evaluate"))
    by_url = json.loads(_cli(shardscope_binary, *sum((["--from", p.admin_url] for p in fleet), []), "--json").stdout)
    for coll in ("users", "audit"):
        mine, merged = _ns(local, f"one_uneven.{coll}"), _ns(by_url, f"fleet_uneven.{coll}")
        _check_known(mine, "one proxy")
        _check_known(merged, f"--from x3 {coll}")
        assert merged["verdict"]["key"] == mine["verdict"]["key"], (coll, merged["verdict"]["text"], mine["verdict"]["text"])
        for c in mine["candidates"]:
            m = next(x for x in merged["candidates"] if x["key"] == c["key"])
            bound = max(_mixed_share(mine, c["key"]), _mixed_share(merged, c["key"]))
            assert abs(m["singleOrMultiShardShare"] - c["singleOrMultiShardShare"]) <= bound + 1e-9, (coll, c["key"], m["singleOrMultiShardShare"], c["singleOrMultiShardShare"])
    assert _ns(local, "one_uneven.users")["verdict"]["key"] == {"email": 1}
    # The shape table's share names its denominator (not /stats's "of all operations"): 300 of the
    # 330 reads, the 600 inserts not counted.
    text = _get(one.admin_url + "/evaluate?format=text")
    assert "share of reads and writes (not inserts)" in text, text
    assert re.search(r'find \{"email":"<string>"\}\s+90\.9%', text), text

    # The published documents hold what each sidecar proposed itself: {email: 1} stays not evaluable
    # there, so no key is recommended on the evidence left (never {_id: "hashed"} at 9% targeted).
    base = max(json.loads(_get(p.admin_url + "/stats"))["evaluationPublish"]["published"] for p in fleet)
    _wait_published(fleet, base + 2)
    users = _ns(json.loads(_cli(shardscope_binary, "--from-collection", ferretdb.uri, "--collection", collection, "--json").stdout),
                "fleet_uneven.users")
    assert users["verdict"]["key"] is None, users["verdict"]["text"]
    assert "{email: 1} could target up to 90.9%" in users["verdict"]["text"], users["verdict"]["text"]
    assert "not evaluable, because" in users["verdict"]["text"], users["verdict"]["text"]


def test_sketches_refuse_a_keys_request_that_does_not_decode(proxy, ferretdb):
    p = proxy(ferretdb.uri, admin=True)
    for bad in ("zz", "7b", "5b5d", "7b2261223a317d"):  # not hex, not JSON, an array, {"a": 1}
        with pytest.raises(urllib.error.HTTPError) as e:
            _get(p.admin_url + "/evaluate/sketches?keys=" + bad)
        assert e.value.code == 400, bad
    assert json.loads(_get(p.admin_url + "/evaluate/sketches?keys=" + "{}".encode().hex()))["namespaces"] == []
