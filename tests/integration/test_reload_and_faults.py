"""Live reload (SIGHUP and POST /config/reload) and fault injection, through real pymongo clients.

Reload must never drop open connections; a config that fails validation is refused and the old
one stays in force (with the reason at /config). Fault injection delays or fails a share of
operations so application teams can test their retry logic.
"""
from __future__ import annotations

import json
import signal
import time
import urllib.error
import urllib.request

import pymongo
import pytest

from harness import REPO_ROOT
from stats_helpers import wait_for

ROUTING = str(REPO_ROOT / "tests" / "data" / "routing" / "orders_6shards.json")


def get(proxy, path):
    with urllib.request.urlopen(proxy.admin_url + path, timeout=10) as r:
        return json.load(r)


def post(proxy, path):
    req = urllib.request.Request(proxy.admin_url + path, method="POST", data=b"")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def test_reload_applies_rules_and_refuses_bad_config_without_dropping_connections(ferretdb, proxy, workdir):
    config = workdir / "shardscope.yaml"
    config.write_text(f"routing:\n  file: {ROUTING}\n")
    p = proxy(ferretdb.uri, "--config", str(config), admin=True)
    client = pymongo.MongoClient(p.uri, maxPoolSize=1)
    coll = client.shop.orders
    coll.insert_many([{"_id": i, "orderId": "O%d" % i, "customerId": "C%04d" % i} for i in range(10)])
    assert get(p, "/rewrite") == []

    # Add a rule and reload by signal: the same pooled connection keeps working.
    config.write_text(f"routing:\n  file: {ROUTING}\nrewrite:\n  rules:\n    - 'shop.orders: orderId -> customerId'\n")
    p.process.send_signal(signal.SIGHUP)
    assert wait_for(lambda: len(get(p, "/rewrite")) == 1)
    assert get(p, "/config")["effective"]["rewrite_rules"] == ["shop.orders: orderId -> customerId"]
    coll.insert_one({"_id": 99, "orderId": "O99", "customerId": "C0099"})  # teaches the new rule
    assert [d["_id"] for d in coll.find({"orderId": "O99"})] == [99]
    assert get(p, "/rewrite")[0]["applied"] == 1

    # A broken config is refused as a whole; the running one stays and says why.
    config.write_text("routing:\n  file: /nonexistent/routing.json\nrewrite:\n  rules: ['shop.orders: orderId -> customerId']\n")
    status, body = post(p, "/config/reload")
    assert status == 400 and body["reloaded"] is False and "/nonexistent/routing.json" in body["error"]
    cfg = get(p, "/config")
    assert "/nonexistent/routing.json" in cfg["reload"]["lastError"]
    assert cfg["effective"]["routing"]["file"] == ROUTING
    assert coll.find_one({"orderId": "O3"})["_id"] == 3

    # A key that needs a restart is reported, not applied.
    config.write_text(f"routing:\n  file: {ROUTING}\nthreads: 2\n")
    status, body = post(p, "/config/reload")
    assert status == 200
    cfg = get(p, "/config")
    assert cfg["reload"]["restartRequired"] == ["threads"] and cfg["effective"]["threads"] == 1
    assert get(p, "/rewrite") == []  # the rule was removed by this reload
    assert get(p, "/stats")["process"]["connectionsClosed"] == 0 or client.admin.command("ping")["ok"] == 1

    # Every setting a reload does not apply is named, not silently kept (before: byte budgets and
    # most mirror and evaluation keys were neither applied nor reported).
    config.write_text(f"routing:\n  file: {ROUTING}\nlimits:\n  max_buffered_bytes: 2000000000\n"
                      "evaluation:\n  max_memory_bytes: 100000000\nreadiness:\n  upstream_grace_ms: 500\n")
    status, body = post(p, "/config/reload")
    assert status == 200
    assert get(p, "/config")["reload"]["restartRequired"] == ["limits.max_buffered_bytes", "evaluation", "readiness"]
    client.close()


def test_config_redacts_credentials(ferretdb, proxy):
    p = proxy(ferretdb.uri.replace("mongodb://", "mongodb://app:s3cret@"), admin=True)
    text = json.dumps(get(p, "/config"))
    assert "s3cret" not in text and "***@" in text


def test_config_and_log_redact_every_credential_a_uri_can_carry(ferretdb, proxy):
    # A password with characters libmongoc takes raw, a key file's password and an AWS session
    # token as URI options, and a rewrite rule's own uri=: none may reach /config or the log.
    upstream = ferretdb.uri.replace("mongodb://", "mongodb://app:q'Pw1<x@").rstrip("/")
    upstream += "/?tlsCertificateKeyFilePassword=KeyPw2&authMechanismProperties=AWS_SESSION_TOKEN:Tok3"
    p = proxy(upstream, "--rewrite-rule",
              f"shop.orders: orderId -> customerId collection=shop.map uri=mongodb://m:MapPw4@127.0.0.1:{ferretdb.port}/",
              admin=True)
    text = json.dumps(get(p, "/config"))
    time.sleep(0.3)
    log = p.stderr_text()
    for secret in ("q'Pw1", "KeyPw2", "Tok3", "MapPw4"):
        assert secret not in text, (secret, text)
        assert secret not in log, (secret, log[:2000])
    assert "tlsCertificateKeyFilePassword=***" in text and "AWS_SESSION_TOKEN:***" in text


def test_fault_injection_fails_and_delays_a_share_of_operations(ferretdb, proxy):
    delay_ms = 30
    p = proxy(ferretdb.uri, "--fault.error_code", "91", "--fault.error_percent", "50",
              "--fault.delay_ms", str(delay_ms), "--fault.delay_percent", "100", "--fault.commands", "find", admin=True)
    client = pymongo.MongoClient(p.uri, retryReads=False)
    client.shop.t.insert_one({"_id": 1})  # inserts are not selected
    failures = 0
    started = time.time()
    for _ in range(40):
        try:
            client.shop.t.find_one({"_id": 1})
        except pymongo.errors.PyMongoError as e:  # 91 is a state-change error: NotPrimaryError
            assert "injected" in str(e) and "91" in str(e)
            failures += 1
    elapsed = time.time() - started
    assert 8 <= failures <= 32  # 50% of 40, with generous bounds
    faults = get(p, "/stats")["faults"]
    assert faults["errored"] == failures
    assert faults["delayed"] == 40 - failures
    assert elapsed >= (40 - failures) * delay_ms / 1000  # every delayed find waited its delay at least
    # The driver retries an injected retryable error when allowed to: the app sees success.
    retrying = pymongo.MongoClient(p.uri, retryReads=True)
    for _ in range(10):
        try:
            retrying.shop.t.find_one({"_id": 1})
        except pymongo.errors.PyMongoError:
            pass  # two failures in a row are possible at 50%
    metrics = urllib.request.urlopen(p.admin_url + "/metrics", timeout=10).read().decode()
    assert 'shardscope_faults_injected_total{kind="error"}' in metrics


def test_fault_settings_are_validated(ferretdb, shardscope_binary):
    import subprocess
    run = subprocess.run([str(shardscope_binary), "proxy", "--upstream", ferretdb.uri, "--fault.error_percent", "10"],
                         capture_output=True, text=True, timeout=20)
    assert run.returncode == 2 and "fault.error_code" in run.stderr
    run = subprocess.run([str(shardscope_binary), "proxy", "--upstream", ferretdb.uri, "--fault.delay_percent", "120",
                          "--fault.delay_ms", "5"], capture_output=True, text=True, timeout=20)
    assert run.returncode == 2 and "fault.delay_percent" in run.stderr
