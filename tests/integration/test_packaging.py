"""Packaging: `cmake --install` layout, the example config, the systemd unit.

The Dockerfile and the Kubernetes manifest are examples only (no container engine or cluster here):
they are checked for presence and, for the manifest, that it parses as YAML.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from harness import REPO_ROOT, free_port, port_accepts, proxy_env

BUILD = Path(os.environ.get("PACKAGING_BUILD_DIR", str(REPO_ROOT / "build")))  # the tree `cmake --install` reads
EXAMPLE = REPO_ROOT / "examples" / "shardscope.yaml"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if not (BUILD / "cmake_install.cmake").exists():
        pytest.skip("build/ is not configured (run scripts/setup.sh)")
    prefix = tmp_path_factory.mktemp("prefix")
    r = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return prefix


def test_install_layout(installed):
    expected = [
        "bin/shardscope",
        "etc/shardscope/shardscope.yaml",
        "share/shardscope/examples/shardscope.yaml",
        "share/shardscope/examples/routing/orders_6shards.json",
        "share/doc/shardscope/README.md",
        "lib/systemd/system/shardscope.service",
        "share/shardscope/packaging/Dockerfile",
        "share/shardscope/packaging/kubernetes/sidecar-example.yaml",
    ]
    missing = [p for p in expected if not (installed / p).exists()]
    assert not missing, (f"not installed: {missing} (is packaging/ wired in with add_subdirectory(packaging) "
                         "in the top-level CMakeLists.txt?)")
    assert os.access(installed / "bin/shardscope", os.X_OK)
    docs = {p.name for p in (REPO_ROOT / "docs").glob("*.md")}
    assert docs <= {p.name for p in (installed / "share/doc/shardscope").glob("*.md")}
    unit = (installed / "lib/systemd/system/shardscope.service").read_text()
    assert f"ExecStart={installed}/bin/shardscope proxy --config {installed}/etc/shardscope/shardscope.yaml" in unit
    assert "/usr/local" not in unit


def test_example_routing_file_is_the_test_table():
    assert (REPO_ROOT / "examples/routing/orders_6shards.json").read_bytes() == \
        (REPO_ROOT / "tests/data/routing/orders_6shards.json").read_bytes()


def _help(binary: Path) -> str:
    return subprocess.run([str(binary), "proxy", "--help"], capture_output=True, text=True, timeout=30).stdout


def _validates(binary: Path, config: Path, cwd: Path) -> None:
    """The example config passes validation (including loading its routing table and rules).

    With `--check-config` the proxy validates and exits; without it, the proxy must start and
    listen (upstream unreachable is not a config error) and drain cleanly on SIGTERM.
    """
    base = [str(binary), "proxy", "--config", str(config), "--upstream", "mongodb://127.0.0.1:1/"]
    if "--check-config" in _help(binary):
        r = subprocess.run(base + ["--check-config"], cwd=cwd, env=proxy_env(), capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        return
    port, admin = free_port(), free_port()
    p = subprocess.Popen(base + ["--listen", f"127.0.0.1:{port}", "--admin", f"127.0.0.1:{admin}"], cwd=cwd,
                         env=proxy_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        import time
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and p.poll() is None and not port_accepts(port):
            time.sleep(0.05)
        assert p.poll() is None, f"proxy refused the example config:\n{p.stderr.read()}"
        assert port_accepts(port) and port_accepts(admin)
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=20)
    assert rc == 0, p.stderr.read()


def test_example_config_validates_from_repo(shardscope_binary):
    _validates(shardscope_binary, EXAMPLE, REPO_ROOT)


def test_installed_config_validates_in_unit_working_directory(installed):
    # The unit runs in <prefix>/share/shardscope so the config's relative routing.file resolves there.
    if not (installed / "etc/shardscope/shardscope.yaml").exists():
        pytest.fail("etc/shardscope/shardscope.yaml not installed (add_subdirectory(packaging) missing?)")
    _validates(installed / "bin/shardscope", installed / "etc/shardscope/shardscope.yaml",
               installed / "share/shardscope")


def test_systemd_unit_verifies(installed):
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze not installed")
    unit = installed / "lib/systemd/system/shardscope.service"
    if not unit.exists():
        pytest.fail("unit not installed (add_subdirectory(packaging) missing?)")
    r = subprocess.run([tool, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    text = unit.read_text()
    for needle in ("DynamicUser=yes", "ProtectSystem=strict", "NoNewPrivileges=yes", "ExecReload=/bin/kill -HUP $MAINPID",
                   "Restart=on-failure", "LimitNOFILE="):
        assert needle in text


def test_deployment_examples_parse():
    yaml = pytest.importorskip("yaml")
    docs = list(yaml.safe_load_all((REPO_ROOT / "packaging/kubernetes/sidecar-example.yaml").read_text()))
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    sidecar = next(c for c in deployment["spec"]["template"]["spec"]["initContainers"] if c["name"] == "shardscope")
    assert sidecar["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert sidecar["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert any(p["name"] == "admin" for p in sidecar["ports"])
    # Discovery on an auth-enabled cluster: credentials from a Secret, mounted where the config says.
    config = yaml.safe_load(next(d for d in docs if d["kind"] == "ConfigMap")["data"]["shardscope.yaml"])
    auth = config["cluster_auth"]
    assert auth["username"] and auth["password_file"].startswith("/etc/shardscope/cluster/")
    volume = next(v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "cluster-auth")
    secret = next(d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"] == volume["secret"]["secretName"])
    assert "password" in secret["stringData"]
    assert any(m["name"] == "cluster-auth" and m["mountPath"] == "/etc/shardscope/cluster" for m in sidecar["volumeMounts"])
    dockerfile = (REPO_ROOT / "packaging/Dockerfile").read_text()
    assert "FROM debian:bookworm AS build" in dockerfile and "bookworm-slim" in dockerfile


def test_kubernetes_sidecar_outlives_the_app_and_rides_out_a_mongos_blip(shardscope_binary, tmp_path):
    """Issue 17: the example's pod on an auth-enabled cluster. Before: the proxy was an ordinary
    container (stopped together with the app, cutting the app's drain short), /readyz went 503 on
    any blip (every pod NotReady at once), and prometheus.io annotations scraped a token-guarded
    /metrics (401)."""
    yaml = pytest.importorskip("yaml")
    docs = list(yaml.safe_load_all((REPO_ROOT / "packaging/kubernetes/sidecar-example.yaml").read_text()))
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    # Native sidecar: an init container that keeps running (started before, stopped after the app).
    sidecar = next(c for c in pod["initContainers"] if c["name"] == "shardscope")
    assert sidecar["restartPolicy"] == "Always"
    assert all(c["name"] != "shardscope" for c in pod["containers"])
    app = next(c for c in pod["containers"] if c["name"] == "app")
    assert "127.0.0.1:27016" in next(e["value"] for e in app["env"] if e["name"] == "MONGODB_URI")
    config = yaml.safe_load(next(d for d in docs if d["kind"] == "ConfigMap")["data"]["shardscope.yaml"])
    drain_s = config.get("timeouts", {}).get("drain_ms", 10000) / 1000
    assert pod["terminationGracePeriodSeconds"] > drain_s + 10  # the app's drain, then the proxy's
    # Readiness tolerates a blip: the grace is longer than one failed probe period.
    probe = sidecar["readinessProbe"]
    assert probe["httpGet"]["path"] == "/readyz"
    assert config["readiness"]["upstream_grace_ms"] >= probe["periodSeconds"] * 1000
    # Credentials from a Secret the non-root proxy can read (fsGroup for the 0440 Secret volume).
    assert config["cluster_auth"]["password_file"].startswith("/etc/shardscope/cluster/")
    assert pod["securityContext"]["fsGroup"] == sidecar["securityContext"]["runAsUser"]
    volume = next(v for v in pod["volumes"] if v["name"] == "cluster-auth")
    assert any(d["kind"] == "Secret" and d["metadata"]["name"] == volume["secret"]["secretName"] for d in docs)
    # Scrape annotations name the token-free metrics listener, never the admin port (401).
    annotations = deployment["spec"]["template"]["metadata"].get("annotations", {})
    admin_port = str(sidecar["ports"][[p["name"] for p in sidecar["ports"]].index("admin")]["containerPort"])
    assert annotations.get("prometheus.io/port") != admin_port
    # (The ServiceMonitor scrapes the metrics listener without a token: test_kubernetes_scrapes_...)
    # The upstream is a mongodb+srv:// seed list, and the config (its every key) is accepted.
    assert config["upstream"].startswith("mongodb+srv://")
    password = tmp_path / "cluster-password"
    password.write_text("example-password\n")
    token = tmp_path / "token"
    token.write_text("example-token\n")
    config["cluster_auth"]["password_file"] = str(password)
    config["admin_token_file"] = str(token)
    (tmp_path / "k8s.yaml").write_text(yaml.safe_dump(config))
    r = subprocess.run([str(shardscope_binary), "proxy", "--config", str(tmp_path / "k8s.yaml"), "--upstream",
                        "mongodb://127.0.0.1:1/", "--check-config"], cwd=REPO_ROOT,
                       env=proxy_env(), capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def test_container_and_kubernetes_admin_setups_start_only_with_a_token(shardscope_binary, tmp_path):
    """Both examples expose the admin endpoint beyond loopback: they must carry a token file, and
    the same setup without one is refused (issue 14 item 15: the image served /stats to anyone)."""
    import json as _json
    yaml = pytest.importorskip("yaml")
    token = tmp_path / "token"
    token.write_text("example-token\n")

    def check(args: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run([str(shardscope_binary), *args, "--upstream", "mongodb://127.0.0.1:1/",
                               "--check-config"], cwd=REPO_ROOT, env=proxy_env(), capture_output=True,
                              text=True, timeout=30)

    cmd_line = next(l for l in (REPO_ROOT / "packaging/Dockerfile").read_text().splitlines() if l.startswith("CMD "))
    cmd = _json.loads(cmd_line[4:])
    cmd[cmd.index("--config") + 1] = str(EXAMPLE)
    assert "--admin-token-file" in cmd
    token_at = cmd.index("--admin-token-file")
    cmd[token_at + 1] = str(token)
    assert check(cmd).returncode == 0, check(cmd).stderr
    without = cmd[:token_at] + cmd[token_at + 2:]
    refused = check(without)
    assert refused.returncode == 2 and "not a loopback address" in refused.stderr

    docs = list(yaml.safe_load_all((REPO_ROOT / "packaging/kubernetes/sidecar-example.yaml").read_text()))
    config = yaml.safe_load(next(d for d in docs if d["kind"] == "ConfigMap")["data"]["shardscope.yaml"])
    assert config["admin"].startswith("0.0.0.0:") and config["admin_token_file"]
    config["admin_token_file"] = str(token)
    if config.get("cluster_auth", {}).get("password_file"):  # mounted from a Secret in the pod
        password = tmp_path / "cluster-password"
        password.write_text("example-password\n")
        config["cluster_auth"]["password_file"] = str(password)
    (tmp_path / "k8s.yaml").write_text(yaml.safe_dump(config))
    assert check(["proxy", "--config", str(tmp_path / "k8s.yaml")]).returncode == 0
    del config["admin_token_file"]
    (tmp_path / "k8s-open.yaml").write_text(yaml.safe_dump(config))
    assert check(["proxy", "--config", str(tmp_path / "k8s-open.yaml")]).returncode == 2


def test_kubernetes_scrapes_the_token_free_metrics_listener():
    """prometheus.io annotations cannot send a token: they (and the ServiceMonitor) must name the
    metrics listener's port, not the admin port that answers 401 (issue 18)."""
    yaml = pytest.importorskip("yaml")
    docs = list(yaml.safe_load_all((REPO_ROOT / "packaging/kubernetes/sidecar-example.yaml").read_text()))
    config = yaml.safe_load(next(d for d in docs if d["kind"] == "ConfigMap")["data"]["shardscope.yaml"])
    metrics_port = int(config["metrics_listen"].rpartition(":")[2])
    assert metrics_port != int(config["admin"].rpartition(":")[2])
    template = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]
    annotations = template["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(metrics_port) and annotations["prometheus.io/path"] == "/metrics"
    sidecar = next(c for c in template["spec"]["initContainers"] if c["name"] == "shardscope")  # native sidecar
    assert {"name": "metrics", "containerPort": metrics_port, "protocol": "TCP"} in sidecar["ports"]

    monitor_docs = list(yaml.safe_load_all((REPO_ROOT / "packaging/monitoring/servicemonitor.yaml").read_text()))
    service = next(d for d in monitor_docs if d["kind"] == "Service")
    monitor = next(d for d in monitor_docs if d["kind"] == "ServiceMonitor")
    endpoint = monitor["spec"]["endpoints"][0]
    port = next(p for p in service["spec"]["ports"] if p["name"] == endpoint["port"])
    assert port["targetPort"] in ("metrics", metrics_port) and "bearerTokenSecret" not in endpoint
