"""Real drivers, real upstream (FerretDB): the proxy must be transparent.

Each driver runs the same deterministic scenario (CRUD, a bulk insert of 1500
documents sent as an OP_MSG document sequence, a cursor over >= 5 getMore
batches, a 15 MB document, an explicit session, duplicate-key and unknown-command
errors) once directly against FerretDB and once through shardscope, each on a
fresh database; the two result objects must be equal.
"""
from __future__ import annotations

import subprocess

import pytest

from harness import REPO_ROOT
from scenarios import check_expected, run_program, run_pymongo_scenario

DRIVERS = ["pymongo", "go", "node", "c"]


def _run(driver: str, driver_programs, uri: str, db_name: str) -> dict:
    if driver == "pymongo":
        return run_pymongo_scenario(uri, db_name)
    return run_program(driver_programs.command(driver), uri, db_name)


@pytest.mark.slow
@pytest.mark.parametrize("driver", DRIVERS)
def test_scenario_direct(driver, ferretdb, driver_programs):
    """The scenario itself is right against FerretDB (no proxy involved)."""
    res = _run(driver, driver_programs, ferretdb.uri, f"direct_{driver}")
    check_expected(res)


@pytest.mark.slow
@pytest.mark.needs_proxy
@pytest.mark.parametrize("driver", DRIVERS)
def test_scenario_through_proxy_equals_direct(driver, ferretdb, proxy, driver_programs):
    px = proxy(ferretdb.uri)
    direct = _run(driver, driver_programs, ferretdb.uri, f"direct_{driver}")
    through = _run(driver, driver_programs, px.uri, f"proxied_{driver}")
    check_expected(direct)
    assert through == direct
    assert px.alive(), px.stderr_text()[-3000:]


@pytest.mark.needs_proxy
def test_mongosh_smoke_through_proxy(ferretdb, proxy):
    px = proxy(ferretdb.uri)
    node_dir = REPO_ROOT / "tests" / "drivers" / "node"
    script = (
        "db.getSiblingDB('smoke').c.insertOne({_id: 1, v: 'hello'});"
        "const d = db.getSiblingDB('smoke').c.findOne({_id: 1});"
        "print(JSON.stringify({v: d.v, ping: db.runCommand({ping: 1}).ok}));"
    )
    r = subprocess.run(["npx", "--no-install", "mongosh", px.uri + "smoke", "--quiet", "--norc", "--eval", script],
                       cwd=node_dir, capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "MONGOSH_SKIP_NODE_VERSION_CHECK": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert '{"v":"hello","ping":1}' in r.stdout, (r.stdout, r.stderr[-2000:])
