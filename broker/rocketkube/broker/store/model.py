"""What crosses the store's boundary: the message going in and the results coming out.

- :class:`InnerMessage`: a message as the broker hands it to the store (Java
  ``MessageExtBrokerInner``): properties already encoded, hosts already packed, so the
  append path only copies bytes.
- :class:`PutStatus` / :class:`PutResult` / :class:`AppendResult`: the outcome of an append.
- :class:`FlushTicket`: an awaitable for the group-commit flush covering an append.
- :class:`GetStatus` / :class:`GetResult`: the outcome of a consume queue read (docs/store.md §10).
- :class:`QueryResult`: the outcome of a key query.

Statuses are ``StrEnum`` named as in Java, so ``str(status)`` is the pull ``remark``.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeAlias

__all__ = [
    "AppendResult",
    "ArrivalListener",
    "DispatchHints",
    "FlushTicket",
    "GetResult",
    "GetStatus",
    "InnerMessage",
    "PutResult",
    "PutStatus",
    "QueryResult",
    "RecordFilter",
    "TagFilter",
]

_IPV4_ANY = bytes(8)

TagFilter: TypeAlias = Callable[[int], bool]
"""Decides from a consume queue tags code whether an entry matches a subscription."""

RecordFilter: TypeAlias = Callable[[memoryview], bool]
"""Decides from a stored record (its bytes) whether it matches a subscription: property
filters, called only for entries the tag filter kept (Java ``isMatchedByCommitLog``)."""

ArrivalListener: TypeAlias = Callable[[str, int, int, list[int]], None]
"""Called once per append batch and queue: (topic, queue_id, new max offset, tags codes)."""


class DispatchHints(NamedTuple):
    """Properties the dispatcher needs, as the stored properties hold them (None: absent)."""

    tags: str | None
    keys: str | None
    uniq_key: str | None


class InnerMessage(NamedTuple):
    """One message to append.

    ``properties`` is the UTF-8 properties string (docs/protocol.md §9.2) as it will be
    stored; TAGS, KEYS, UNIQ_KEY and DELAY are read from it for the consume queue and the
    index, unless ``hints`` gives them. Hosts are packed (``ids.pack_host``: 8 bytes IPv4, 20 IPv6).

    A named tuple: plain data that the store's compiled records module reads by position.
    """

    topic: str
    queue_id: int
    body: bytes | bytearray | memoryview
    properties: bytes = b""
    flag: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: bytes = _IPV4_ANY
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    hints: DispatchHints | None = None
    """TAGS, KEYS and UNIQ_KEY when the caller has ``properties`` decoded already (the
    send path): the dispatcher then need not search the bytes for them."""


class PutStatus(enum.StrEnum):
    """Outcome of an append (Java ``PutMessageStatus``)."""

    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    """Appended, but the SYNC_FLUSH flush did not finish within ``syncFlushTimeout``."""
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    """The store is closed, or the disk is above ``diskSpaceWarningLevelRatio``."""
    CREATE_MAPPED_FILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    """A new commit log segment could not be created (disk full, permissions)."""
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    """Body above ``maxMessageSize``, topic above 127 bytes, or record above a segment."""
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    """Properties above 32767 bytes."""
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class AppendResult(NamedTuple):
    """Where one message went."""

    physical_offset: int
    size: int
    queue_offset: int
    msg_id: str
    """The offset message id (store host + physical offset, uppercase hex)."""
    store_timestamp: int


class FlushTicket:
    """Awaits the group-commit flush covering an append; gives PUT_OK or FLUSH_DISK_TIMEOUT.

    Many appends share one underlying future; awaiting goes through ``asyncio.shield`` so a
    cancelled waiter does not cancel the others. Never awaiting it is fine.
    """

    __slots__ = ("_future",)

    def __init__(self, future: asyncio.Future[PutStatus]) -> None:
        self._future = future

    def done(self) -> bool:
        """Whether the flush finished (or timed out)."""
        return self._future.done()

    def __await__(self) -> Generator[Any, None, PutStatus]:
        return asyncio.shield(self._future).__await__()

    def add_done_callback(self, callback: Callable[[PutStatus], None]) -> None:
        """Call ``callback(status)`` when the flush is done: cheaper than a task per waiter."""

        def done(future: asyncio.Future[PutStatus]) -> None:
            if future.cancelled():
                callback(PutStatus.SERVICE_NOT_AVAILABLE)
            elif future.exception() is not None:
                callback(PutStatus.UNKNOWN_ERROR)
            else:
                callback(future.result())

        self._future.add_done_callback(done)


@dataclass(slots=True)
class PutResult:
    """Outcome of ``put_message``/``put_messages``: one :class:`AppendResult` per message.

    With SYNC_FLUSH, ``flush`` is set when the append succeeded; ``await wait()`` for the
    final status.
    """

    status: PutStatus
    appended: list[AppendResult] = field(default_factory=list)
    flush: FlushTicket | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status is PutStatus.PUT_OK

    async def wait(self) -> PutStatus:
        """The status once the flush (if any) is done: PUT_OK or FLUSH_DISK_TIMEOUT."""
        if self.flush is not None and self.status is PutStatus.PUT_OK:
            self.status = await self.flush
        return self.status


class GetStatus(enum.StrEnum):
    """Outcome of a consume queue read (Java ``GetMessageStatus``)."""

    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


@dataclass(slots=True)
class GetResult:
    """Outcome of ``get_messages``.

    ``buffers`` are zero-copy memoryviews of the mapped commit log holding whole records
    back to back (contiguous records share one view); their concatenation is a pull body.
    Release them (drop the references) once written: a segment's mapping is closed only
    when no view of it is alive.
    """

    status: GetStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    buffers: list[memoryview] = field(default_factory=list)
    message_count: int = 0
    total_size: int = 0
    queue_offsets: list[int] = field(default_factory=list)
    """The queue offset of each returned message."""
    suggest_pulling_from_slave: bool = False
    """The last entry read lies further behind the log's end than the memory
    ``accessMessageInMemoryMaxRatio`` allows: a slow consumer, better served by a slave."""

    @property
    def found(self) -> bool:
        return self.status is GetStatus.FOUND

    def body(self) -> bytes:
        """The records as one bytes object (a copy; prefer ``buffers`` on the hot path)."""
        return b"".join(self.buffers)


@dataclass(slots=True)
class QueryResult:
    """Outcome of ``query_by_key``: matching records, newest first."""

    buffers: list[memoryview] = field(default_factory=list)
    physical_offsets: list[int] = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phy_offset: int = 0

    def body(self) -> bytes:
        return b"".join(self.buffers)
