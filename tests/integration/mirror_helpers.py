"""Helpers for the mirroring and capture/replay suites (proxy flags, /stats polling, data dumps)."""
from __future__ import annotations

import json
import time
import urllib.request


def mirror_args(shadow_uri: str, *, mode: str = "reads", queue_size: int | None = None,
                timeout_ms: int | None = None, namespaces: str | None = None, record_values: bool = False) -> list[str]:
    a = ["--mirror.upstream", shadow_uri, "--mirror.mode", mode]
    if queue_size is not None:
        a += ["--mirror.queue_size", str(queue_size)]
    if timeout_ms is not None:
        a += ["--mirror.timeout_ms", str(timeout_ms)]
    if namespaces is not None:
        a += ["--mirror.namespaces", namespaces]
    if record_values:
        a += ["--mirror.record_values", "true"]
    return a


def get_stats(admin_url: str) -> dict:
    with urllib.request.urlopen(admin_url + "/stats", timeout=5) as r:
        return json.loads(r.read())


def get_metrics(admin_url: str) -> str:
    with urllib.request.urlopen(admin_url + "/metrics", timeout=5) as r:
        return r.read().decode()


def mirror_stats(admin_url: str) -> dict:
    s = get_stats(admin_url)
    assert "mirror" in s, f"/stats has no mirror section: {sorted(s)}"
    return s["mirror"]


def wait_mirror(admin_url: str, predicate, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    m = mirror_stats(admin_url)
    while time.monotonic() < deadline:
        m = mirror_stats(admin_url)
        if predicate(m):
            return m
        time.sleep(0.1)
    raise AssertionError(f"mirror stats never satisfied the condition: {json.dumps(m)[:3000]}")


def dump(client, skip_dbs=("admin", "config", "local")) -> dict:
    """Every document of every collection, sorted by _id: for comparing two servers."""
    out = {}
    for db in client.list_database_names():
        if db in skip_dbs:
            continue
        for coll in client[db].list_collection_names():
            docs = list(client[db][coll].find())
            docs.sort(key=lambda d: repr(d.get("_id")))
            out[f"{db}.{coll}"] = docs
    return out
