"""A real headless Chromium driven over the DevTools protocol, for dashboard tests that need layout
(how tall a row is at 1400 px) or interaction (clicking "more"): `--dump-dom` shows neither.

No browser-automation package is installed, so this speaks the protocol itself: a minimal
WebSocket client (RFC 6455 text frames, client-masked) over a plain socket, and CDP's JSON
messages (Page.navigate, Runtime.evaluate)."""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

from stats_helpers import CHROMIUM_FLAGS, chromium_binary


class _WebSocket:
    def __init__(self, url: str, timeout: float):
        u = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            assert chunk, head
            head += chunk
        assert head.startswith(b"HTTP/1.1 101"), head
        self.buffer = head.split(b"\r\n\r\n", 1)[1]

    def send(self, text: str) -> None:
        data = text.encode()
        header = bytes([0x81])
        n = len(data)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            assert chunk, "devtools closed the connection"
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def recv(self) -> str:
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            payload = self._read(n)
            if b0 & 0x0F == 0x9:  # ping: not sent by Chromium to clients, ignored anyway
                continue
            message += payload
            if b0 & 0x80:
                return message.decode()

    def close(self) -> None:
        self.sock.close()


class Browser:
    """Chromium with one page: `evaluate(js)` returns the value of a JS expression (promises awaited)."""

    def __init__(self, width: int = 1400, height: int = 1000, timeout: float = 60.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="shardscope-cdp-")
        self.proc = subprocess.Popen(
            [chromium_binary(), *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-port=0",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = None
        deadline = time.monotonic() + timeout
        while port is None:
            line = self.proc.stderr.readline()
            assert line or self.proc.poll() is None, "chromium exited before listening"
            m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if m:
                port = int(m.group(1))
            assert time.monotonic() < deadline, "chromium did not print its DevTools port"
        pages = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout).read())
        page = next(p for p in pages if p["type"] == "page")
        self.ws = _WebSocket(page["webSocketDebuggerUrl"], timeout)
        self.next_id = 0

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                assert "error" not in msg, msg
                return msg["result"]

    def evaluate(self, expression: str):
        r = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        assert "exceptionDetails" not in r, r
        return r["result"].get("value")

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def wait_for(self, expression: str, timeout: float | None = None):
        """Polls a JS expression until it is truthy; returns its value."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            r = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
            value = None if "exceptionDetails" in r else r["result"].get("value")  # e.g. no body yet
            if value:
                return value
            assert time.monotonic() < deadline, f"never true: {expression}"
            time.sleep(0.2)

    def screenshot(self, path, width: int = 1400, height: int = 2400) -> None:
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            shutil.rmtree(self.profile, ignore_errors=True)
