"""Fixtures for the shardscope integration suites.

Generic on purpose, so the stats/rewrite/evaluation suites can reuse them:
  ferretdb            a fresh FerretDB (SQLite, temp dir) on a free port: .uri, .port, .restart(), .kill()
  ferretdb_factory    ferretdb_factory(tls=None) -> another FerretDB
  proxy               proxy(upstream_uri, *extra_args, admin=False, tls_ca=None) -> started Proxy:
                      .uri, .port, .admin_url (with --admin / admin=True), .stderr_text(), .stop()
  shardscope_binary   path of the proxy binary (SHARDSCOPE_BIN, default build/shardscope)
  wire_peer           wire_peer(**kwargs) -> started WirePeer (tests/support/wire_peer.py)
  tls_material        CA + server + client certificates (openssl CLI) for the session
  driver_programs     built Go/C scenario programs (cached under build/test-cache/)

The proxy binary missing -> tests needing it are skipped, unless
SHARDSCOPE_REQUIRE_PROXY=1 (CI), which turns that into a failure. A binary that
exists but does not start always fails.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

SUPPORT = Path(__file__).resolve().parents[1] / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))
HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import harness  # noqa: E402
from harness import FerretDB, Proxy, REPO_ROOT, TEST_CACHE_DIR  # noqa: E402
from wire_peer import WirePeer  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than a few seconds (driver builds, 15 MB documents)")
    config.addinivalue_line("markers", "needs_proxy: runs the shardscope binary")
    config.addinivalue_line(
        "markers",
        "both_allocators: in the sanitizer subset, but also run by the plain integration stage "
        "(it checks memory that only the plain allocator returns)",
    )


def _keep_logs() -> bool:
    return os.environ.get("SHARDSCOPE_KEEP_TEST_LOGS") == "1"


@pytest.fixture
def workdir(request):
    d = Path(tempfile.mkdtemp(prefix=f"shardscope-it-{request.node.name[:40]}-".replace("/", "_")))
    yield d
    if not _keep_logs():
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def ferretdb_binary():
    b = harness.ferretdb_bin()
    if b is None or not b.exists():
        pytest.fail("FerretDB not found: run scripts/install_test_deps.sh (or set SHARDSCOPE_FERRETDB)")
    return b


@pytest.fixture
def ferretdb_factory(workdir, ferretdb_binary):
    started: list[FerretDB] = []
    counter = [0]

    def make(tls: dict | None = None, **kw) -> FerretDB:
        counter[0] += 1
        f = FerretDB(workdir / f"ferretdb{counter[0]}", binary=ferretdb_binary, tls=tls, **kw)
        started.append(f)
        return f.start()

    yield make
    for f in started:
        f.stop()


@pytest.fixture
def ferretdb(ferretdb_factory):
    return ferretdb_factory()


@pytest.fixture(scope="session")
def shardscope_binary():
    b = harness.shardscope_bin()
    if not b.exists():
        msg = f"shardscope binary not built at {b}"
        if os.environ.get("SHARDSCOPE_REQUIRE_PROXY") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return b


@pytest.fixture
def proxy(workdir, shardscope_binary, request):
    started: list[Proxy] = []

    def make(upstream_uri: str, *extra_args: str, **kw) -> Proxy:
        p = Proxy(upstream_uri, *extra_args, workdir=workdir / f"proxy{len(started) + 1}",
                  binary=shardscope_binary, **kw)
        started.append(p)
        try:
            return p.start()
        except harness.ProcessFailed as e:
            pytest.fail(str(e))

    yield make
    failed = request.node.rep_call.failed if hasattr(request.node, "rep_call") else False
    for p in started:
        p.stop()
        if failed:
            sys.stderr.write(f"\n--- shardscope stderr ({' '.join(p.argv())}) ---\n{p.stderr_text()[-6000:]}\n")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


@pytest.fixture
def wire_peer():
    peers: list[WirePeer] = []

    def make(**kw) -> WirePeer:
        p = WirePeer(**kw).start()
        peers.append(p)
        return p

    yield make
    for p in peers:
        p.stop()


@pytest.fixture(scope="session")
def tls_material():
    d = Path(tempfile.mkdtemp(prefix="shardscope-tls-"))
    try:
        yield harness.generate_tls_material(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- driver programs

DRIVERS_DIR = REPO_ROOT / "tests" / "drivers"


def _digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


class DriverPrograms:
    """Lazily built scenario programs; each takes URI [DBNAME] and prints one JSON object."""

    def __init__(self):
        TEST_CACHE_DIR.mkdir(parents=True, exist_ok=True)
        self._cmds: dict[str, list[str]] = {}

    def command(self, driver: str) -> list[str]:
        if driver not in self._cmds:
            self._cmds[driver] = getattr(self, f"_build_{driver}")()
        return self._cmds[driver]

    def _build_go(self) -> list[str]:
        go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None)
        if go is None:
            pytest.fail("go toolchain not found")
        src = DRIVERS_DIR / "go"
        out = TEST_CACHE_DIR / f"go-scenario-{_digest(src / 'main.go', src / 'go.mod', src / 'go.sum')}"
        if not out.exists():
            r = subprocess.run([go, "build", "-o", str(out) + ".tmp", "."], cwd=src,
                               capture_output=True, text=True, timeout=480)
            if r.returncode != 0:
                pytest.fail(f"go build failed:\n{r.stderr}")
            os.replace(str(out) + ".tmp", out)
        return [str(out)]

    def _build_c(self) -> list[str]:
        src = DRIVERS_DIR / "c" / "driver_scenario.c"
        out = TEST_CACHE_DIR / f"c-scenario-{_digest(src)}"
        if not out.exists():
            flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libmongoc-1.0"],
                                   capture_output=True, text=True)
            if flags.returncode != 0:
                pytest.fail(f"pkg-config libmongoc-1.0 failed: {flags.stderr}")
            r = subprocess.run(["cc", "-O1", "-o", str(out) + ".tmp", str(src), *flags.stdout.split()],
                               capture_output=True, text=True, timeout=240)
            if r.returncode != 0:
                pytest.fail(f"cc failed:\n{r.stderr}")
            os.replace(str(out) + ".tmp", out)
        return [str(out)]

    def _build_node(self) -> list[str]:
        nd = DRIVERS_DIR / "node"
        if not (nd / "node_modules" / "mongodb").exists():
            pytest.fail("tests/drivers/node/node_modules missing: run scripts/install_test_deps.sh")
        return ["node", str(nd / "scenario.js")]


@pytest.fixture(scope="session")
def driver_programs():
    return DriverPrograms()
