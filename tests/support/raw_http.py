"""An HTTP client that sends and reads at the same time, as curl and load balancers do: what a
server answers to a request it refuses before reading it whole (tests and bench/hostile_inputs.py)."""
from __future__ import annotations

import socket
import threading


def status_line_while_sending(url: str, request: bytes, timeout: float = 10.0) -> bytes:
    """Sends `request` to http://HOST:PORT on one thread while reading the answer on another;
    returns the answer's first line (b"" when the connection closed without one)."""
    host, port = url.removeprefix("http://").split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        def send():
            try:
                s.sendall(request)
            except OSError:
                pass  # the server may stop reading once it has answered

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        answer = b""
        try:
            while b"\r\n" not in answer:
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk
        except OSError:
            pass
        sender.join(timeout)
        return answer.split(b"\r\n", 1)[0]
