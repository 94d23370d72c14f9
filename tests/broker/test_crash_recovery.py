"""SIGKILL during a SYNC_FLUSH load: after restart every acknowledged message is there
exactly once with its body, and the consume queues match the commit log. SIGKILL of a
SYNC_MASTER under load: its slave has every message the master acknowledged."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import broker_process
import pytest

from rocketkube.broker.store import MessageStore, StoreConfig
from rocketkube.common import errors
from rocketkube.common.message import record
from rocketkube.common.message.properties import encode_properties
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

pytestmark = pytest.mark.slow

TOPIC = "Crash"
QUEUES = 4
SEGMENT = 256 * 1024


async def start_broker(
    store: Path, port: int, *settings: str, flush: str = "SYNC_FLUSH"
) -> asyncio.subprocess.Process:
    """A broker process with small store files and ``--set`` ``settings``, once it answers."""
    return await broker_process.start_broker(
        store, port, 0, f"flushDiskType={flush}", f"mappedFileSizeCommitLog={SEGMENT}",
        "mappedFileSizeConsumeQueue=20000", "maxHashSlotNum=1000", "maxIndexNum=20000",
        *settings,
    )  # fmt: skip


def send(i: int) -> RemotingCommand:
    ext = {
        "a": "PG", "b": TOPIC, "c": "TBW102", "d": str(QUEUES), "e": str(i % QUEUES), "f": "0",
        "g": "1700000000000", "h": "0", "i": encode_properties({"UNIQ_KEY": f"U{i:08d}"}),
    }  # fmt: skip
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, f"crash-{i}".encode() * 8)


async def load_until_killed(proc: asyncio.subprocess.Process, port: int) -> dict[int, str]:
    """Pipelined sends; SIGKILL once enough are acknowledged, with more in flight."""
    acked: dict[int, str] = {}
    client = RemotingClient(timeout=10)
    addr = f"127.0.0.1:{port}"
    window = asyncio.Semaphore(64)
    killed = asyncio.Event()

    async def one(i: int) -> None:
        async with window:
            if killed.is_set():
                return
            try:
                resp = await client.invoke(addr, send(i))
            except errors.RemotingError:
                return
            if resp.code == ResponseCode.SUCCESS:
                acked[i] = resp.ext_fields["msgId"]
            if len(acked) >= 3000 and not killed.is_set():
                killed.set()
                proc.send_signal(signal.SIGKILL)

    await asyncio.gather(*(one(i) for i in range(20_000)))
    await proc.wait()
    await client.close()
    return acked


async def pull_all(port: int) -> list[tuple[int, int, bytes]]:
    client = RemotingClient(timeout=30)
    out = []
    for queue_id in range(QUEUES):
        offset = 0
        while True:
            ext = {
                "consumerGroup": "Verify", "topic": TOPIC, "queueId": str(queue_id),
                "queueOffset": str(offset), "maxMsgNums": "32", "sysFlag": "4",
                "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*",
                "subVersion": "0",
            }  # fmt: skip
            resp = await client.invoke(
                f"127.0.0.1:{port}", RemotingCommand.request(RequestCode.PULL_MESSAGE, ext)
            )
            if resp.code != ResponseCode.SUCCESS:
                break
            for msg in record.iter_records(resp.body):
                out.append((queue_id, msg.queue_offset, bytes(msg.body)))
            offset = int(resp.ext_fields["nextBeginOffset"])
    await client.close()
    return out


def commit_log_records(store_dir: Path) -> list[tuple[str, int, int, bytes]]:
    """(topic, queueId, queueOffset, body) of every record in the commit log, in log order;
    checks that the consume queues hold the same records."""
    config = StoreConfig(
        store_path_root_dir=store_dir,
        mapped_file_size_commit_log=SEGMENT,
        mapped_file_size_consume_queue=20000,
        max_hash_slot_num=1000,
        max_index_num=20000,
    )
    store = MessageStore(config)
    store.open()
    try:
        found = []
        for topic in store.topics():
            for queue_id in store.queue_ids(topic):
                offset = store.min_offset(topic, queue_id)
                while offset < store.max_offset(topic, queue_id):
                    result = store.get_messages(topic, queue_id, offset, 32)
                    for buf in result.buffers:
                        for msg in record.iter_records(buf):
                            assert (msg.topic, msg.queue_id) == (topic, queue_id)
                            found.append((topic, queue_id, msg.queue_offset, msg.body))
                    offset = result.next_begin_offset
        scanned = []
        pos = store.commit_log_min_offset
        while pos < store.commit_log_max_offset:
            view = store.read_commit_log(pos, SEGMENT)
            assert view is not None
            inner = 0
            while inner < len(view):
                size = record.check(view, inner)
                if size <= 0:
                    break
                msg = record.decode(view, inner)
                scanned.append((msg.topic, msg.queue_id, msg.queue_offset, msg.body))
                inner += size
            pos = (
                (pos // SEGMENT + 1) * SEGMENT if inner == 0 or inner >= len(view) else pos + inner
            )
        assert sorted(found) == sorted(scanned)
        return scanned
    finally:
        store.close()


async def test_sigkill_during_sync_flush_load_loses_no_acknowledged_message(
    tmp_path: Path,
) -> None:
    store_dir = tmp_path / "store"
    port = broker_process.free_port()
    proc = await start_broker(store_dir, port, "haListenPort=0")
    acked = await load_until_killed(proc, port)
    assert proc.returncode == -signal.SIGKILL
    assert len(acked) >= 3000
    assert (store_dir / "abort").exists()  # a crash, not a clean stop

    proc = await start_broker(store_dir, port, "haListenPort=0")
    try:
        stored = await pull_all(port)
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 60)
    bodies = [body for _, _, body in stored]
    assert len(bodies) == len(set(bodies)), "a message is stored twice"
    present = set(bodies)
    missing = [i for i in acked if f"crash-{i}".encode() * 8 not in present]
    assert missing == [], f"{len(missing)} acknowledged messages lost"
    for queue_id in range(QUEUES):
        offsets = sorted(o for q, o, _ in stored if q == queue_id)
        assert offsets == list(range(len(offsets)))
    in_log = [r for r in commit_log_records(store_dir) if r[0] == TOPIC]
    assert len(in_log) == len(stored)


async def test_sigkill_of_a_sync_master_loses_no_acknowledged_message(tmp_path: Path) -> None:
    master_port, master_ha, slave_port = (
        broker_process.free_port(),
        broker_process.free_port(),
        broker_process.free_port(),
    )
    master = await start_broker(tmp_path / "master", master_port, "brokerRole=SYNC_MASTER",
                                f"haListenPort={master_ha}", flush="ASYNC_FLUSH")  # fmt: skip
    slave = await start_broker(tmp_path / "slave", slave_port, "brokerRole=SLAVE", "brokerId=1",
                               f"haMasterAddress=127.0.0.1:{master_ha}",
                               flush="ASYNC_FLUSH")  # fmt: skip
    try:
        acked = await load_until_killed(master, master_port)
    finally:
        slave.send_signal(signal.SIGTERM)
        await asyncio.wait_for(slave.wait(), 60)
    assert master.returncode == -signal.SIGKILL
    assert len(acked) >= 3000
    copied = {body for topic, _, _, body in commit_log_records(tmp_path / "slave")
              if topic == TOPIC}  # fmt: skip
    missing = [i for i in acked if f"crash-{i}".encode() * 8 not in copied]
    assert missing == [], f"{len(missing)} acknowledged messages not on the slave"
