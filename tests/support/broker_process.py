"""A broker in a process of its own (``python -m rocketkube.launcher broker``), for tests
that kill it, restart it or watch it die, and the requests they send it.

``pyproject.toml`` puts this folder on pytest's path (see ``waiting.py``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from ports import free_port

from rocketkube.common import errors
from rocketkube.common.message.properties import encode_properties
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

__all__ = ["free_port", "pull", "send", "start_broker", "stop_broker"]

START_SECONDS = 180  # a loaded CI host took 45 s to start and stop a Python process


async def start_broker(
    store: Path, port: int, http_port: int, *settings: str
) -> asyncio.subprocess.Process:
    """A broker process on ``port`` (metrics on ``http_port``) with ``--set`` ``settings``,
    once it answers; the test fails if it exits first."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketkube.launcher", "broker",
        "--port", str(port), "--http-port", str(http_port), "--broker-ip", "127.0.0.1",
        "--store", str(store), "--set", "haListenPort=0",
        *(arg for setting in settings for arg in ("--set", setting)),
        "--log-level", "WARNING",
        env={**os.environ, "NAMESRV_ADDR": ""},
    )  # fmt: skip
    client = RemotingClient(timeout=5)
    deadline = time.monotonic() + START_SECONDS
    try:
        while time.monotonic() < deadline:
            try:
                resp = await client.invoke(
                    f"127.0.0.1:{port}",
                    RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO),
                )
                if resp.code == ResponseCode.SUCCESS:
                    return proc
            except errors.RemotingError:
                pass
            if proc.returncode is not None:
                pytest.fail(f"broker exited with {proc.returncode}")
            await asyncio.sleep(0.1)
    finally:
        await client.close()
    proc.kill()
    pytest.fail("broker did not start")


async def stop_broker(proc: asyncio.subprocess.Process, how: int = signal.SIGTERM) -> int:
    """Send ``how`` and return the exit status (-9 after SIGKILL, 0 after a clean stop)."""
    if proc.returncode is None:
        proc.send_signal(how)
    return await asyncio.wait_for(proc.wait(), 60)


def send(topic: str, queue_id: int, body: bytes, uniq: str) -> RemotingCommand:
    """SEND_MESSAGE_V2 of one message (its topic created from TBW102 with 4 queues)."""
    ext = {
        "a": "PG", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
        "g": "1700000000000", "h": "0", "i": encode_properties({"UNIQ_KEY": uniq}),
    }  # fmt: skip
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body)


def pull(topic: str, queue_id: int, offset: int) -> RemotingCommand:
    """PULL_MESSAGE of up to 32 messages, no suspension, no commit."""
    ext = {
        "consumerGroup": "Verify", "topic": topic, "queueId": str(queue_id),
        "queueOffset": str(offset), "maxMsgNums": "32", "sysFlag": "4",
        "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*",
        "subVersion": "0",
    }  # fmt: skip
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, ext)
