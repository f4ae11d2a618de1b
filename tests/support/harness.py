"""Process harness shared by the shardscope integration suites.

Starts FerretDB (SQLite backend) and the shardscope proxy on free loopback
ports, waits until they accept TCP connections and tears them down again
(process groups: SIGTERM, then SIGKILL). Nothing here depends on pytest, so
other suites (stats, rewrite, evaluation) and ad-hoc scripts can reuse it.

Environment:
  SHARDSCOPE_BIN        proxy binary (default: <repo>/build/shardscope)
  SHARDSCOPE_FERRETDB   FerretDB binary (default: <cache>/bin/ferretdb, then PATH)
  SHARDSCOPE_CACHE      cache folder of scripts/install_test_deps.sh
                        (default: ~/.cache/shardscope)
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = Path(os.environ.get("SHARDSCOPE_CACHE", str(Path.home() / ".cache" / "shardscope")))
TEST_CACHE_DIR = REPO_ROOT / "build" / "test-cache"

_LIVE: list["ManagedProcess"] = []

# Variables of the test harness itself. shardscope reads SHARDSCOPE_<KEY> as configuration and rejects
# unknown keys, so these are removed from the proxy's environment.
HARNESS_ENV_VARS = ("SHARDSCOPE_BIN", "SHARDSCOPE_CACHE", "SHARDSCOPE_FERRETDB", "SHARDSCOPE_REQUIRE_PROXY",
                    "SHARDSCOPE_KEEP_TEST_LOGS")


def proxy_env(extra: dict | None = None) -> dict:
    """os.environ without the harness's own SHARDSCOPE_* variables, plus extra."""
    env = {k: v for k, v in os.environ.items() if k not in HARNESS_ENV_VARS}
    env.update(extra or {})
    return env


def shardscope_bin() -> Path:
    p = Path(os.environ.get("SHARDSCOPE_BIN", str(REPO_ROOT / "build" / "shardscope")))
    if not p.is_absolute():
        p = REPO_ROOT / p
    return p


def ferretdb_bin() -> Path | None:
    env = os.environ.get("SHARDSCOPE_FERRETDB")
    if env:
        return Path(env)
    cached = CACHE_DIR / "bin" / "ferretdb"
    if cached.exists():
        return cached
    found = shutil.which("ferretdb")
    return Path(found) if found else None


_ports_handed_out: set[int] = set()


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1 (the kernel picks it), never one this process was
    given before: two picks before either is bound (a proxy's listen and admin ports) could
    otherwise be the same port."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _ports_handed_out:
            _ports_handed_out.add(port)
            return port


def port_accepts(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class ProcessFailed(RuntimeError):
    pass


class ManagedProcess:
    """A child process in its own process group with stdout/stderr in files."""

    def __init__(self, name: str, argv: list[str], workdir: Path, env: dict | None = None):
        self.name = name
        self.argv = [str(a) for a in argv]
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.stdout_path = self.workdir / f"{name}.stdout"
        self.stderr_path = self.workdir / f"{name}.stderr"
        self.returncode: int | None = None

    def start(self) -> "ManagedProcess":
        out = open(self.stdout_path, "ab")
        err = open(self.stderr_path, "ab")
        try:
            self.proc = subprocess.Popen(
                self.argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                cwd=str(self.workdir), env=self.env, start_new_session=True)
        finally:
            out.close()
            err.close()
        self.returncode = None
        _LIVE.append(self)
        return self

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        """Running (an exited but unreaped process counts as not alive)."""
        return self.proc is not None and self.proc.returncode is None and not self._exited_unreaped()

    def exit_code(self) -> int | None:
        """The exit code once the process has ended (reaps it), else None."""
        return None if self.proc is None else self.proc.poll()

    def stderr_text(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stdout_text(self) -> str:
        try:
            return self.stdout_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def wait_port(self, port: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise ProcessFailed(
                    f"{self.name} exited with {self.proc.returncode} before listening on {port}:\n"
                    f"{' '.join(self.argv)}\n--- stderr ---\n{self.stderr_text()[-4000:]}")
            if port_accepts(port):
                return
            time.sleep(0.05)
        raise ProcessFailed(f"{self.name} did not listen on {port} within {timeout}s:\n"
                            f"{' '.join(self.argv)}\n--- stderr ---\n{self.stderr_text()[-4000:]}")

    def send_signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.returncode is None and not self._exited_unreaped():
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def _exited_unreaped(self) -> bool:
        """True once the main process has exited; it stays a zombie (its pid is not reused)."""
        try:
            return os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:  # already reaped
            return True

    def stop(self, timeout: float = 10.0, sig: int = signal.SIGTERM) -> int | None:
        """Stops the process group; returns the exit code of the main process."""
        if self.proc is None:
            return None
        if self.proc.returncode is None:
            if not self._exited_unreaped():
                self.send_signal(sig)
                deadline = time.monotonic() + timeout
                while not self._exited_unreaped() and time.monotonic() < deadline:
                    time.sleep(0.02)
            # Kill whatever is left in the group (children of the main process) while the main
            # process is still an unreaped zombie, so the group id cannot belong to anyone else.
            if self.proc.returncode is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            self.proc.wait(timeout=10)
        self.returncode = self.proc.returncode
        if self in _LIVE:
            _LIVE.remove(self)
        return self.returncode

    def kill(self) -> None:
        self.stop(timeout=5, sig=signal.SIGKILL)


@atexit.register
def _kill_leftovers() -> None:
    for p in list(_LIVE):
        try:
            p.kill()
        except Exception:
            pass


class FerretDB:
    """FerretDB v1 with the SQLite handler on a free loopback port.

    tls: optional dict with keys cert, key and optionally ca; with it FerretDB
    also listens with TLS on .tls_port (and still plain on .port).
    """

    def __init__(self, workdir: Path, binary: Path | None = None, tls: dict | None = None,
                 port: int | None = None, log_level: str = "WARN"):
        self.binary = Path(binary) if binary else ferretdb_bin()
        if self.binary is None or not self.binary.exists():
            raise ProcessFailed("FerretDB binary not found: run scripts/install_test_deps.sh "
                                "or set SHARDSCOPE_FERRETDB")
        self.workdir = Path(workdir)
        self.data_dir = self.workdir / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.tls = tls
        self.tls_port = free_port() if tls else None
        self.log_level = log_level
        self.process: ManagedProcess | None = None

    @property
    def host(self) -> str:
        return "127.0.0.1"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/"

    def tls_uri(self, ca_file: str | Path, client_pem: str | Path | None = None) -> str:
        q = f"tls=true&tlsCAFile={ca_file}"
        if client_pem:
            q += f"&tlsCertificateKeyFile={client_pem}"
        return f"mongodb://127.0.0.1:{self.tls_port}/?{q}"

    def argv(self) -> list[str]:
        a = [str(self.binary), "--handler=sqlite", f"--sqlite-url=file:{self.data_dir}/",
             f"--listen-addr=127.0.0.1:{self.port}", "--debug-addr=-", "--telemetry=disable",
             f"--state-dir={self.workdir}", f"--log-level={self.log_level}"]
        if self.tls:
            a += [f"--listen-tls=127.0.0.1:{self.tls_port}",
                  f"--listen-tls-cert-file={self.tls['cert']}",
                  f"--listen-tls-key-file={self.tls['key']}"]
            if self.tls.get("ca"):
                a.append(f"--listen-tls-ca-file={self.tls['ca']}")
        return a

    def start(self, timeout: float = 30.0) -> "FerretDB":
        self.process = ManagedProcess("ferretdb", self.argv(), self.workdir).start()
        self.process.wait_port(self.port, timeout)
        if self.tls_port:
            self.process.wait_port(self.tls_port, timeout)
        return self

    def stop(self) -> None:
        if self.process:
            self.process.stop()

    def kill(self) -> None:
        if self.process:
            self.process.kill()

    def restart(self, timeout: float = 30.0) -> "FerretDB":
        """Starts again on the same port(s) and data directory."""
        self.stop()
        deadline = time.monotonic() + 10
        while port_accepts(self.port) and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.start(timeout)

    def alive(self) -> bool:
        return bool(self.process and self.process.alive())

    def stderr_text(self) -> str:
        return self.process.stderr_text() if self.process else ""


class Proxy:
    """`shardscope proxy` listening on a free loopback port in front of upstream_uri.

    extra_args are appended to the command line. admin=True adds
    `--admin 127.0.0.1:<free port>`; an explicit `--admin HOST:PORT` in
    extra_args is honoured too. client_tls=True makes .uri a TLS URI (pass
    tls_ca for the client's CA file). env: extra environment variables (e.g.
    SHARDSCOPE_TIMEOUTS__CONNECT_MS); the harness's own SHARDSCOPE_* variables are removed.
    """

    def __init__(self, upstream_uri: str, *extra_args: str, workdir: Path, binary: Path | None = None,
                 admin: bool = False, port: int | None = None, log_level: str | None = None,
                 tls_ca: str | Path | None = None, env: dict | None = None):
        self.binary = Path(binary) if binary else shardscope_bin()
        self.upstream_uri = upstream_uri
        self.extra_args = [str(a) for a in extra_args]
        self.workdir = Path(workdir)
        self.port = port or free_port()
        self.admin_port: int | None = None
        self.admin_host = "127.0.0.1"
        args = list(self.extra_args)
        for i, a in enumerate(args):
            val = None
            if a == "--admin" and i + 1 < len(args):
                val = args[i + 1]
            elif a.startswith("--admin="):
                val = a.split("=", 1)[1]
            if val:
                host, _, p = val.rpartition(":")
                self.admin_host, self.admin_port = host or "127.0.0.1", int(p)
        if admin and self.admin_port is None:
            self.admin_port = free_port()
            args += ["--admin", f"127.0.0.1:{self.admin_port}"]
        if log_level:
            args += ["--log-level", log_level]
        self.tls_ca = tls_ca
        self.client_tls = any(a == "--tls-cert-file" or a.startswith("--tls-cert-file=") for a in args)
        self.args = args
        self.env = proxy_env(env)
        self.process: ManagedProcess | None = None

    def argv(self) -> list[str]:
        return [str(self.binary), "proxy", "--listen", f"127.0.0.1:{self.port}",
                "--upstream", self.upstream_uri, *self.args]

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def uri(self) -> str:
        if self.client_tls:
            q = "tls=true"
            if self.tls_ca:
                q += f"&tlsCAFile={self.tls_ca}"
            return f"mongodb://127.0.0.1:{self.port}/?{q}"
        return f"mongodb://127.0.0.1:{self.port}/"

    @property
    def admin_url(self) -> str | None:
        if self.admin_port is None:
            return None
        return f"http://{self.admin_host}:{self.admin_port}"

    def start(self, timeout: float = 30.0) -> "Proxy":
        if not self.binary.exists():
            raise ProcessFailed(f"shardscope binary not found at {self.binary}")
        self.process = ManagedProcess(f"shardscope-{self.port}", self.argv(), self.workdir, env=self.env).start()
        self.process.wait_port(self.port, timeout)
        if self.admin_port:
            self.process.wait_port(self.admin_port, timeout)
        return self

    def alive(self) -> bool:
        return bool(self.process and self.process.alive())

    def stderr_text(self) -> str:
        return self.process.stderr_text() if self.process else ""

    def stderr_has(self, text: str, timeout: float = 10.0) -> bool:
        """Whether `text` is in the log within `timeout`: a connection's end is logged just after its
        socket closes, so a client that saw the close may look before the line is written."""
        deadline = time.monotonic() + timeout
        while text not in self.stderr_text():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM (drain) and wait; returns the exit code (None if never started)."""
        return self.process.stop(timeout=timeout) if self.process else None

    def kill(self) -> None:
        if self.process:
            self.process.kill()


def make_tempdir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))


def generate_tls_material(dirpath: Path) -> dict:
    """CA, server (localhost / 127.0.0.1) and client certificates made with the openssl CLI.

    Returns paths: ca, ca_key, server_cert, server_key, server_pem (cert+key),
    client_cert, client_key, client_pem (cert+key).
    """
    d = Path(dirpath)
    d.mkdir(parents=True, exist_ok=True)

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=shardscope-test-ca",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for name, cn, ext in (
        ("server", "localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"),
        ("client", "shardscope-test-client", "extendedKeyUsage=clientAuth\n"),
    ):
        (d / f"{name}.ext").write_text("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n" + ext)
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", f"/CN={cn}")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext")
        (d / f"{name}.pem").write_bytes((d / f"{name}.crt").read_bytes() + (d / f"{name}.key").read_bytes())
    return {
        "dir": d, "ca": d / "ca.pem", "ca_key": d / "ca.key",
        "server_cert": d / "server.crt", "server_key": d / "server.key", "server_pem": d / "server.pem",
        "client_cert": d / "client.crt", "client_key": d / "client.key", "client_pem": d / "client.pem",
    }
