"""/evaluate states the period its figures cover, as /stats does (startedAt, resetAt): after
POST /stats/reset the two count different periods, and after POST /evaluate/reset the evaluation's
moves. The JSON says "observedSince", the text report's first line says it, and `shardscope evaluate
--from` (the sketch export, merged) says the same instant: a fleet merge the earliest sidecar's.
Before: /evaluate named no period, so its commands and /stats' count for one shape id differed after
a /stats reset with nothing on either surface to say why.
"""
from __future__ import annotations

import datetime as dt
import json
import subprocess
import time
import urllib.request

import pymongo
import pytest

from stats_helpers import get_stats, http_request

pytestmark = pytest.mark.needs_proxy


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.read().decode()


def _evaluate(binary, *urls: str) -> str:
    args = [a for u in urls for a in ("--from", u)]
    return subprocess.run([str(binary), "evaluate", *args], check=True, capture_output=True, text=True, timeout=300).stdout


def _instant(iso: str) -> dt.datetime:
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))


def _traffic(uri: str, db: str) -> None:
    with pymongo.MongoClient(uri, serverSelectionTimeoutMS=20000) as client:
        coll = client[db].orders
        coll.drop()
        coll.insert_many([{"_id": i, "customerId": "C%d" % (i % 7)} for i in range(20)])
        for i in range(10):
            coll.find_one({"customerId": "C%d" % (i % 7)})


def test_evaluate_states_its_period_on_every_surface(ferretdb, proxy, shardscope_binary):
    p = proxy(ferretdb.uri, admin=True)
    q = proxy(ferretdb.uri, admin=True)
    _traffic(p.uri, "period_p")
    _traffic(q.uri, "period_q")
    started = get_stats(p.admin_url)["startedAt"]
    time.sleep(1.1)
    assert http_request(p.admin_url, "POST", "/stats/reset")[0] == 200
    stats = get_stats(p.admin_url)

    doc = json.loads(_get(p.admin_url + "/evaluate"))
    since = doc["observedSince"]
    # The evaluation still covers the traffic before the /stats reset, and says so.
    assert _instant(since) <= _instant(stats["resetAt"]) - dt.timedelta(seconds=1), (since, stats["resetAt"])
    assert abs((_instant(since) - _instant(started)).total_seconds()) < 5, (since, started)
    text = _get(p.admin_url + "/evaluate?format=text")
    assert text.splitlines()[0].startswith("Observed since " + since), text[:300]
    assert _evaluate(shardscope_binary, p.admin_url) == text  # the CLI states the same instant

    # A fleet: the earliest sidecar's start.
    q_since = json.loads(_get(q.admin_url + "/evaluate"))["observedSince"]
    fleet = _evaluate(shardscope_binary, p.admin_url, q.admin_url)
    assert fleet.splitlines()[0].startswith("Observed since " + min(since, q_since, key=_instant)), fleet[:300]

    # POST /evaluate/reset moves the evaluation's period.
    time.sleep(1.1)
    assert http_request(p.admin_url, "POST", "/evaluate/reset")[0] == 200
    after = json.loads(_get(p.admin_url + "/evaluate"))["observedSince"]
    assert _instant(after) >= _instant(stats["resetAt"]) + dt.timedelta(seconds=1), (after, stats["resetAt"])
