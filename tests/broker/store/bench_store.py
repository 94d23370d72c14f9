"""Store throughput probe (not a test): ``.venv/bin/python tests/broker/store/bench_store.py``.

Appends 100-byte messages with Java-client-like properties (UNIQ_KEY, TAGS, WAIT) in
process, through ``put_messages`` (batches), ``put_message`` (one by one) and SYNC_FLUSH
group commit with concurrent senders, then pulls everything back 32 at a time. Compare
ratios within one run: machines of this kind vary 3-5x from day to day.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

from rocketkube.broker.store import FlushDiskType, InnerMessage, MessageStore, StoreConfig
from rocketkube.common.message import ids, record

BODY = b"x" * 100
HOST = ids.pack_host("10.0.0.9", 40000)


def messages(count: int, start: int = 0) -> list[InnerMessage]:
    return [
        InnerMessage(
            "BenchTopic",
            (start + i) % 8,
            BODY,
            b"UNIQ_KEY\x017F0000010A2C18B4AAC2%014X\x02WAIT\x01true\x02TAGS\x01TagA" % (start + i),
            born_timestamp=1,
            born_host=HOST,
        )
        for i in range(count)
    ]


class Timer:
    """Wall and CPU time of a block (CPU time is steadier on a shared machine)."""

    def __init__(self, label: str, count: int = 0) -> None:
        self.label = label
        self.count = count

    def __enter__(self) -> Timer:
        self.wall = time.perf_counter()
        self.cpu = time.process_time()
        return self

    def __exit__(self, *_: object) -> None:
        wall = time.perf_counter() - self.wall
        cpu = time.process_time() - self.cpu
        n = self.count
        print(
            f"{self.label:<44} {n / wall:>10,.0f} msgs/s wall {n / cpu:>10,.0f} msgs/s cpu"
            f"  ({cpu * 1e6 / n:.2f} us/msg cpu)"
        )


def baseline(total: int) -> None:
    """The floor: encode_into records into a bytearray, nothing else."""
    buf = bytearray(total * 300)
    pos = 0
    batch = messages(total)
    with Timer("baseline: record.encode_into alone", total):
        for m in batch:
            pos += record.encode_into(
                buf, pos, topic=b"BenchTopic", queue_id=m.queue_id, flag=0, queue_offset=0,
                physical_offset=pos, sys_flag=0, born_timestamp=1, born_host=HOST,
                store_timestamp=2, store_host=HOST, reconsume_times=0,
                prepared_transaction_offset=0, body=m.body, properties=m.properties,
            )  # fmt: skip


async def main(total: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = StoreConfig(
            store_path_root_dir=Path(tmp) / "store", mapped_file_size_commit_log=256 << 20
        )
        store = MessageStore(config)
        await store.start()
        baseline(total)
        batch = messages(total)
        with Timer("put_messages, batches of 32 (async flush)", total):
            for i in range(0, total, 32):
                store.put_messages(batch[i : i + 32])

        singles = messages(total // 4, total)
        with Timer("put_message, one by one (async flush)", len(singles)):
            for message in singles:
                store.put_message(message)

        with Timer("get_messages, 32 per pull", total + len(singles)):
            for queue_id in range(8):
                offset = 0
                while True:
                    got = store.get_messages("BenchTopic", queue_id, offset, 32)
                    if not got.found:
                        break
                    offset = got.next_begin_offset
        await store.shutdown()

        sync = dataclasses.replace(
            config,
            store_path_root_dir=Path(tmp) / "sync",
            flush_disk_type=FlushDiskType.SYNC_FLUSH,
        )
        store = MessageStore(sync)
        await store.start()
        flushes = store.flush_count
        per_sender = total // 4 // 64

        async def sender(n: int) -> None:
            for message in messages(per_sender, n * per_sender):
                await store.put_message(message).wait()

        with Timer("SYNC_FLUSH, 64 concurrent senders", 64 * per_sender):
            await asyncio.gather(*(sender(n) for n in range(64)))
        print(f"  {store.flush_count - flushes} group-commit flushes for {64 * per_sender} sends")
        await store.shutdown()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000))
