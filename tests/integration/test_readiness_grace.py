"""/readyz during a short mongos blip (issue 17, Kubernetes): with readiness.upstream_grace_ms a
blip shorter than the grace keeps 200 (before: 503 at once, every pod of the Deployment NotReady
together), an outage longer than it gives 503. A plain TCP listener stands in for the mongos: the
pool's probe is a TCP connect (and TLS handshake when configured), so listening = up."""
from __future__ import annotations

import socket
import time

import pytest

from harness import free_port
from stats_helpers import http_request


class Listener:
    def __init__(self, port: int):
        self.port = port
        self.sock: socket.socket | None = None

    def open(self) -> None:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        self.sock = s

    def close(self) -> None:
        if self.sock:
            self.sock.close()
            self.sock = None


GRACE_MS = 2500  # readiness.upstream_grace_ms where a test sets one

def _readyz(px) -> tuple[int, str]:
    status, _, body = http_request(px.admin_url, path="/readyz")
    return status, body.decode()


def _wait_status(px, want: int, timeout: float) -> float:
    t0 = time.monotonic()
    while _readyz(px)[0] != want:
        assert time.monotonic() - t0 < timeout, _readyz(px)
        time.sleep(0.05)
    return time.monotonic() - t0


@pytest.fixture
def mongos():
    listener = Listener(free_port())
    listener.open()
    yield listener
    listener.close()


@pytest.mark.needs_proxy
def test_short_blip_keeps_ready_long_outage_does_not(mongos, proxy):
    px = proxy(f"mongodb://127.0.0.1:{mongos.port}/", "--readiness.upstream_grace_ms", str(GRACE_MS),
               "--upstream_pool.probe_interval_ms", "100", admin=True)
    _wait_status(px, 200, 10)
    # A 1 s blip: /readyz polled throughout stays 200 and says it is riding out the grace.
    mongos.close()
    t0 = time.monotonic()
    saw_grace = False
    while time.monotonic() - t0 < 1.0:
        status, body = _readyz(px)
        assert status == 200, body
        saw_grace = saw_grace or "still ready" in body
        time.sleep(0.05)
    assert saw_grace
    mongos.open()
    deadline = time.monotonic() + 5  # the probe sees it back when its backoff (<= 1 s here) ends
    while "no mongos up" in (body := _readyz(px)[1]):
        assert time.monotonic() < deadline, body
        time.sleep(0.05)
    assert _readyz(px)[0] == 200
    # An outage past the grace: 503, not before the grace has run out.
    mongos.close()
    took = _wait_status(px, 503, 10)
    assert took >= GRACE_MS / 1000 * 0.8, took  # not before the grace has run out
    assert f"readiness.upstream_grace_ms {GRACE_MS}: not ready" in _readyz(px)[1]


@pytest.mark.needs_proxy
def test_without_grace_a_blip_is_503_at_once(mongos, proxy):
    px = proxy(f"mongodb://127.0.0.1:{mongos.port}/", "--upstream_pool.probe_interval_ms", "100", admin=True)
    _wait_status(px, 200, 10)
    mongos.close()
    # At once: well inside the grace the test above rides out.
    assert _wait_status(px, 503, 10) < GRACE_MS / 1000 / 2
