"""Recovery of consume queues with blank entries: a queue's readable start and end never
move past a real entry, wherever blanks stand.

A blank entry ``(0, 0x7FFFFFFF, 0)`` marks a queue offset with no message: the back-filled
start of a queue whose first message came at an offset above 0, or a hole (an offset some
older broker version took for a send it then failed). Recovery binary-searches each file;
a blank in the middle once ended that search early, and a queue of 201 entries with one
hole at 50 lost its first 50 messages on restart.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketkube.broker.store.consume_queue import BLANK_SIZE, ConsumeQueue

UNIT = 20
FILE_ENTRIES = 64


def build(directory: Path, offsets: list[int]) -> None:
    """A queue holding messages at ``offsets`` (blanks elsewhere), message i at commit log
    offset 1000 + 100 x i; closed afterwards."""
    queue = ConsumeQueue(directory, "T", 0, FILE_ENTRIES * UNIT)
    for offset in offsets:
        queue.put(offset, 1000 + 100 * offset, 100, 0)
    queue.files.close()


def reopen(directory: Path, log_end: int = 1 << 40, log_start: int = 0) -> ConsumeQueue:
    """The queue as recovery leaves it: loaded, its tail cut at ``log_end``, its start
    moved to the first entry at or past ``log_start``."""
    queue = ConsumeQueue(directory, "T", 0, FILE_ENTRIES * UNIT)
    queue.files.load()
    queue.truncate_from(log_end)
    queue.correct_min_offset(log_start)
    return queue


def real_offsets(queue: ConsumeQueue) -> list[int]:
    out = []
    for offset in range(queue.min_offset, queue.max_offset):
        entry = queue.entry(offset)
        assert entry is not None
        if entry[1] != BLANK_SIZE:
            out.append(offset)
    return out


@pytest.mark.parametrize("hole", [1, 31, 32, 50, 63, 64, 100, 150, 199])
def test_one_hole_anywhere_keeps_every_message(tmp_path: Path, hole: int) -> None:
    offsets = [i for i in range(201) if i != hole]
    build(tmp_path, offsets)
    queue = reopen(tmp_path)
    assert queue.min_offset == 0
    assert queue.max_offset == 201
    assert real_offsets(queue) == offsets


def test_many_holes_keep_every_message(tmp_path: Path) -> None:
    offsets = [i for i in range(500) if i % 7 != 3]  # a hole in every 7
    build(tmp_path, offsets)
    queue = reopen(tmp_path)
    assert (queue.min_offset, queue.max_offset) == (0, 500)
    assert real_offsets(queue) == offsets


def test_a_back_filled_start_begins_at_the_first_message(tmp_path: Path) -> None:
    offsets = [i for i in range(100, 300) if i != 120]  # back-filled to 100, a hole at 120
    build(tmp_path, offsets)
    queue = reopen(tmp_path)
    assert (queue.min_offset, queue.max_offset) == (100, 300)
    assert real_offsets(queue) == offsets


def test_the_start_moves_only_to_the_first_message_still_in_the_log(tmp_path: Path) -> None:
    """Retention deleted the log below message 80's record: the start is 80, not the
    offset after some later hole."""
    offsets = [i for i in range(200) if i not in (40, 90, 150)]
    build(tmp_path, offsets)
    queue = reopen(tmp_path, log_start=1000 + 100 * 80)
    assert queue.min_offset == 80
    assert real_offsets(queue) == [i for i in offsets if i >= 80]
    queue = reopen(tmp_path, log_start=1000 + 100 * 90)  # its record is a hole's
    assert queue.min_offset == 91


def test_the_tail_is_cut_at_the_log_end_past_a_hole(tmp_path: Path) -> None:
    offsets = [i for i in range(200) if i not in (10, 120, 121)]
    build(tmp_path, offsets)
    queue = reopen(tmp_path, log_end=1000 + 100 * 130)  # records from 130 on were torn
    assert (queue.min_offset, queue.max_offset) == (0, 130)
    assert real_offsets(queue) == [i for i in offsets if i < 130]
    queue = reopen(tmp_path, log_end=1000 + 100 * 121)  # the end falls in the hole
    assert queue.max_offset == 120
