"""What a client names can neither bloat the proxy nor break a page (issue 28, items 1 and 4).

1. Long names: 300 finds on distinct 32 KB collection names and 200 distinct 32 KB command names
   (pymongo through the proxy; FerretDB refuses every one). Before: +67 MiB kept after the client
   left, and one GET /metrics declared 810 MB. Now names are kept bounded in bytes (255, MongoDB's
   namespace limit; longer ones as a prefix and a hash), the per-(ns, command) series are the
   busiest 200 pairs, and the memory
   kept and the page are small; both are asserted in bytes.
4. Random bytes as names (FF FE, NUL, newlines, quotes, backslashes, overlong forms, surrogates)
   in $db, collection and command names, on raw OP_MSG frames through the real proxy: /metrics
   passes `promtool check metrics`, and /stats, /evaluate and /history are strict UTF-8 JSON.
   Before: one `$db` with FF FE made promtool reject the whole page.
Hostile names end to end: one collection named with FF emptied /evaluate/sketches (and so
`shardscope evaluate --from`); a name holding a newline and ESC forged lines and drove the terminal
in every text output (/evaluate?format=text, `stats --once`, `evaluate --from`); `dup\x01` and
`dup\xff` were the same /metrics series. Now a name that is not UTF-8 shows as U+FFFD and the hash
of its bytes everywhere, and text outputs escape control characters.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import socket
import struct
import subprocess
import time
import urllib.request

import pymongo
import pytest
from bson.son import SON

from browser import Browser
from harness import REPO_ROOT
from wire_peer import RawClient, next_request_id

pytestmark = pytest.mark.needs_proxy

SANITIZED = "ASAN_OPTIONS" in os.environ or "TSAN_OPTIONS" in os.environ
MIB = 1 << 20
OP_MSG = 2013


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) * 1024


def _settled_rss(pid: int) -> int:
    time.sleep(1.0)
    return _rss(pid)


def _fetch(admin_url: str, path: str, limit: int) -> bytes:
    """At most `limit` + 1 bytes of the page: a page past its bound fails the test without the
    test reading hundreds of megabytes."""
    with urllib.request.urlopen(admin_url + path, timeout=120) as r:
        return r.read(limit + 1)


def _promtool_check(page: bytes) -> None:
    tool = shutil.which("promtool")
    if tool is None:
        pytest.fail("promtool not found (Debian package prometheus; scripts/setup.sh installs it)")
    lint = subprocess.run([tool, "check", "metrics"], input=page, capture_output=True, timeout=120)
    # promtool's lint also reports style problems (exit 3 with "lint" lines) only for metric names
    # and help texts we choose; a page it cannot parse is exit 1 with "error while linting".
    assert lint.returncode == 0, (lint.stdout + lint.stderr).decode(errors="replace")[:2000]


# ---- item 1: long names are bounded in bytes ----------------------------------------------------

@pytest.mark.skipif(SANITIZED, reason="a sanitizer's quarantine keeps freed memory resident")
def test_long_names_are_bounded_in_memory_and_in_every_page(ferretdb, proxy):
    px = proxy(ferretdb.uri, admin=True)
    pid = px.process.pid
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=20_000) as warm:  # pools, threads, one scrape
        warm.shop.warm.find_one({})
    _fetch(px.admin_url, "/metrics", 8 * MIB)
    before = _settled_rss(pid)

    sent = 0
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=20_000) as client:
        for i in range(300):
            name = f"c{i:03d}" + "x" * (32 * 1024)
            try:
                client.shop[name].find_one({"a": 1})
            except pymongo.errors.OperationFailure:
                pass  # the server refuses the name; the proxy counted the find all the same
            sent += len(name)
        for i in range(200):
            name = f"cmd{i:03d}" + "y" * (32 * 1024)
            with pytest.raises(pymongo.errors.OperationFailure):
                client.shop.command(SON([(name, 1)]))  # no such command
            sent += len(name)
    # The client has left. What the proxy keeps of 16 MB of names:
    after = _settled_rss(pid)
    assert after - before < 8 * MIB, f"+{(after - before) / MIB:.1f} MiB kept after {sent / MIB:.1f} MiB of names"

    page = _fetch(px.admin_url, "/metrics", 4 * MIB)
    assert len(page) <= 4 * MIB, f"/metrics is over 4 MiB after {sent / MIB:.1f} MiB of names"
    longest = max(len(line) for line in page.split(b"\n"))
    assert longest < 1024, f"a series of {longest} bytes"
    _promtool_check(page)
    stats = _fetch(px.admin_url, "/stats", 8 * MIB)
    assert len(stats) <= 8 * MIB
    doc = json.loads(stats.decode("utf-8"))
    names = {s["ns"] for s in doc["shapes"]} | {s["command"] for s in doc["shapes"]}
    assert max(len(n.encode()) for n in names) <= 255, max(names, key=len)[:300]
    assert len({s["command"] for s in doc["shapes"] if s["command"].startswith("cmd")}) == 200, \
        "distinct long command names stay distinct"
    evaluate = _fetch(px.admin_url, "/evaluate", 8 * MIB)
    assert len(evaluate) <= 8 * MIB
    json.loads(evaluate.decode("utf-8"))
    # Rendering the pages kept nothing either.
    assert _settled_rss(pid) - before < 8 * MIB


# ---- item 4: any bytes as names, every page stays valid ------------------------------------------

# Bytes that broke or could break a page: invalid UTF-8, NUL and other controls, the text format's
# escapes, overlong forms, UTF-16 surrogates, code points past U+10FFFF, cut-off sequences.
NASTY = [b"\xff\xfe", b"\x00", b"\n", b"\r", b'"', b"\\", b"\\n", b"\x1b[31m", b"\x7f", b"\xc0\x80",
         b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80", b"{", b"}", b",",
         b"=", b"\xc3\xa9", b"\xf0\x9f\x98\x80", b"#", b" "]


def _random_name(rng: random.Random, cstring: bool) -> bytes:
    parts = []
    for _ in range(rng.randint(1, 6)):
        parts.append(rng.choice(NASTY) if rng.random() < 0.6 else bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))))
    name = b"".join(parts)
    return name.replace(b"\x00", b"\x01") if cstring else name  # BSON keys cannot hold a NUL


def _bson_string(key: bytes, value: bytes) -> bytes:
    return b"\x02" + key + b"\x00" + struct.pack("<i", len(value) + 1) + value + b"\x00"


def _bson_doc(elements: bytes) -> bytes:
    return struct.pack("<i", len(elements) + 5) + elements + b"\x00"


def _op_msg(body: bytes) -> bytes:
    payload = struct.pack("<I", 0) + b"\x00" + body
    return struct.pack("<iiii", 16 + len(payload), next_request_id(), 0, OP_MSG) + payload


def _send(address: str, frame: bytes) -> None:
    """One frame on its own connection; waits for the answer or the close."""
    with RawClient.for_address(address, timeout=10) as rc:
        rc.send(frame)
        try:
            rc.recv_message(timeout=10)
        except (OSError, ValueError):
            pass


def test_random_bytes_as_names_never_break_a_page(ferretdb, proxy):
    px = proxy(ferretdb.uri, admin=True)
    rng = random.Random(28)  # seeded: a failure names the same inputs again
    for _ in range(150):
        db, coll = _random_name(rng, False), _random_name(rng, False)
        command, field = _random_name(rng, True), _random_name(rng, True)
        filt = _bson_doc(b"\x10" + field + b"\x00" + struct.pack("<i", 1))
        # A find on the random namespace, a random command, and a random command with a collection.
        _send(px.address, _op_msg(_bson_doc(_bson_string(b"find", coll) + b"\x03filter\x00" + filt +
                                            _bson_string(b"$db", db))))
        _send(px.address, _op_msg(_bson_doc(b"\x10" + command + b"\x00" + struct.pack("<i", 1) + _bson_string(b"$db", db))))
        _send(px.address, _op_msg(_bson_doc(_bson_string(command, coll) + _bson_string(b"$db", db))))
    assert px.alive()

    page = _fetch(px.admin_url, "/metrics", 64 * MIB)
    assert b'ns="' in page
    _promtool_check(page)
    for path in ("/stats", "/evaluate", "/history", "/evaluate/sketches"):
        body = _fetch(px.admin_url, path, 64 * MIB)
        json.loads(body.decode("utf-8"))  # strict: invalid UTF-8 raises
    # The names are there, as U+FFFD where they were not UTF-8 (not dropped).
    assert "\ufffd".encode() in page
    _assert_unique_series(page.decode("utf-8"))
    sketches = json.loads(_fetch(px.admin_url, "/evaluate/sketches", 64 * MIB))
    assert sketches.get("namespaces"), "the export kept no namespace"


def _assert_unique_series(page: str) -> None:
    """Two samples with the same name and labels are one series twice: Prometheus drops samples
    (promtool check metrics does not notice)."""
    seen = set()
    for line in page.splitlines():
        if not line or line.startswith("#"):
            continue
        series = line.rsplit(" ", 1)[0]
        assert series not in seen, f"duplicate series {series!r}"
        seen.add(series)


FORGED = b"x\nhn.forged: 999 reads, 0 writes\n\x1b]0;pwned\x07\x1b[2J"


def _send_hostile_names(address: str) -> None:
    for coll in (b"good", b"bad\xff", b"bad\xfe", FORGED, b"dup\x01", b"dup\x02"):
        for i in range(3):
            filt = _bson_doc(_bson_string(b"k", b"v%d" % i))
            _send(address, _op_msg(_bson_doc(_bson_string(b"find", coll) + b"\x03filter\x00" + filt +
                                             _bson_string(b"$db", b"hn"))))
    _send(address, _op_msg(_bson_doc(b"\x10cmd\nFORGED LINE\r\x1b[31m\x00" + struct.pack("<i", 1) +
                                     _bson_string(b"$db", b"hn"))))


def test_hostile_names_stay_distinct_and_on_their_own_line(ferretdb, proxy, shardscope_binary):
    px = proxy(ferretdb.uri, admin=True)
    # `stats --watch` shows the interval's operations: the names are sent while it watches.
    watch = subprocess.Popen([str(shardscope_binary), "stats", "--admin", px.admin_url, "--watch", "1", "--count", "1",
                              "--top", "1000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.2)
    _send_hostile_names(px.address)
    watched, watch_err = watch.communicate(timeout=60)
    assert watch.returncode == 0, watch_err

    # The export keeps every namespace, each under its own name (bad\xff and bad\xfe apart).
    sketches = json.loads(_fetch(px.admin_url, "/evaluate/sketches", 64 * MIB).decode("utf-8"))
    names = [n["ns"] for n in sketches["namespaces"]]
    assert "hn.good" in names
    bad = [n for n in names if n.startswith("hn.bad\ufffd#")]
    assert len(bad) == 2, names
    assert "skippedNamespaces" not in sketches

    _assert_unique_series(_fetch(px.admin_url, "/metrics", 64 * MIB).decode("utf-8"))

    def plain_text(out: bytes, what: str) -> None:
        out.decode("utf-8")  # strict
        assert b"\x1b" not in out, what
        assert b"\nhn.forged" not in out and b"\nFORGED LINE" not in out, what

    plain_text(_fetch(px.admin_url, "/evaluate?format=text", 64 * MIB), "/evaluate?format=text")
    once = subprocess.run([str(shardscope_binary), "stats", "--admin", px.admin_url, "--once", "--top", "1000"],
                          capture_output=True, timeout=60)
    assert once.returncode == 0, once.stderr
    plain_text(once.stdout, "stats --once")
    assert b"x\\nhn.forged" in once.stdout  # shown, escaped
    merged = subprocess.run([str(shardscope_binary), "evaluate", "--from", px.admin_url], capture_output=True, timeout=60)
    assert merged.returncode == 0, merged.stderr
    plain_text(merged.stdout, "evaluate --from")
    plain_text(watched, "stats --watch")
    assert b"x\\nhn.forged" in watched
    assert "hn.bad\ufffd#".encode() in merged.stdout


def test_names_like_the_overflow_bucket_and_long_field_names_stay_apart(ferretdb, proxy):
    """A database and a command named "<other>" were counted as the overflow series of /metrics
    (ns="<other>", command="<other>", which the pairs past the top 200 are summed into), and their
    namespace as the overflow namespace (every shape an `other` bucket). Field names longer than
    the kept bound were cut without a hash, so finds on distinct long fields were one query shape."""
    px = proxy(ferretdb.uri, admin=True)
    for _ in range(3):
        ping_like = b"\x10<other>\x00" + struct.pack("<i", 1) + _bson_string(b"$db", b"<other>")
        _send(px.address, _op_msg(_bson_doc(ping_like)))
    prefix = b"f" * 300  # past the 255 bytes a name is kept whole
    for suffix in (b"A", b"B", b"C"):
        filt = _bson_doc(b"\x10" + prefix + suffix + b"\x00" + struct.pack("<i", 1))
        _send(px.address, _op_msg(_bson_doc(_bson_string(b"find", b"longfields") + b"\x03filter\x00" + filt +
                                            _bson_string(b"$db", b"hn"))))

    stats = json.loads(_fetch(px.admin_url, "/stats", 64 * MIB))
    rows = stats["shapes"]
    long_fields = [r for r in rows if r["ns"] == "hn.longfields"]
    assert len(long_fields) == 3, [r["shape"] for r in long_fields]
    assert all(len(r["shape"]) < 200 for r in long_fields), "bounded in bytes"
    theirs = [r for r in rows if r["ns"].startswith("<other>")]
    assert len(theirs) == 1 and theirs[0]["count"] == 3, theirs
    assert theirs[0]["ns"] != "<other>" and theirs[0]["command"] != "<other>" and not theirs[0]["other"], theirs

    page = _fetch(px.admin_url, "/metrics", 64 * MIB)
    _promtool_check(page)
    _assert_unique_series(page.decode("utf-8"))
    samples = [line for line in page.decode("utf-8").splitlines() if not line.startswith("#")]
    assert not [line for line in samples if 'ns="<other>"' in line], "no overflow yet: no series is the bucket's"
    assert [line for line in samples if 'ns="<other>#' in line], "the client's own series, under its own name"


# ---- names that read as other names -------------------------------------------------------------

# Characters that alter how the text around them shows (common/hidden_characters.h): a right-to-left
# override makes "inv" RLO "slx.eciovni" display as "invoice.xls" (Trojan Source, CVE-2021-42574);
# isolates, zero-width characters, a BOM, a line separator and C1's CSI (U+009B) hide or move text.
HIDDEN = ["\u202e", "\u2066", "\u2069", "\u200b", "\u200d", "\ufeff", "\u2028", "\u009b", "\u00ad", "\U000e0041"]
SPOOF = "inv\u202eslx.eciovni"


def _hidden_in(text: str) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for c in text if c in HIDDEN})


def test_names_with_hidden_characters_read_as_their_bytes(ferretdb, proxy, shardscope_binary):
    """Before: /metrics, `stats --once`, `evaluate --from`, /evaluate?format=text and the dashboard
    wrote bidi overrides, zero-width characters, line separators and C1 controls as they came, so a
    collection could display as another one (and U+009B drive a terminal)."""
    px = proxy(ferretdb.uri, admin=True)
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=20_000) as client:
        for i, c in enumerate(HIDDEN):
            client.hn[f"h{i}{c}x"].find_one({"k": 1})
        client.hn[SPOOF].find_one({"k": 1})
    escaped_spoof = "hn.inv\\u202eslx.eciovni"

    page = _fetch(px.admin_url, "/metrics", 64 * MIB)
    _promtool_check(page)
    _assert_unique_series(page.decode("utf-8"))
    assert _hidden_in(page.decode("utf-8")) == []
    assert 'ns="hn.inv\ufffdslx.eciovni#'.encode() in page  # replaced and hashed, as a control is

    outputs = {
        "/evaluate?format=text": _fetch(px.admin_url, "/evaluate?format=text", 64 * MIB),
        "stats --once": subprocess.run([str(shardscope_binary), "stats", "--admin", px.admin_url, "--once", "--top", "1000"],
                                       capture_output=True, timeout=60, check=True).stdout,
        "evaluate --from": subprocess.run([str(shardscope_binary), "evaluate", "--from", px.admin_url],
                                          capture_output=True, timeout=60, check=True).stdout,
    }
    for what, out in outputs.items():
        text = out.decode("utf-8")
        assert _hidden_in(text) == [], what
        assert escaped_spoof in text, what
    # /stats stays the data: the name exactly as the client sent it.
    stats = json.loads(_fetch(px.admin_url, "/stats", 64 * MIB))
    assert "hn." + SPOOF in {s["ns"] for s in stats["shapes"]}

    browser = Browser()
    try:
        browser.open(px.admin_url + "/")
        browser.wait_for("document.body.getAttribute('data-loaded') === 'true' && document.querySelectorAll('#shapes tr').length > 0")
        shown = browser.evaluate("document.body.innerText + [...document.querySelectorAll('[title]')].map((e) => e.title).join('\\n')")
    finally:
        browser.close()
    assert _hidden_in(shown) == []
    assert escaped_spoof in shown


def test_a_namespace_holding_a_nul_leaves_evaluate_from_working(ferretdb, proxy, shardscope_binary):
    """Before: one find on "hn\\0x.c" (FerretDB refuses it; the proxy counts it) made `evaluate --from`
    exit 1 with "input 1: namespace mismatch": the merge read the export's names as C strings."""
    px = proxy(ferretdb.uri, admin=True)
    for db, coll in ((b"hn", b"good"), (b"hn\x00x", b"c"), (b"hn", b"c\x00a"), (b"hn", b"c\x00b")):
        for i in range(3):
            filt = _bson_doc(_bson_string(b"k", b"v%d" % i))
            _send(px.address, _op_msg(_bson_doc(_bson_string(b"find", coll) + b"\x03filter\x00" + filt +
                                                _bson_string(b"$db", db))))
    merged = subprocess.run([str(shardscope_binary), "evaluate", "--from", px.admin_url, "--json"],
                            capture_output=True, timeout=60)
    assert merged.returncode == 0, merged.stderr.decode(errors="replace")
    names = {n["ns"] for n in json.loads(merged.stdout)["namespaces"]}
    assert {"hn.good", "hn\x00x.c", "hn.c\x00a", "hn.c\x00b"} <= names, names


def test_a_sharded_namespace_of_the_longest_length_mongodb_allows_is_one_name_everywhere(ferretdb, proxy, workdir):
    """MongoDB allows namespaces of 255 bytes, 235 for sharded collections (featureCompatibilityVersion
    4.4 and later). Before, names over 128 bytes were kept as their first 32 bytes and a hash: a
    sharded collection of 200 bytes was "shop.orders_xxx...#<hash>" on /stats and /metrics but its
    whole name on /chunks and /evaluate, so the dashboard's chunk view found none of its operations."""
    routing = json.loads((REPO_ROOT / "examples" / "routing" / "orders_6shards.json").read_text())
    coll = "orders_" + "x" * (235 - len("shop.orders_"))
    ns = "shop." + coll
    assert len(ns.encode()) == 235
    for c in routing["collections"]:
        if c["ns"] == "shop.orders":
            c["ns"] = ns
    for chunk in routing.get("chunks", []):
        if chunk.get("ns") == "shop.orders":
            chunk["ns"] = ns
    path = workdir / "long_ns_routing.json"
    path.write_text(json.dumps(routing))
    px = proxy(ferretdb.uri, "--routing", str(path), admin=True)
    with pymongo.MongoClient(px.uri, serverSelectionTimeoutMS=20_000) as client:
        for i in range(30):
            client.shop[coll].find_one({"customerId": f"C{(i * 37) % 5000:04d}"})

    stats = json.loads(_fetch(px.admin_url, "/stats", 64 * MIB))
    assert ns in {s["ns"] for s in stats["shapes"]}
    assert ns in {n["ns"] for n in stats["namespaces"]}
    chunks = json.loads(_fetch(px.admin_url, "/chunks", 64 * MIB))
    assert ns in {n["ns"] for n in chunks["namespaces"]}
    page = _fetch(px.admin_url, "/metrics", 64 * MIB).decode()
    assert f'shardscope_namespace_shard_ops_total{{ns="{ns}"' in page

    browser = Browser()
    try:
        browser.open(px.admin_url + "/")
        ops = browser.wait_for("document.body.getAttribute('data-loaded') === 'true' && "
                               "[...document.querySelectorAll('tr.chunkshard')].reduce((t, r) => t + Number(r.dataset.ops), 0)")
    finally:
        browser.close()
    assert ops == 30


def test_a_name_that_is_not_utf8_writes_one_migration_command_on_every_surface(ferretdb, proxy, shardscope_binary):
    """The migration plan's commands name the namespace by the one rule for client names (U+FFFD and
    the hash of its bytes), as the export carries it. Before: /evaluate wrote the raw name through the
    JSON writer ("shop.orders\\ufffd\\ufffd", the same command for orders\\xff\\xfe and orders\\xfe\\xff)
    while `evaluate --from` on the same sidecar wrote "shop.orders��#<hash>": two texts for one plan."""
    px = proxy(ferretdb.uri, admin=True)
    for coll in (b"orders\xff\xfe", b"orders\xfe\xff"):
        for i in range(12):
            filt = _bson_doc(_bson_string(b"customerId", b"C%04d" % i))
            _send(px.address, _op_msg(_bson_doc(_bson_string(b"find", coll) + b"\x03filter\x00" + filt +
                                                _bson_string(b"$db", b"shop"))))
    in_process = _fetch(px.admin_url, "/evaluate?format=text", 64 * MIB)
    merged = subprocess.run([str(shardscope_binary), "evaluate", "--from", px.admin_url], capture_output=True, timeout=60)
    assert merged.returncode == 0, merged.stderr
    assert merged.stdout == in_process  # one sidecar: the CLI's report is /evaluate's, byte for byte

    report = json.loads(_fetch(px.admin_url, "/evaluate", 64 * MIB).decode("utf-8"))
    merged_json = subprocess.run([str(shardscope_binary), "evaluate", "--from", px.admin_url, "--json"],
                                 capture_output=True, timeout=60)
    assert merged_json.returncode == 0, merged_json.stderr
    fleet = {n["ns"]: n["migrationPlan"] for n in json.loads(merged_json.stdout)["namespaces"]}
    commands = set()
    for n in report["namespaces"]:
        assert n["ns"].startswith("shop.orders\ufffd\ufffd#"), n["ns"]
        plan = n["migrationPlan"]
        assert plan["command"] == fleet[n["ns"]]["command"] and plan["index"] == fleet[n["ns"]]["index"], (plan, fleet)
        assert plan["command"]["shardCollection"] == n["ns"]  # the name every other surface shows
        commands.add(json.dumps(plan["command"]))
    assert len(commands) == 2, commands  # two namespaces, two commands
