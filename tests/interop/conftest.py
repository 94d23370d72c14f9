"""Interop fixtures: our name server and broker in the test's event loop on 127.0.0.1, and a
runner for a real third-party client in a subprocess.

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
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from rocketkube.broker.app import BrokerApp
from rocketkube.broker.settings import BrokerSettings
from rocketkube.common.protocol import admin_headers
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.namesrv.app import NamesrvApp

#: How long the broker may take to register with the name server at start.
REGISTER_TIMEOUT_SECONDS = 10.0


@dataclasses.dataclass(frozen=True)
class ClientRun:
    """What a client script printed as its last JSON line, and how long it took."""

    result: dict[str, Any]
    seconds: float
    stderr: str


#: ``await run_client(argv, timeout=..., env=...)``
RunClient = Callable[..., Awaitable[ClientRun]]
#: ``await create_topic(topic, queues)``
CreateTopic = Callable[[str, int], Awaitable[None]]


async def _until(condition: Callable[[], bool], what: str) -> None:
    """Wait (bounded) for a condition the event loop will make true."""
    deadline = time.monotonic() + REGISTER_TIMEOUT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not in {REGISTER_TIMEOUT_SECONDS} s: {what}")
        await asyncio.sleep(0.02)


@pytest.fixture
def interop_broker_settings(tmp_path: Path, namesrv: NamesrvApp) -> BrokerSettings:
    """A broker on an ephemeral port, registering with ``namesrv``, with small store files."""
    return BrokerSettings(
        broker_name="broker-a",
        listen_port=0,
        http_port=0,
        bind_address="127.0.0.1",
        broker_ip1="127.0.0.1",
        namesrv_addr=namesrv.address,
        store_path_root_dir=str(tmp_path / "store"),
        mapped_file_size_commit_log=1 << 24,
        mapped_file_size_consume_queue=20 * 30_000,
        max_hash_slot_num=10_000,
        max_index_num=40_000,
    )


@pytest.fixture
async def broker(interop_broker_settings: BrokerSettings) -> AsyncIterator[BrokerApp]:
    """A started broker, registered with the name server before the test begins."""
    app = BrokerApp(interop_broker_settings)
    await app.start()
    try:
        registrar = app.registrar
        assert registrar is not None
        await _until(lambda: bool(registrar.registered), "the broker registered")
        yield app
    finally:
        await app.stop()


@pytest.fixture
def names() -> tuple[str, str]:
    """A fresh (topic, consumer group) pair, so no run sees another's messages or offsets."""
    suffix = uuid.uuid4().hex[:10]
    return f"InteropTopic_{suffix}", f"InteropGroup_{suffix}"


@pytest.fixture
def create_topic(namesrv: NamesrvApp, broker: BrokerApp) -> CreateTopic:
    """Create a topic as ``mqadmin updateTopic`` does: UPDATE_AND_CREATE_TOPIC (17) to the
    broker over the wire, then wait until the name server routes it."""

    async def create(topic: str, queues: int) -> None:
        header = admin_headers.CreateTopicRequestHeader(
            topic=topic,
            default_topic="TBW102",
            read_queue_nums=queues,
            write_queue_nums=queues,
            perm=6,
            topic_filter_type="SINGLE_TAG",
            order=False,
            topic_sys_flag=0,
        )
        client = RemotingClient()
        try:
            request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.encode())
            response = await client.invoke(broker.address, request)
        finally:
            await client.close()
        assert response.code == ResponseCode.SUCCESS, response.remark
        await _until(lambda: topic in namesrv.routes.topic_queue_table, f"{topic} routed")

    return create


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
