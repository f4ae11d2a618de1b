"""A real DNS server on loopback for mongodb+srv:// tests: dnsmasq (Debian's dnsmasq-base).

It serves SRV, TXT and A records for one test domain from its command line and answers
NXDOMAIN for any other name in that domain; restarting it with new records is how a test
changes DNS under a running proxy (dnsmasq re-reads these records only at start).
"""
from __future__ import annotations

import shutil
import socket
import struct
import time
from pathlib import Path

from harness import ManagedProcess, ProcessFailed, free_port

DOMAIN = "test.example"


def dnsmasq_bin() -> str | None:
    return shutil.which("dnsmasq") or (shutil.which("dnsmasq", path="/usr/sbin:/sbin"))


def query(port: int, name: str, qtype: int = 1, timeout: float = 0.5) -> bytes | None:
    """One UDP query (type 1 = A, 16 = TXT, 33 = SRV); the raw answer or None."""
    packet = struct.pack(">HHHHHH", 0x5353, 0x0100, 1, 0, 0, 0)
    packet += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack(">HH", qtype, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        try:
            s.sendto(packet, ("127.0.0.1", port))
            return s.recv(4096)
        except OSError:
            return None


class Dnsmasq:
    """dnsmasq on 127.0.0.1:<port>. srv: [(service_name, target, port)], txt: [(name, text)],
    a: [(name, ipv4)]."""

    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.port = free_port()
        self.process: ManagedProcess | None = None
        self.starts = 0

    @property
    def server(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, srv=(), txt=(), a=()) -> "Dnsmasq":
        binary = dnsmasq_bin()
        if not binary:
            raise ProcessFailed("dnsmasq not installed (scripts/setup.sh installs dnsmasq-base)")
        argv = [binary, "--keep-in-foreground", "--log-facility=-", "--log-queries", f"--port={self.port}",
                "--listen-address=127.0.0.1", "--bind-interfaces", "--no-resolv", "--no-hosts", "--no-poll",
                "--conf-file=/dev/null", "--user=root", "--group=root", f"--local=/{DOMAIN}/",
                f"--pid-file={self.workdir / 'dnsmasq.pid'}"]
        argv += [f"--srv-host={name},{target},{port}" for name, target, port in srv]
        argv += [f"--txt-record={name},{text}" for name, text in txt]
        argv += [f"--address=/{name}/{ip}" for name, ip in a]
        self.starts += 1
        self.process = ManagedProcess(f"dnsmasq{self.starts}", argv, self.workdir).start()
        deadline = time.monotonic() + 10
        while query(self.port, f"ready.{DOMAIN}") is None:
            if not self.process.alive() or time.monotonic() > deadline:
                raise ProcessFailed(f"dnsmasq did not answer:\n{self.process.stderr_text()[-2000:]}")
            time.sleep(0.05)
        return self

    def restart(self, srv=(), txt=(), a=()) -> "Dnsmasq":
        self.stop()
        return self.start(srv, txt, a)

    def stop(self) -> None:
        if self.process:
            self.process.stop()
            self.process = None
