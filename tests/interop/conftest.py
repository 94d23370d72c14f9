"""Interop fixtures: a runner for a real third-party client in a subprocess (the name
server and broker are the root conftest's, in the test's event loop on 127.0.0.1).

The servers keep serving while a test awaits the subprocess, so the client talks to them
over real sockets. Every run is bounded twice: the client script stops itself at its own
deadline, and :func:`run_client` kills it (and its process group) when that fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from rocketkube.broker.app import BrokerApp


@dataclasses.dataclass(frozen=True)
class ClientRun:
    """What a client script printed as its last JSON line, and how long it took."""

    result: dict[str, Any]
    seconds: float
    stderr: str


#: ``await run_client(argv, timeout=..., env=...)``
RunClient = Callable[..., Awaitable[ClientRun]]


#: The Node.js client ali-ons, installed by ``make install`` (npm ci) in this folder.
NODE_DIR = Path(__file__).with_name("node")


@pytest.fixture(scope="module")
def node() -> str:
    """The node binary; skip when node or the installed ali-ons package is missing."""
    path = shutil.which("node")
    if path is None:
        pytest.skip("node is not installed: the ali-ons interop test needs Node.js")
    if not (NODE_DIR / "node_modules" / "ali-ons").is_dir():
        pytest.skip(f"ali-ons is not installed in {NODE_DIR}/node_modules (run `make install`)")
    return path


@pytest.fixture(scope="module")
def cpp_client() -> None:
    """Skip when the wheel or its bundled library cannot be loaded (checked in a subprocess)."""
    try:
        probe = subprocess.run(
            [sys.executable, "-c", "import rocketmq.client"],
            capture_output=True,
            timeout=120,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("importing rocketmq.client (PyPI rocketmq==0.4.4) hung")
    if probe.returncode != 0:
        reason = probe.stderr.decode(errors="replace").strip().splitlines()[-1:]
        pytest.skip(f"PyPI rocketmq==0.4.4 (C++ client) cannot be imported: {reason}")


def queued_total(app: BrokerApp, topic: str) -> int:
    """The sum of the max offsets of every consume queue of ``topic`` on this broker."""
    assert app.ctx is not None
    config = app.ctx.topics.get(topic)
    assert config is not None, f"the broker has no topic {topic}"
    queues = max(config.read_queue_nums, config.write_queue_nums)
    return sum(app.ctx.store.max_offset(topic, queue_id) for queue_id in range(queues))


@pytest.fixture
def broker_queued_total(broker: BrokerApp) -> Callable[[str], int]:
    return lambda topic: queued_total(broker, topic)


def _last_json_line(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                parsed = json.loads(line)
                if isinstance(parsed, dict):
                    return parsed
    return None


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    await proc.wait()


@pytest.fixture
def run_client(tmp_path: Path) -> RunClient:
    """Run a client script; ``HOME`` is a temporary directory (clients write logs there)."""

    async def run(
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> ClientRun:
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        full_env = {**os.environ, "HOME": str(home), **(env or {})}
        started = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
        out = err = b""
        timed_out = False
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            timed_out = True
        finally:
            if proc.returncode is None:
                await _kill_group(proc)
        if timed_out:
            pytest.fail(f"{argv[0]} {argv[1]} still running after {timeout:.0f} s: killed")
        seconds = time.monotonic() - started
        stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
        result = _last_json_line(stdout)
        if result is None:
            pytest.fail(
                f"{argv[1]} exited {proc.returncode} without a JSON result\n"
                f"stdout: {stdout[-2000:]}\nstderr: {stderr[-2000:]}"
            )
        if "error" in result:
            pytest.fail(f"{argv[1]} failed: {result['error']}\nstderr: {stderr[-2000:]}")
        return ClientRun(result, seconds, stderr)

    return run
