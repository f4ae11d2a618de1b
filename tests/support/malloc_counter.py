"""The proxy under bench/malloc_counter.c (LD_PRELOAD): build the preload, and read its counters.

The counter appends one line of totals (`total=N ... live=N`) to MALLOC_COUNTER_FILE each time the
process gets SIGUSR2.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def preload_env(workdir: Path, log: Path) -> dict:
    """The environment that runs a process under the counter, its lines going to `log`."""
    so = workdir / "malloc_counter.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(so), str(REPO / "bench" / "malloc_counter.c")],
                   check=True, capture_output=True)
    return {"LD_PRELOAD": str(so), "MALLOC_COUNTER_FILE": str(log)}


def read_counter(pid: int, log: Path, field: str) -> int:
    """Signals `pid` and returns `field` (e.g. "total", "live") from the line it writes."""
    before = log.read_text().count("\n") if log.exists() else 0
    os.kill(pid, signal.SIGUSR2)
    for _ in range(500):
        if log.exists() and log.read_text().count("\n") > before:
            break
        time.sleep(0.01)
    return int(re.findall(rf"\b{field}=(\d+)", log.read_text())[-1])
