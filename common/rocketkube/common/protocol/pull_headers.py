"""Custom headers of PULL_MESSAGE and of the consumer offset requests
(docs/protocol.md §5.1, §6.1).

Field names are Java's (``PullMessageRequestHeader``, ``QueryConsumerOffsetRequestHeader``,
``GetMaxOffsetRequestHeader``...); required fields are Java's ``@CFNotNull`` ones. Shared by
the broker (decoding requests) and the Python SDK (encoding them).
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketkube.common.remoting.header import CommandHeader

__all__ = [
    "GetEarliestMsgStoretimeRequestHeader",
    "GetEarliestMsgStoretimeResponseHeader",
    "GetMaxOffsetRequestHeader",
    "GetMaxOffsetResponseHeader",
    "GetMinOffsetRequestHeader",
    "GetMinOffsetResponseHeader",
    "PullMessageRequestHeader",
    "PullMessageResponseHeader",
    "QueryConsumerOffsetRequestHeader",
    "QueryConsumerOffsetResponseHeader",
    "SearchOffsetRequestHeader",
    "SearchOffsetResponseHeader",
    "UpdateConsumerOffsetRequestHeader",
]


# -- PULL_MESSAGE (11) -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PullMessageRequestHeader(CommandHeader):
    """``sys_flag`` holds the pull bits of :mod:`rocketkube.common.message.sysflag`.

    ``sub_version`` is required in Java; it defaults to 0 here so a client that leaves it
    out still pulls (Go always sends ``"0"``).
    """

    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int
    sys_flag: int
    commit_offset: int
    suspend_timeout_millis: int
    sub_version: int = 0
    subscription: str | None = None
    expression_type: str | None = None


@dataclass(frozen=True, slots=True)
class PullMessageResponseHeader(CommandHeader):
    """Every field is always sent: clients unbox all four on every pull status."""

    suggest_which_broker_id: int
    next_begin_offset: int
    min_offset: int
    max_offset: int


# -- offsets (14, 15, 29-32) ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueryConsumerOffsetRequestHeader(CommandHeader):
    consumer_group: str
    topic: str
    queue_id: int


@dataclass(frozen=True, slots=True)
class QueryConsumerOffsetResponseHeader(CommandHeader):
    """No offset on QUERY_NOT_FOUND (22)."""

    offset: int | None = None


@dataclass(frozen=True, slots=True)
class UpdateConsumerOffsetRequestHeader(CommandHeader):
    consumer_group: str
    topic: str
    queue_id: int
    commit_offset: int


@dataclass(frozen=True, slots=True)
class GetMaxOffsetRequestHeader(CommandHeader):
    topic: str
    queue_id: int


@dataclass(frozen=True, slots=True)
class GetMaxOffsetResponseHeader(CommandHeader):
    offset: int


@dataclass(frozen=True, slots=True)
class GetMinOffsetRequestHeader(CommandHeader):
    topic: str
    queue_id: int


@dataclass(frozen=True, slots=True)
class GetMinOffsetResponseHeader(CommandHeader):
    offset: int


@dataclass(frozen=True, slots=True)
class SearchOffsetRequestHeader(CommandHeader):
    """SEARCH_OFFSET_BY_TIMESTAMP; ``timestamp`` is epoch milliseconds."""

    topic: str
    queue_id: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class SearchOffsetResponseHeader(CommandHeader):
    offset: int


@dataclass(frozen=True, slots=True)
class GetEarliestMsgStoretimeRequestHeader(CommandHeader):
    topic: str
    queue_id: int


@dataclass(frozen=True, slots=True)
class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    """-1 when the queue holds no message."""

    timestamp: int
