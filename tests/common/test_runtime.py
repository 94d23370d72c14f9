"""The server runtime's process-wide settings, checked in a process of their own."""

from __future__ import annotations

import subprocess
import sys

from rocketkube.common import runtime

_SERVER = """
import asyncio, gc, os, signal
from rocketkube.common import runtime

async def start() -> None:
    def report() -> None:
        print(*gc.get_threshold(), gc.get_freeze_count(), flush=True)
        os.kill(os.getpid(), signal.SIGTERM)
    asyncio.get_running_loop().call_soon(report)

async def stop() -> None:
    print("stopped", flush=True)

raise SystemExit(runtime.run(runtime.serve_until_signalled(start, stop)))
"""


def test_a_started_server_freezes_its_heap_and_collects_less_often() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _SERVER], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    *thresholds, frozen = (int(word) for word in first.split())
    assert tuple(thresholds) == runtime.SERVER_GC_THRESHOLDS
    assert frozen > 1000  # the imported modules and what start-up built
    assert second == "stopped"


def test_a_settled_heap_is_given_back_as_it_was() -> None:
    """A benchmark run inside a longer process (a test) leaves its collector as found."""
    script = """
import gc
from rocketkube.common import runtime
gc.set_threshold(700, 10, 10)
kept = [object() for _ in range(10)]
with runtime.settled_heap():
    print(gc.get_threshold(), gc.get_freeze_count() > 0)
print(gc.get_threshold(), gc.get_freeze_count())
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.splitlines() == [
        f"{runtime.SERVER_GC_THRESHOLDS} True",
        "(700, 10, 10) 0",
    ]
