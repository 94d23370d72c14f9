"""Issue 23: a full disk is an error the broker handles, never a SIGBUS.

A broker process on a 64 MiB tmpfs, a filler file taking 20 MiB of it: 64 KiB sends until
the disk is full for the broker (90 % used: ``diskSpaceWarningLevelRatio``), then a send
to a new topic, then the disk filled to its last block by another writer, then another.
One commit log segment spans the disk, so retention has nothing it may delete (above 85 %
it would delete the oldest segments, acknowledged messages with them, as RocketMQ does).
Every refusal is SERVICE_NOT_AVAILABLE (14) saying the disk is full, every acknowledged
message reads back, heartbeats and admin
requests are answered, and ``/readyz`` and ``/metrics`` say why writes are refused. The
broker starts again on the full disk in that state, after SIGKILL (its checkpoint from
start-up: recovery rebuilds every queue entry on the full disk) and after a clean stop;
once the fillers are deleted, sends are taken again without a restart.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest
from broker_process import free_port, pull, send, start_broker, stop_broker
from tmpfs import fill, tmpfs
from waiting import WAIT_SECONDS

from rocketkube.broker.settings import BrokerSettings
from rocketkube.common.message import record
from rocketkube.common.protocol.heartbeat import HeartbeatData
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

TOPIC = "Filling"
QUEUES = 4
BODY = 64 * 1024
SETTINGS = (
    f"mappedFileSizeCommitLog={64 << 20}",
    "mappedFileSizeConsumeQueue=20000",
    "maxHashSlotNum=1000",
    "maxIndexNum=20000",
    "flushIntervalConsumeQueue=600000",  # the checkpoint stays where start-up put it
)


class Broker:
    """A broker process on the small disk and a client to it."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.port = free_port()
        self.http_port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.client = RemotingClient(timeout=10)
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.proc = await start_broker(self.store, self.port, self.http_port, *SETTINGS)

    async def stop(self, how: int = signal.SIGTERM) -> int:
        assert self.proc is not None
        return await stop_broker(self.proc, how)

    async def invoke(self, request: RemotingCommand) -> RemotingCommand:
        return await self.client.invoke(self.address, request)

    async def pull_all(self, topic: str) -> dict[str, bytes]:
        """Every message of the topic by UNIQ_KEY, pulled from offset 0."""
        found: dict[str, bytes] = {}
        for queue_id in range(QUEUES):
            offset = 0
            while (resp := await self.invoke(pull(topic, queue_id, offset))).code == 0:
                for message in record.iter_records(resp.body):
                    found[message.properties["UNIQ_KEY"]] = bytes(message.body)
                offset = int(resp.ext_fields["nextBeginOffset"])
        return found

    async def http(self, path: str) -> tuple[int, str]:
        url = f"http://127.0.0.1:{self.http_port}{path}"
        async with aiohttp.ClientSession() as session, session.get(url) as resp:
            return resp.status, await resp.text()


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk", 64 << 20) as path:
        yield path


@pytest.fixture
async def broker(disk: Path) -> AsyncIterator[Broker]:
    one = Broker(disk / "store")
    yield one
    if one.proc is not None and one.proc.returncode is None:
        await one.stop(signal.SIGKILL)
    await one.client.close()


def body(i: int) -> bytes:
    return (b"%08d" % i) * (BODY // 8)


async def assert_refused(broker: Broker, topic: str, i: int) -> None:
    resp = await broker.invoke(send(topic, i % QUEUES, body(i), f"U{i}"))
    assert resp.code == ResponseCode.SERVICE_NOT_AVAILABLE, resp.remark
    assert "disk full" in (resp.remark or "")


async def assert_serving_reads(broker: Broker, acked: dict[str, bytes]) -> None:
    assert await broker.pull_all(TOPIC) == acked
    beat = HeartbeatData("full-disk-client", producer_groups=["PG"]).encode()
    assert (
        await broker.invoke(RemotingCommand.request(RequestCode.HEART_BEAT, body=beat))
    ).code == 0
    info = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO)
    assert (await broker.invoke(info)).code == ResponseCode.SUCCESS
    status, text = await broker.http("/readyz")
    assert status == 200
    assert "writes refused: disk full" in text
    _, metrics = await broker.http("/metrics")
    assert "rocketkube_broker_disk_full 1.0" in metrics


async def test_a_full_disk_refuses_sends_serves_reads_and_recovers_without_restart(
    disk: Path, broker: Broker
) -> None:
    (disk / "reserve").write_bytes(bytes(20 << 20))  # to free later
    await broker.start()
    acked: dict[str, bytes] = {}
    for i in range(2000):
        resp = await broker.invoke(send(TOPIC, i % QUEUES, body(i), f"U{i}"))
        if resp.code != ResponseCode.SUCCESS:
            assert resp.code == ResponseCode.SERVICE_NOT_AVAILABLE, resp.remark
            assert "disk full" in (resp.remark or "")
            break
        acked[f"U{i}"] = body(i)
    else:
        pytest.fail("the disk never filled")
    assert len(acked) > 200

    await assert_refused(broker, "BrandNew", 10_000)  # the SIGBUS
    fill(disk / "filler")  # another writer takes the last block
    await assert_refused(broker, "AnotherNew", 10_001)
    await assert_serving_reads(broker, acked)

    assert await broker.stop(signal.SIGKILL) == -signal.SIGKILL
    await broker.start()  # crash recovery on a full disk
    await assert_refused(broker, TOPIC, 10_002)
    await assert_serving_reads(broker, acked)

    assert await broker.stop() == 0  # clean: config files it could not save are logged
    await broker.start()
    await assert_refused(broker, TOPIC, 10_003)
    await assert_serving_reads(broker, acked)

    (disk / "filler").unlink()
    (disk / "reserve").unlink()
    for _ in range(int(WAIT_SECONDS * 10)):  # the next measurement sees the space
        resp = await broker.invoke(send("BrandNew", 0, b"space again", "U-again"))
        if resp.code == ResponseCode.SUCCESS:
            break
        assert resp.code == ResponseCode.SERVICE_NOT_AVAILABLE, resp.remark
        await asyncio.sleep(0.1)
    else:
        pytest.fail("sends not taken again once space returned")
    assert await broker.pull_all("BrandNew") == {"U-again": b"space again"}
    status, text = await broker.http("/readyz")
    assert (status, text) == (200, "ready\n")
    assert await broker.pull_all(TOPIC) == acked
    assert await broker.stop() == 0


def test_disk_ratios_take_rocketmq_names_and_ranges() -> None:
    """Percent, as RocketMQ's MessageStoreConfig has them, held to its store's ranges."""
    default = BrokerSettings().store_config()
    assert (default.disk_space_warning_level_ratio, default.disk_space_clean_forcibly_ratio) == (
        0.90,
        0.85,
    )
    set_ = BrokerSettings.model_validate(
        {"diskSpaceWarningLevelRatio": 80, "diskSpaceCleanForciblyRatio": 70}
    ).store_config()
    assert (set_.disk_space_warning_level_ratio, set_.disk_space_clean_forcibly_ratio) == (
        0.80,
        0.70,
    )
    held = BrokerSettings.model_validate(
        {"diskSpaceWarningLevelRatio": 99, "diskSpaceCleanForciblyRatio": 10}
    ).store_config()
    assert (held.disk_space_warning_level_ratio, held.disk_space_clean_forcibly_ratio) == (
        0.90,
        0.30,
    )
