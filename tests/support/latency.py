"""Stall checks without absolute time bounds (issue 30). A test that must show "this input does not
hold other clients up" measures the same thing twice in one test: the latencies of a healthy client
while a control input runs (same size, nothing to analyse) and while the hostile input runs, and
compares the two with a generous ratio. A slow machine, a busy one or a sanitizer slows both alike;
the stalls these tests guard against were 10-1000x the control."""
from __future__ import annotations

import threading
import time
from typing import Callable

import pymongo


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * q))]


def stall_bound(control: list[float], ratio: float = 20.0) -> float:
    """What the healthy client may wait while the hostile input runs: `ratio` x the control's p99,
    and never less than 3x the worst wait seen under the control (the machine's own hiccups)."""
    return max(ratio * percentile(control, 0.99), 3 * max(control))


def assert_no_stall(hostile: list[float], control: list[float], what: str, ratio: float = 20.0) -> None:
    assert hostile, f"no operation of the healthy client ran during {what}"
    assert control, "no operation of the healthy client ran during the control"
    bound = stall_bound(control, ratio)
    worst = max(hostile)
    assert worst <= bound, (
        f"a healthy client waited {worst * 1000:.1f} ms during {what}; under the control input its p99 was "
        f"{percentile(control, 0.99) * 1000:.1f} ms and its worst {max(control) * 1000:.1f} ms "
        f"(bound {bound * 1000:.1f} ms)")


def ping_latencies_during(uri: str, action: Callable[[], None], min_pings: int = 20) -> tuple[list[float], float]:
    """Runs `action` in a thread while a separate pymongo client pings through `uri` every 5 ms;
    returns the ping latencies (seconds) and how long the action ran. Keeps pinging until at
    least `min_pings` ran, so a quick action still gives a sample."""
    client = pymongo.MongoClient(uri, directConnection=True, serverSelectionTimeoutMS=20_000, maxPoolSize=1)
    client.admin.command("ping")
    latencies: list[float] = []
    done = threading.Event()
    ran = [0.0]

    def run():
        start = time.monotonic()
        try:
            action()
        finally:
            ran[0] = time.monotonic() - start
            done.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    while not done.is_set() or len(latencies) < min_pings:
        start = time.perf_counter()
        client.admin.command("ping")
        latencies.append(time.perf_counter() - start)
        time.sleep(0.005)
    t.join()
    client.close()
    return latencies, ran[0]


def assert_action_does_not_stall(uri: str, hostile: Callable[[], None], control: Callable[[], None], what: str,
                                 ratio: float = 20.0) -> None:
    """Pings through `uri` while `hostile` runs, then while `control` runs over and over for as long
    (so both windows see the machine's hiccups alike), and compares the two (`assert_no_stall`)."""
    hostile_waits, seconds = ping_latencies_during(uri, hostile)

    def control_for_as_long():
        end = time.monotonic() + seconds
        control()
        while time.monotonic() < end:
            control()

    control_waits, _ = ping_latencies_during(uri, control_for_as_long)
    assert_no_stall(hostile_waits, control_waits, what, ratio)
