"""Delayed delivery (Java ``ScheduleMessageService``): messages parked in the schedule
topic go to their real topic once their delay has passed.

A send with ``DELAY=n`` (and a send-back) is stored in ``SCHEDULE_TOPIC_XXXX`` queue
``n - 1`` with ``REAL_TOPIC``/``REAL_QID`` properties; the dispatcher writes the delivery
time (store time + the level's delay) as the entry's consume queue tags code. Per level::

    offset (delayOffset.json) --read a bounded batch--> entries whose time has come
        -> re-put to REAL_TOPIC/REAL_QID with DELAY removed (REAL_* kept, body, flag,
           sysFlag, born time/host, reconsume times and every other property as stored;
           the tags code is TAGS' hash again)  -> offset + 1
    first entry not due yet -> one timer until its time; nothing left -> idle until the
    store reports an arrival in that queue (arrival listener) -> timer at its time

Each level is a chain of loop callbacks, never a polling loop: a round delivers at most
``maxTransferCountOnMessageInMemory`` messages and yields to the loop before the next.
A put that fails for a reason that may pass (disk full, store closing) is retried after
10 s from the same offset; a message the store can never take (too large) is skipped.

Offsets are ``{"offsetTable":{1:0,2:5}}`` (level -> next consume queue offset, fastjson
bare int keys, Java's format) in ``<storePathRootDir>/config/delayOffset.json``, written
atomically every ``flushDelayOffsetInterval`` when changed and at stop. Delivery is
at-least-once: after a crash, messages delivered since the last write go again; after a
clean stop nothing does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from rocketkube.broker import settings
from rocketkube.broker.store import GetResult, GetStatus, InnerMessage, MessageStore, PutStatus
from rocketkube.common import atomic_file, errors, fastjson
from rocketkube.common.message import ids, record
from rocketkube.common.message.model import MessageExt
from rocketkube.common.message.properties import PropertyName, encode_properties

__all__ = [
    "RETRY_AFTER_FAILURE_MS",
    "SCHEDULE_TOPIC",
    "DelayCollector",
    "ScheduleService",
    "decode_offsets",
    "deliver_time",
    "encode_offsets",
]

log = logging.getLogger(__name__)

SCHEDULE_TOPIC: Final = "SCHEDULE_TOPIC_XXXX"
"""``topics.SCHEDULE_TOPIC``, spelled here: delayed delivery and the topic manager are
independent siblings in the broker's layers."""
RETRY_AFTER_FAILURE_MS: Final = 10_000
"""How long a level waits after a put failed (Java ``DELAY_FOR_A_PERIOD``)."""

_NEVER_STORABLE: Final = frozenset({PutStatus.MESSAGE_ILLEGAL, PutStatus.PROPERTIES_SIZE_EXCEEDED})
_CAUGHT_UP: Final = frozenset({GetStatus.NO_MATCHED_LOGIC_QUEUE, GetStatus.OFFSET_OVERFLOW_ONE})


# -- pure parts ------------------------------------------------------------------------------


def deliver_time(tags_code: int, now_ms: int, delay_ms: int) -> int:
    """When an entry is due: its tags code, or now when that lies beyond now + the level's
    delay (the clock went back, or the level got shorter; Java
    ``correctDeliverTimestamp``)."""
    return now_ms if tags_code > now_ms + delay_ms else tags_code


def encode_offsets(offsets: Mapping[int, int]) -> bytes:
    """``delayOffset.json`` content: ``{"offsetTable":{1:0,2:5}}``."""
    table = {level: offsets[level] for level in sorted(offsets)}
    return fastjson.dumps({"offsetTable": table}, bare_int_keys=True)


def decode_offsets(text: str | bytes) -> dict[int, int]:
    """Parse ``delayOffset.json`` (bare or quoted level keys); ``ValueError`` if malformed."""
    data = fastjson.loads(text)
    if not isinstance(data, dict):
        raise ValueError("delayOffset.json is not a JSON object")
    table = data.get("offsetTable") or {}
    if not isinstance(table, dict):
        raise ValueError("delayOffset.json: offsetTable is not an object")
    return {int(level): int(offset) for level, offset in table.items()}


class _DueGate:
    """The tag filter of one round: admits entries while they are due, then none.

    The store calls it for each live entry in queue order, so the admitted entries are
    a prefix of the queue and the first refused one says when to look again.
    """

    __slots__ = ("delay_ms", "next_due", "now_ms")

    def __init__(self, now_ms: int, delay_ms: int) -> None:
        self.now_ms = now_ms
        self.delay_ms = delay_ms
        self.next_due: int | None = None

    def __call__(self, tags_code: int) -> bool:
        if self.next_due is not None:
            return False
        due = deliver_time(tags_code, self.now_ms, self.delay_ms)
        if due <= self.now_ms:
            return True
        self.next_due = due
        return False


# -- the service ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Level:
    level: int
    delay_ms: int
    timer: asyncio.TimerHandle | None = None
    due_ms: int | None = None
    """When the armed timer fires (epoch ms); ``None`` while idle."""


class ScheduleService:
    """Delivers the schedule topic's messages when due; one per broker (masters only)."""

    def __init__(
        self,
        store: MessageStore,
        path: Path,
        delay_levels: str,
        clock: Callable[[], int],
        *,
        batch_size: int = 32,
    ) -> None:
        self._store = store
        self.saver = atomic_file.BackgroundSaver(path, lambda: encode_offsets(self.offsets))
        self._clock = clock
        self._batch_size = batch_size
        self.delays_ms = settings.parse_delay_levels(delay_levels)
        """The delay of each level (index 0 is level 1)."""
        self._levels = {n: _Level(n, delay) for n, delay in enumerate(self.delays_ms, start=1)}
        self.offsets: dict[int, int] = {}
        """Level -> next schedule queue offset to deliver (levels never used are absent)."""
        self.dirty = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listening = False

    # -- life cycle --------------------------------------------------------------------------

    def load(self) -> None:
        """Read ``delayOffset.json`` (or its ``.bak``); a missing file means all zero."""
        loaded = atomic_file.load_text(self.saver.path, decode_offsets)
        if loaded is not None:
            self.offsets = loaded
            log.info("loaded delay offsets %s", loaded)

    def replace_offsets(self, master: dict[int, int]) -> None:
        """A slave takes its master's offsets (it delivers nothing itself)."""
        if master != self.offsets:
            self.offsets = dict(master)
            self.dirty = True

    def start(self) -> None:
        """Start delivering: look at every level now, then wait on timers and arrivals."""
        if self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        if not self._listening:
            self._store.add_arrival_listener(self._on_arrival)
            self._listening = True
        for level in self._levels.values():
            self._arm(level, self._clock())

    async def stop(self) -> None:
        """Stop delivering and write changed offsets (before the store shuts down)."""
        self._loop = None
        for level in self._levels.values():
            if level.timer is not None:
                level.timer.cancel()
            level.timer = None
            level.due_ms = None
        self.persist_if_dirty()
        await self.saver.flush()

    def persist_if_dirty(self) -> None:
        """Start writing the offsets (in a worker thread) if they changed."""
        if self.dirty:
            self.dirty = False
            self.saver.changed()

    def encode(self) -> bytes:
        """The offsets as ``delayOffset.json`` holds them (GET_ALL_DELAY_OFFSET)."""
        return encode_offsets(self.offsets)

    def pending(self) -> dict[int, int]:
        """Level -> messages waiting in its schedule queue."""
        store = self._store
        return {
            n: max(0, store.max_offset(SCHEDULE_TOPIC, n - 1) - self.offsets.get(n, 0))
            for n in self._levels
        }

    # -- timers -------------------------------------------------------------------------------

    def _arm(self, level: _Level, due_ms: int) -> None:
        loop = self._loop
        if loop is None:
            return
        if level.timer is not None:
            level.timer.cancel()
        wait = max(0, due_ms - self._clock()) / 1000
        level.due_ms = due_ms
        level.timer = loop.call_later(wait, self._round, level)

    def _on_arrival(self, topic: str, queue_id: int, max_offset: int, codes: list[int]) -> None:
        """Store listener: a message landed in a schedule queue; wake its level in time."""
        if topic != SCHEDULE_TOPIC or not codes or self._loop is None:
            return
        level = self._levels.get(queue_id + 1)
        if level is None:
            return
        self._wake(level, deliver_time(min(codes), self._clock(), level.delay_ms))

    def _wake(self, level: _Level, due_ms: int) -> None:
        """Make sure the level runs by ``due_ms`` (an earlier armed timer stays)."""
        if level.due_ms is None or due_ms < level.due_ms:
            self._arm(level, due_ms)

    def _round(self, level: _Level) -> None:
        level.timer = None
        level.due_ms = None
        if self._loop is None:
            return
        try:
            wait = self._deliver(level)
        except Exception:
            log.exception("delay level %d: delivery round failed", level.level)
            wait = RETRY_AFTER_FAILURE_MS
        if wait is not None:
            self._wake(level, self._clock() + wait)

    # -- delivery ------------------------------------------------------------------------------

    def _deliver(self, level: _Level) -> int | None:
        """One bounded round; returns ms until the next round, or ``None`` to idle."""
        n = level.level
        offset = self.offsets.get(n, 0)
        now = self._clock()
        gate = _DueGate(now, level.delay_ms)
        got = self._store.get_messages(SCHEDULE_TOPIC, n - 1, offset, self._batch_size, gate)
        status = got.status
        if status in _CAUGHT_UP:
            return None
        if status in (GetStatus.NO_MESSAGE_IN_QUEUE, GetStatus.OFFSET_OVERFLOW_BADLY):
            if offset != got.max_offset:
                log.warning("delay level %d: offset %d beyond the queue (max %d), corrected",
                            n, offset, got.max_offset)  # fmt: skip
                self._advance(n, got.max_offset)
            return None
        if status in (GetStatus.OFFSET_TOO_SMALL, GetStatus.OFFSET_FOUND_NULL):
            self._advance(n, got.next_begin_offset)
            return 0
        failed = self._deliver_found(n, got)
        if failed is not None:
            return failed
        if gate.next_due is not None:
            return max(0, gate.next_due - now)
        # Every entry scanned was delivered or dead (blank, removed): skip past all.
        self._advance(n, max(self.offsets.get(n, 0), got.next_begin_offset))
        return 0 if self.offsets[n] < got.max_offset else None

    def _deliver_found(self, n: int, got: GetResult) -> int | None:
        """Re-put the due messages in order; ms to wait when a put must be retried."""
        queue_offsets = iter(got.queue_offsets)
        for message in _records(got.buffers):
            queue_offset = next(queue_offsets)
            inner = _unparked(message)
            if inner is None:
                log.error("delay level %d: message at %d has no valid REAL_TOPIC/REAL_QID, "
                          "dropped", n, queue_offset)  # fmt: skip
            else:
                status = self._store.put_messages((inner,)).status
                if status in _NEVER_STORABLE:
                    log.error("delay level %d: message at %d refused by the store (%s), "
                              "dropped", n, queue_offset, status)  # fmt: skip
                elif status is not PutStatus.PUT_OK:
                    log.warning("delay level %d: put failed (%s), retry in %d ms",
                                n, status, RETRY_AFTER_FAILURE_MS)  # fmt: skip
                    return RETRY_AFTER_FAILURE_MS
            self._advance(n, queue_offset + 1)
        return None

    def _advance(self, n: int, offset: int) -> None:
        if self.offsets.get(n) != offset:
            self.offsets[n] = offset
            self.dirty = True


def _records(buffers: list[memoryview]) -> Iterator[MessageExt]:
    for buffer in buffers:
        yield from record.iter_records(buffer)


def _unparked(message: MessageExt) -> InnerMessage | None:
    """The message as it goes to its real queue, or ``None`` when it names none."""
    properties = dict(message.properties)
    properties.pop(PropertyName.DELAY, None)
    topic = properties.get(PropertyName.REAL_TOPIC)
    try:
        queue_id = int(properties.get(PropertyName.REAL_QID, ""))
        born_host = ids.pack_host(*ids.split_host_port(message.born_host))
    except (ValueError, errors.MessageFormatError):
        return None
    if not topic or queue_id < 0:
        return None
    return InnerMessage(
        topic,
        queue_id,
        message.body,
        encode_properties(properties).encode("utf-8", "replace"),
        message.flag,
        message.sys_flag,
        message.born_timestamp,
        born_host,
        message.reconsume_times,
    )


class DelayCollector(Collector):
    """``rocketkube_broker_delay_pending{level}``: messages waiting per delay level."""

    def __init__(self, service: ScheduleService) -> None:
        self._service = service

    def collect(self) -> Iterator[Any]:
        gauge = GaugeMetricFamily(
            "rocketkube_broker_delay_pending",
            "Delayed messages not yet delivered, per delay level",
            labels=["level"],
        )
        for level, count in self._service.pending().items():
            gauge.add_metric([str(level)], float(count))
        yield gauge
