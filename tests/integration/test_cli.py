"""The command line of build/shardscope (one CLI11 parser for every sub-command): usage errors exit 2
with a message, typed values, the admin token from a file or the environment (never the process
list), HTTPS to the admin endpoint with CA options, OS reasons and JSON positions in errors,
`proxy --help` listing every config key with its default, and `stats --watch` per-interval rates."""
from __future__ import annotations

import http.server
import json
import os
import re
import ssl
import subprocess
import threading
from pathlib import Path

import pymongo
import pytest
import yaml

from harness import REPO_ROOT
from stats_helpers import ROUTING_FILE, canned_stats, run_profile, seed_orders  # noqa: F401 (fixture)

pytestmark = pytest.mark.needs_proxy

USAGE = 2


def run(binary, *args, env: dict | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("SHARDSCOPE_")}
    e.update(env or {})
    return subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, timeout=timeout, env=e)


# ---------------------------------------------------------------- usage errors: exit 2, a message

@pytest.mark.parametrize("args", [
    [],
    ["nope"],
    ["stats"],                                                   # --admin is required
    ["stats", "--admin", "http://127.0.0.1:1", "--top", "abc"],  # printed an empty table, exit 0
    ["stats", "--admin", "http://127.0.0.1:1", "--top", "-5"],   # wrapped to 2^64-5
    ["stats", "--admin", "http://127.0.0.1:1", "--interval", "x"],
    ["stats", "--admin", "http://127.0.0.1:1", "--bogus"],
    ["stats", "--admin", "ftp://127.0.0.1:1", "--once"],
    ["explain", "--command", "{}"],                               # --routing missing: exited 1
    ["explain", "--routing", ROUTING_FILE],                       # neither --command nor --range: exited 1
    ["explain", "--routing", ROUTING_FILE, "--command", "{}", "--range", "{}"],
    ["explain", "--routing", ROUTING_FILE, "--command", "{}", "--bogus"],
    ["evaluate"],
    ["evaluate", "--from"],
    ["evaluate", "--from", "http://127.0.0.1:1", "--bogus"],
    ["replay"],
    ["replay", "capture.bin", "--shards", "many", "--evaluate"],  # atoi: 0
    ["replay", "capture.bin", "--speed", "fast", "--evaluate"],
    ["replay", "capture.bin"],
    ["proxy", "--listen", "127.0.0.1:1", "--upstream", "mongodb://127.0.0.1:1", "--no-such-key", "1"],
    ["proxy", "--listen", "127.0.0.1:1", "--upstream", "mongodb://127.0.0.1:1", "stray"],
    ["proxy", "--threads", "zero", "--upstream", "mongodb://127.0.0.1:1", "--check-config"],
])
def test_usage_errors_exit_2_with_a_message(shardscope_binary, args):
    r = run(shardscope_binary, *args)
    assert r.returncode == USAGE, (args, r.returncode, r.stdout, r.stderr)
    assert r.stderr.strip(), "a usage error says what is wrong"
    assert "Traceback" not in r.stderr and "terminate called" not in r.stderr


@pytest.mark.parametrize("value", ["abc", "-5", "1.5", "0", "18446744073709551611"])
def test_stats_top_is_a_checked_whole_number(shardscope_binary, value):
    r = run(shardscope_binary, "stats", "--admin", "http://127.0.0.1:1", "--once", "--top", value)
    assert r.returncode == USAGE
    assert f"--top: expected a whole number from 1 to 100000, got '{value}'" in r.stderr, r.stderr


def test_help_exits_0_everywhere(shardscope_binary):
    for args in (["--help"], ["proxy", "--help"], ["explain", "--help"], ["stats", "--help"],
                 ["evaluate", "--help"], ["replay", "--help"]):
        r = run(shardscope_binary, *args)
        assert r.returncode == 0, (args, r.stderr)
        assert "Usage:" in r.stdout


def test_evaluate_help_documents_the_token_options(shardscope_binary):
    out = run(shardscope_binary, "evaluate", "--help").stdout
    for option in ("--token-file", "--ca-file", "--insecure", "SHARDSCOPE_ADMIN_TOKEN"):
        assert option in out, option


# ---------------------------------------------------------------- proxy --help: every key, its default

def _yaml_keys(node, prefix=""):
    for k, v in node.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            yield from _yaml_keys(v, key + ".")
        else:
            yield key


def test_proxy_help_lists_every_key_with_default_and_meaning(shardscope_binary):
    out = run(shardscope_binary, "proxy", "--help").stdout
    keys = dict(re.findall(r"^  --([a-z_.]+)(?:,--[a-z-]+)? VALUE\s*\n?\s*(.+)$", out, re.M))
    # Every key of the example configuration (and the commented-out ones) is listed ...
    example = (REPO_ROOT / "examples" / "shardscope.yaml").read_text()
    uncommented = re.sub(r"^# ?(\s*[a-z_]+:)", r"\1", example, flags=re.M)
    for key in _yaml_keys(yaml.safe_load(uncommented)):
        assert key in keys, f"{key} missing from proxy --help"
    # ... with a meaning and its default.
    assert len(keys) >= 45
    for key, text in keys.items():
        assert re.search(r"\S.* \(default: [^)]+\)?\)$", text), f"{key}: {text!r}"
    assert "(default: 5000)" in keys["timeouts.connect_ms"]
    assert "(default: 127.0.0.1:27016)" in keys["listen"]
    assert "--routing" in out and "SHARDSCOPE_TIMEOUTS__CONNECT_MS" in out


def test_proxy_keeps_its_flag_contract(shardscope_binary, tmp_path):
    """--key value, --key=value, short aliases, env vars and --config all still reach the loader."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("timeouts:\n  connect_ms: 100\n")
    r = run(shardscope_binary, "proxy", "--config", cfg, "--listen", "127.0.0.1:0", "--upstream=mongodb://127.0.0.1:1/",
            "--admin", "127.0.0.1:0", "--routing", ROUTING_FILE, "--log-level", "warn", "--timeouts.drain_ms=5",
            "--check-config", env={"SHARDSCOPE_THREADS": "2", "SHARDSCOPE_ADMIN_TOKEN": "not-a-key"})
    assert r.returncode == 0, r.stderr
    assert "config OK" in r.stdout
    assert "admin_token" not in r.stderr  # the CLI's variable is not reported as an unknown key
    bad = run(shardscope_binary, "proxy", "--upstream", "mongodb://x:1/", "--check-config",
              env={"SHARDSCOPE_THREADS": "zero"})
    assert bad.returncode == USAGE and "threads" in bad.stderr


# ---------------------------------------------------------------- errors name the OS reason and the JSON position

def test_unreadable_files_name_the_os_reason(shardscope_binary, tmp_path):
    missing = tmp_path / "missing.json"
    cases = [
        ["explain", "--routing", missing, "--command", '{"find": "orders", "$db": "shop"}'],
        ["evaluate", "--file", missing],
        ["stats", "--admin", "http://127.0.0.1:1", "--token-file", missing, "--once"],
        ["evaluate", "--from", "http://127.0.0.1:1", "--token-file", missing],
        ["proxy", "--config", missing, "--upstream", "mongodb://x:1/", "--check-config"],
        ["replay", missing, "--validate"],
        ["proxy", "--upstream", "mongodb://x:1/", "--routing", missing, "--check-config"],
    ]
    for args in cases:
        r = run(shardscope_binary, *args)
        assert r.returncode != 0
        assert f"cannot read file {missing}: No such file or directory" in r.stdout + r.stderr, (args, r.stdout, r.stderr)
    r = run(shardscope_binary, "evaluate", "--file", tmp_path)
    assert "Is a directory" in r.stderr


def test_json_errors_give_the_position(shardscope_binary, tmp_path):
    r = run(shardscope_binary, "explain", "--routing", ROUTING_FILE, "--command", '{"find": "orders", "filter": {"a": 1}')
    assert r.returncode == 1
    err = json.loads(r.stdout)["error"]
    assert "line 1, column 38: expected ',' or '}' after a value, got the end of the input" in err, err
    r = run(shardscope_binary, "explain", "--routing", ROUTING_FILE, "--command", '{"find": "orders",\n "filter": {"a": tru}}')
    err = json.loads(r.stdout)["error"]
    assert "line 2, column 18: unknown name 'tru'" in err, err
    broken = tmp_path / "sketches.json"
    broken.write_text('{"schemaVersion": 1, "collections": [')
    r = run(shardscope_binary, "evaluate", "--file", broken)
    assert r.returncode == 1 and "line 1, column 38" in r.stderr, r.stderr


# ---------------------------------------------------------------- issue 26 item 7: inputs speak mongosh

MONGOSH_FIND = '{find: "orders", filter: {customerId: "C0042"}, $db: "shop"}'


def test_explain_takes_the_command_as_mongosh_writes_it(shardscope_binary):
    """It failed with libbson's parser tokens (SPECIAL_EXPECTED, HKEY_EXPECTED)."""
    shell = run(shardscope_binary, "explain", "--routing", ROUTING_FILE, "--command", MONGOSH_FIND)
    strict = run(shardscope_binary, "explain", "--routing", ROUTING_FILE, "--command",
                 '{"find": "orders", "filter": {"customerId": "C0042"}, "$db": "shop"}')
    assert shell.returncode == 0, shell.stdout + shell.stderr
    assert json.loads(shell.stdout) == json.loads(strict.stdout)
    helpers = run(shardscope_binary, "explain", "--routing", ROUTING_FILE, "--command",
                  "{find: 'orders', filter: {customerId: 'C0042', orderDate: ISODate('2024-03-01'), n: NumberLong(5)}, "
                  "$db: 'shop'}")
    assert helpers.returncode == 0, helpers.stdout + helpers.stderr
    assert json.loads(helpers.stdout)["targeting"] == "single"
    rng = run(shardscope_binary, "explain", "--routing", ROUTING_FILE, "--range", "{min: {customerId: 'C1'}, max: {customerId: 'C2'}}")
    assert rng.returncode == 0, rng.stdout + rng.stderr
    bad = run(shardscope_binary, "explain", "--routing", ROUTING_FILE, "--command", '{find: "orders", filter: {orderId "x"}, $db: "shop"}')
    assert bad.returncode == 1
    err = json.loads(bad.stdout)["error"]
    assert "line 1, column 35: expected ':' after key" in err, err
    assert "EXPECTED" not in err, err



def test_explain_targets_an_aggregate_by_the_match_the_optimiser_moves_ahead(shardscope_binary):
    """A $match after $set/$project that leaves the shard key alone is moved before it (MongoDB manual,
    Aggregation Pipeline Optimization), so mongos targets by it; the proxy broadcast such pipelines."""
    def explain(pipeline: str) -> dict:
        r = run(shardscope_binary, "explain", "--routing", ROUTING_FILE, "--command",
                '{"aggregate": "orders", "pipeline": ' + pipeline + ', "cursor": {}, "$db": "shop"}')
        assert r.returncode == 0, r.stdout + r.stderr
        return json.loads(r.stdout)

    leading = explain('[{"$match": {"customerId": "C0042"}}]')
    assert leading["targeting"] == "single", leading
    for before in ('{"$set": {"total": 1}}', '{"$project": {"customerId": 1, "total": 1}}', '{"$unset": "notes"}'):
        moved = explain('[' + before + ', {"$match": {"customerId": "C0042"}}]')
        assert (moved["targeting"], moved["shards"]) == (leading["targeting"], leading["shards"]), (before, moved)
    stays = explain('[{"$set": {"customerId": "x"}}, {"$match": {"customerId": "C0042"}}]')
    assert stays["targeting"] == "broadcast", stays

def test_explain_with_a_rule_prints_json_for_mongosh_input_rewritten_or_not(shardscope_binary, tmp_path):
    """The skipped case echoed the mongosh text as "command"; and a limit that is not a number deletes
    every match (the server reads it as 0), so that delete is not rewritten."""
    mapping = tmp_path / "map.jsonl"
    mapping.write_text('{"orderId": "O1", "customerId": "C0100"}\n')
    rule = f"shop.orders: orderId -> customerId file={mapping}"
    for limit, applied in (("1", True), ("true", False), ("null", False), ("'1'", False), ("NumberDecimal('0')", False)):
        r = run(shardscope_binary, "explain", "--routing", ROUTING_FILE, "--rewrite-rule", rule,
                "--command", f"{{delete: 'orders', deletes: [{{q: {{orderId: 'O1'}}, limit: {limit}}}], $db: 'shop'}}")
        assert r.returncode == 0, r.stdout + r.stderr
        rewrite = json.loads(r.stdout)["rewrite"]
        assert rewrite["applied"] is applied, (limit, rewrite)
        q = rewrite["command"]["deletes"][0]["q"]
        assert q == ({"orderId": "O1", "customerId": "C0100"} if applied else {"orderId": "O1"}), (limit, q)


@pytest.mark.parametrize("command", [
    '{"find": "orders", "filter": {"customerId": "C0042"}}',              # no $db at all
    '{"find": "orders", "filter": {"customerId": "C0042"}, "": "shop"}',  # bash ate "$db" in double quotes
])
def test_explain_refuses_a_command_without_db_as_the_proxy_does(shardscope_binary, command, ferretdb, proxy):
    r = run(shardscope_binary, "explain", "--routing", ROUTING_FILE, "--command", command)
    assert r.returncode == 1, r.stdout
    err = json.loads(r.stdout)["error"]
    assert "40571" in err and "$db" in err, err
    if '""' in command:
        assert "single quotes" in err, err
    # The proxy itself answers the same command with that code.
    from wire_peer import RawClient, encode_op_msg
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE))
    with RawClient.for_address(p.address) as rc:
        rc.send(encode_op_msg(json.loads(command)))
        reply = rc.recv_message()
    assert reply is not None and reply.reply_doc["code"] == 40571, reply


def test_one_candidate_syntax_for_proxy_and_replay(shardscope_binary, tmp_path):
    missing = tmp_path / "none.cap"
    spec = "shop.orders: {customerId: 1, orderDate: 1}"
    # The proxy's evaluation.candidates and replay's --candidate read the same 'db.coll: KEY'.
    ok = run(shardscope_binary, "proxy", "--upstream", "mongodb://x:1/", "--evaluation.candidates", spec,
             "--check-config")
    assert ok.returncode == 0, ok.stderr
    new = run(shardscope_binary, "replay", missing, "--evaluate", "--candidate", spec)
    assert new.returncode == 1 and "deprecated" not in new.stderr, new.stderr  # got past the candidate: no file
    old = run(shardscope_binary, "replay", missing, "--evaluate", "--candidate", 'shop.orders={"customerId": 1}')
    assert old.returncode == 1, old.stderr
    assert "--candidate NS=KEYJSON is deprecated; write --candidate 'shop.orders: {\"customerId\": 1}'" in old.stderr
    bad = run(shardscope_binary, "replay", missing, "--evaluate", "--candidate", "shop.orders: {customerId -1}")
    assert bad.returncode == USAGE and "line 1, column 13: expected ':' after key" in bad.stderr, bad.stderr


# ---------------------------------------------------------------- issue 26 item 8: exit codes and wording

def test_unknown_subcommand_is_named_with_the_list(shardscope_binary):
    r = run(shardscope_binary, "bogus")
    assert r.returncode == USAGE
    assert "unknown subcommand 'bogus'" in r.stderr, r.stderr
    assert "proxy, explain, stats, evaluate, replay" in r.stderr, r.stderr


def test_replay_of_a_missing_file_is_a_failure_not_exit_3(shardscope_binary, tmp_path):
    r = run(shardscope_binary, "replay", tmp_path / "missing.cap", "--validate")
    assert r.returncode == 1, (r.returncode, r.stderr)


def test_a_listener_that_cannot_bind_is_a_setup_error(shardscope_binary, ferretdb):
    import socket
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        r = run(shardscope_binary, "proxy", "--listen", f"127.0.0.1:{port}", "--upstream", ferretdb.uri, timeout=30)
    finally:
        taken.close()
    assert r.returncode == USAGE, (r.returncode, r.stderr)
    assert f"cannot bind 127.0.0.1:{port}" in r.stderr, r.stderr


def test_routing_file_error_in_the_proxy_names_the_os_reason(shardscope_binary, tmp_path):
    missing = tmp_path / "routing.json"
    r = run(shardscope_binary, "proxy", "--upstream", "mongodb://x:1/", "--routing", missing, "--check-config")
    assert r.returncode == USAGE
    assert f"cannot read file {missing}: No such file or directory" in r.stderr, r.stderr


def test_stats_watch_says_no_traffic_instead_of_targeted_0(shardscope_binary, canned_stats):
    docs, url = canned_stats
    docs += [
        _snapshot(10, 100, 80, 20, {"shardA": 60}, {"a": ("single", 80)}),
        _snapshot(12, 100, 80, 20, {"shardA": 60}, {"a": ("single", 80)}),  # nothing happened
    ]
    r = run(shardscope_binary, "stats", "--admin", url, "--watch", "0.1", "--count", "1")
    assert r.returncode == 0, r.stderr
    assert "targeted -  broadcast -" in r.stdout and "targeted 0.0%" not in r.stdout, r.stdout


def test_config_shows_the_lowered_max_connections(ferretdb, workdir):
    """The log said max_connections was lowered (20000 -> what 256 descriptors allow); /config's
    effective value said 20000."""
    import resource
    from harness import ManagedProcess, free_port, proxy_env, shardscope_bin
    from stats_helpers import http_request
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2048:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    port, admin = free_port(), free_port()
    argv = ["prlimit", "--nofile=256:256", str(shardscope_bin()), "proxy", "--listen", f"127.0.0.1:{port}",
            "--upstream", ferretdb.uri, "--admin", f"127.0.0.1:{admin}", "--max_connections", "20000"]
    p = ManagedProcess("shardscope-lowered", argv, workdir, env=proxy_env()).start()
    try:
        p.wait_port(admin)
        lowered = re.search(r"max_connections lowered from 20000 to (\d+)", p.stderr_text())
        assert lowered, p.stderr_text()[-2000:]
        status, _, body = http_request(f"http://127.0.0.1:{admin}", path="/config")
        assert status == 200
        assert json.loads(body)["effective"]["max_connections"] == int(lowered.group(1))
    finally:
        p.stop()


# ---------------------------------------------------------------- the admin token: file or environment

@pytest.fixture
def token_proxy(ferretdb, proxy, tmp_path):
    token = "s3cret-token-value"
    tf = tmp_path / "token"
    tf.write_text(token + "\n")
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), "--admin-token-file", str(tf), admin=True)
    return p, token, tf


def test_token_from_file_or_environment_for_stats_and_evaluate(shardscope_binary, token_proxy):
    p, token, tf = token_proxy
    assert run(shardscope_binary, "stats", "--admin", p.admin_url, "--once").returncode == 1  # 401 without it
    for cmd in (["stats", "--admin", p.admin_url, "--json"], ["evaluate", "--from", p.admin_url, "--json"]):
        by_file = run(shardscope_binary, *cmd, "--token-file", tf)
        assert by_file.returncode == 0, by_file.stderr
        json.loads(by_file.stdout)
        by_env = run(shardscope_binary, *cmd, env={"SHARDSCOPE_ADMIN_TOKEN": token})
        assert by_env.returncode == 0, by_env.stderr
        assert run(shardscope_binary, *cmd, env={"SHARDSCOPE_ADMIN_TOKEN": "wrong"}).returncode == 1


# ---------------------------------------------------------------- HTTPS to the admin endpoint

class _Handler(http.server.BaseHTTPRequestHandler):
    seen: list = []

    def do_GET(self):  # noqa: N802
        _Handler.seen.append((self.path, self.headers.get("Authorization")))
        body = json.dumps({"schemaVersion": 1, "totals": {"ops": 7}, "shapes": [], "shards": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _https_server(tls_material, host):
    server = http.server.ThreadingHTTPServer((host, 0), _Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tls_material["server_cert"], tls_material["server_key"])
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def https_admin(tls_material):
    server = _https_server(tls_material, "127.0.0.1")
    _Handler.seen = []
    yield f"https://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_https_admin_checks_the_host_name(shardscope_binary, tls_material):
    # The certificate names 127.0.0.1 and localhost; 127.0.0.2 (loopback too) is not in it.
    server = _https_server(tls_material, "127.0.0.2")
    try:
        url = f"https://127.0.0.2:{server.server_address[1]}"
        r = run(shardscope_binary, "stats", "--admin", url, "--json", "--ca-file", tls_material["ca"])
        assert r.returncode == 1 and "certificate verify failed" in r.stderr, r.stderr
        assert run(shardscope_binary, "stats", "--admin", url, "--json", "--insecure").returncode == 0
    finally:
        server.shutdown()
        server.server_close()


def test_https_admin_with_ca_file_insecure_and_refusal(shardscope_binary, https_admin, tls_material, tmp_path):
    tf = tmp_path / "token"
    tf.write_text("tok\n")
    ok = run(shardscope_binary, "stats", "--admin", https_admin, "--json", "--ca-file", tls_material["ca"], "--token-file", tf)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["totals"]["ops"] == 7
    assert ("/stats", "Bearer tok") in _Handler.seen
    # An unknown CA is refused, with a hint; --insecure skips verification on purpose.
    refused = run(shardscope_binary, "stats", "--admin", https_admin, "--json")
    assert refused.returncode == 1 and "certificate verify failed" in refused.stderr, refused.stderr
    assert "--ca-file" in refused.stderr
    assert run(shardscope_binary, "stats", "--admin", https_admin, "--json", "--insecure").returncode == 0


# ---------------------------------------------------------------- stats --watch: per-interval rates

def test_stats_watch_prints_rates_per_interval_and_stops(shardscope_binary, ferretdb, proxy):
    p = proxy(ferretdb.uri, "--routing", str(ROUTING_FILE), admin=True)
    client = pymongo.MongoClient(p.uri, serverSelectionTimeoutMS=20000)
    seed_orders(client)
    stop = threading.Event()

    def load():
        while not stop.is_set():
            run_profile(client)

    t = threading.Thread(target=load, daemon=True)
    t.start()
    try:
        r = run(shardscope_binary, "stats", "--admin", p.admin_url, "--watch", "1", "--count", "2", "--top", "3",
                timeout=30)
    finally:
        stop.set()
        t.join(timeout=30)
        client.close()
    assert r.returncode == 0, r.stderr
    blocks = [b for b in r.stdout.split("\n\n") if b.strip()]
    assert len(blocks) == 2, r.stdout
    for b in blocks:
        head = b.splitlines()[0]
        rate = float(re.search(r"ops/s ([0-9.]+)", head).group(1))
        assert rate > 0, b
        assert re.search(r"interval 1\.\ds", head), head
        assert "shards ops/s:" in b and "shardA" in b
        rows = [line for line in b.splitlines()[3:] if line.strip()]
        assert 1 <= len(rows) <= 3, b
        assert float(rows[0].split()[0]) > 0
    # A default interval when none is given, and --count without --watch is a usage error.
    assert run(shardscope_binary, "stats", "--admin", p.admin_url, "--count", "1").returncode == USAGE
    r = run(shardscope_binary, "stats", "--admin", p.admin_url, "--watch", "--count", "1")
    assert r.returncode == 0 and "interval 1." in r.stdout, r.stdout + r.stderr


def _snapshot(uptime, ops, single, broadcast, shard_ops, shapes, reset_at="2026-01-01T00:00:00Z", window=None):
    return {"uptimeSeconds": uptime, "windowSeconds": window if window is not None else uptime, "resetAt": reset_at,
            "totals": {"ops": ops, "errors": 0, "targeting": {"single": single, "multi": 0, "broadcast": broadcast}},
            "shards": [{"name": n, "ops": v} for n, v in shard_ops.items()],
            "shapes": [{"id": i, "ns": "shop.orders", "command": "find", "shape": f"shape-{i}", "class": c, "count": n}
                       for i, (c, n) in shapes.items()]}


def test_stats_watch_rates_are_deltas_over_the_servers_interval(shardscope_binary, canned_stats):
    docs, url = canned_stats
    docs += [
        _snapshot(10, 100, 80, 20, {"shardA": 60, "shardB": 40}, {"a": ("single", 80), "b": ("broadcast", 20)}),
        _snapshot(12, 300, 200, 100, {"shardA": 260, "shardB": 140}, {"a": ("single", 200), "b": ("broadcast", 100)}),
        # counters reset (POST /stats/reset): rates count from the reset, over its window
        _snapshot(14, 50, 50, 0, {"shardA": 50, "shardB": 0}, {"a": ("single", 50)}, reset_at="2026-01-01T00:00:13Z",
                  window=1),
    ]
    r = run(shardscope_binary, "stats", "--admin", url, "--watch", "0.1", "--count", "2")
    assert r.returncode == 0, r.stderr
    first, second = [b for b in r.stdout.split("\n\n") if b.strip()]
    # These snapshots carry no count classes: no share is claimed; the reason classes' rates are.
    assert ("interval 2.0s  ops/s 100.0  errors/s 0.0  targeted -  broadcast -  "
            "class (why) ops/s: single 60.0  multi 0.0  broadcast 40.0") in first, first
    assert "shardA 100.0  shardB 50.0" in first
    rows = [line.split() for line in first.splitlines()[3:]]
    assert rows == [["60.0", "single", "shop.orders", "find", "shape-a"], ["40.0", "broadcast", "shop.orders", "find", "shape-b"]]
    assert "(counters reset)  ops/s 50.0" in second and "shardA 50.0  shardB 0.0" in second, second


# ---------------------------------------------------------------- explain --mongos-version (issue 17)

DELETE_ONE = '{"delete": "orders", "deletes": [{"q": {"status": "x"}, "limit": 1}], "$db": "shop"}'


def test_explain_mongos_version_picks_the_write_rule(shardscope_binary):
    old = run(shardscope_binary, "explain", "--routing", ROUTING_FILE, "--command", DELETE_ONE, "--mongos-version", "7.0")
    assert old.returncode == 1, old.stdout
    assert "refused by mongos before 7.1" in json.loads(old.stdout)["error"]
    new = run(shardscope_binary, "explain", "--routing", ROUTING_FILE, "--command", DELETE_ONE, "--mongos-version", "7.1")
    assert new.returncode == 0, new.stdout
    doc = json.loads(new.stdout)
    # the contract's fields, plus the additive stage and the shape the live surfaces file it under
    assert set(doc) == {"ns", "targeting", "shards", "shardKey", "reason", "stage", "shape", "shapeId"}
    assert doc["targeting"] == "broadcast" and "two-phase broadcast (mongos 7.1+)" in doc["reason"]
    unknown = run(shardscope_binary, "explain", "--routing", ROUTING_FILE, "--command", DELETE_ONE)
    assert "mongos version unknown, 7.1+ rules assumed" in json.loads(unknown.stdout)["reason"]


@pytest.mark.parametrize("value", ["seven", "7.x", "0.1", ""])
def test_explain_mongos_version_is_checked(shardscope_binary, value):
    r = run(shardscope_binary, "explain", "--routing", ROUTING_FILE, "--command", DELETE_ONE, "--mongos-version", value)
    assert r.returncode == USAGE, (r.returncode, r.stdout)
    assert "--mongos-version" in r.stderr


def test_config_mongos_version_is_checked(shardscope_binary):
    r = run(shardscope_binary, "proxy", "--upstream", "mongodb://127.0.0.1:1", "--check-config",
            env={"SHARDSCOPE_ROUTING__MONGOS_VERSION": "latest"})
    assert r.returncode != 0 and "routing.mongos_version" in (r.stderr + r.stdout)
