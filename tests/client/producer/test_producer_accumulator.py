"""The auto-batching accumulator on its own: grouping, size and delay cuts, the hold limit."""

from __future__ import annotations

import asyncio

from rocketkube.client.producer.accumulator import Accumulator, Batch
from rocketkube.common.message.batch import BatchItem, item_size

ITEM = BatchItem(0, b"x" * 78, "UNIQ_KEY\x01id\x02")  # 22 + 78 + 12 = 112 batch bytes
SIZE = 112

Flushed = list[Batch[str, int]]


def _accumulator(
    flushed: Flushed, *, delay: float = 60.0, max_bytes: int = 10 * SIZE, total: int = 10**6
) -> Accumulator[str, int]:
    return Accumulator(flushed.append, max_delay=delay, max_bytes=max_bytes, total_max_bytes=total)


def test_item_size_counts_utf8_properties_and_refuses_long_ones() -> None:
    assert item_size(ITEM) == SIZE
    assert item_size(BatchItem(0, b"ab", "é")) == 22 + 2 + 2
    assert item_size(BatchItem(0, b"", "p" * 0x8000)) is None


async def test_groups_by_key_in_arrival_order_and_cuts_at_max_bytes() -> None:
    flushed: Flushed = []
    acc = _accumulator(flushed, max_bytes=3 * SIZE)
    futures = [acc.add("a", ITEM, f"a{i}") for i in range(4)]
    other = acc.add("b", ITEM, "b0")
    assert all(f is not None for f in [*futures, other])
    # The third message filled the batch exactly: flushed at once, the fourth starts anew.
    assert [b.msg_ids for b in flushed] == [["a0", "a1", "a2"]]
    assert flushed[0].futures == futures[:3]
    assert flushed[0].size == 3 * SIZE
    acc.flush_all()
    assert [b.msg_ids for b in flushed] == [["a0", "a1", "a2"], ["a3"], ["b0"]]
    assert [b.key for b in flushed] == ["a", "a", "b"]


async def test_a_message_that_would_overflow_starts_the_next_batch() -> None:
    flushed: Flushed = []
    acc = _accumulator(flushed, max_bytes=2 * SIZE + 50)
    for i in range(3):
        acc.add("k", ITEM, f"m{i}")
    assert [b.msg_ids for b in flushed] == [["m0", "m1"]]


async def test_the_delay_flushes_a_lone_message() -> None:
    flushed: Flushed = []
    ready = asyncio.Event()

    def flush(batch: Batch[str, int]) -> None:
        flushed.append(batch)
        ready.set()

    acc: Accumulator[str, int] = Accumulator(
        flush, max_delay=0.01, max_bytes=10 * SIZE, total_max_bytes=10**6
    )
    acc.add("k", ITEM, "only")
    await asyncio.wait_for(ready.wait(), 10)
    assert [b.msg_ids for b in flushed] == [["only"]]
    acc.flush_all()  # nothing left to flush
    assert len(flushed) == 1


async def test_too_big_or_over_the_hold_limit_is_declined_until_released() -> None:
    flushed: Flushed = []
    acc = _accumulator(flushed, max_bytes=2 * SIZE, total=3 * SIZE)
    assert acc.add("k", BatchItem(0, b"x" * (2 * SIZE), ""), "big") is None
    for i in range(3):
        assert acc.add("k", ITEM, f"m{i}") is not None
    assert acc.held == 3 * SIZE
    assert acc.add("k", ITEM, "over") is None
    acc.release(flushed[0])
    assert acc.held == SIZE
    assert acc.add("k", ITEM, "again") is not None
