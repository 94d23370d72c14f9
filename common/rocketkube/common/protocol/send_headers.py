"""Custom headers of SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320).

One request model, two spellings on the wire (docs/protocol.md §4.2)::

    V2  V1 name                 type     V2  V1 name              type
    a   producerGroup           str      h   flag                 int
    b   topic                   str      i   properties           str, optional
    c   defaultTopic            str      j   reconsumeTimes       int, optional
    d   defaultTopicQueueNums   int      k   unitMode             bool, optional
    e   queueId                 int      l   maxReconsumeTimes    int, optional
    f   sysFlag                 int      m   batch                bool, optional
    g   bornTimestamp           long     n   bname                ignored (4.9.5+)

:class:`SendMessageRequestHeader` speaks the V1 names (code 10),
:class:`SendMessageRequestHeaderV2` the short keys (codes 310 and 320); the V2 class is a
subclass, so both decode into one model. Both go through :func:`parse_send_header`, a
hand-written parser that the broker's hot path calls directly (it returns a cheap
:class:`SendFields` tuple), with two deliberate leniencies:

- an optional field sent as ``""`` (Go sends empty strings for unset fields) is absent;
- ``batch`` is true for ``"true"`` (any case) **and** for ``"1"``, which the C++ 2.x client
  sends for its batches. Java's ``Boolean.parseBoolean`` reads ``"1"`` as false and stores
  the whole encoded batch as one message, which is never what that client meant.

The response (:class:`SendMessageResponseHeader`) travels with two more extFields the
broker adds to every send response, errors included: ``MSG_REGION`` and ``TRACE_ON``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, NamedTuple, Self

from rocketkube.common import errors
from rocketkube.common.remoting.header import CommandHeader, wire

__all__ = [
    "MSG_REGION",
    "TRACE_ON",
    "SendFields",
    "SendHeaderTemplate",
    "SendMessageRequestHeader",
    "SendMessageRequestHeaderV2",
    "SendMessageResponseHeader",
    "encode_send_header_v2",
    "parse_send_header",
]

MSG_REGION: Final = "MSG_REGION"
"""Response extField: the broker's ``regionId``."""
TRACE_ON: Final = "TRACE_ON"
"""Response extField: ``"true"``/``"false"``, whether the broker has tracing on."""

# Wire names in field order: a..m. ``n`` (bname) is ignored.
_V1_KEYS: Final = (
    "producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
    "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes",
    "batch",
)  # fmt: skip
_V2_KEYS: Final = tuple("abcdefghijklm")
_REQUIRED: Final = 8
_INT_FIELDS: Final = frozenset({3, 4, 5, 6, 7, 9, 11})
_LONG_FIELD: Final = 6  # bornTimestamp is a Java long, the other integers Java ints
_INT_MIN: Final = -(1 << 31)
_INT_MAX: Final = (1 << 31) - 1
_LONG_MIN: Final = -(1 << 63)
_LONG_MAX: Final = (1 << 63) - 1


class SendFields(NamedTuple):
    """The request header's values, as the broker's hot path reads them.

    A named tuple, made as cheaply as a tuple on the hot path; a frozen dataclass would
    call ``object.__setattr__`` once per field.
    """

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: int
    flag: int
    properties: str | None
    reconsume_times: int | None
    unit_mode: bool | None
    max_reconsume_times: int | None
    batch: bool | None


_new_fields = tuple.__new__


def parse_send_header(ext: Mapping[str, str], *, v2: bool) -> SendFields:
    """Read a send request's extFields (V2 short keys or V1 names); HeaderError if bad.

    An integer outside its Java type's range (``int``, ``long`` for ``bornTimestamp``) is
    as malformed as one that is not a number: Java's header decoding refuses both, and the
    store could not write it into a record."""
    ka, kb, kc, kd, ke, kf, kg, kh, ki, kj, kk, kl, km = keys = _V2_KEYS if v2 else _V1_KEYS
    get = ext.get
    try:
        j = get(kj)
        k = get(kk)
        ll = get(kl)
        m = get(km)
        fields = _new_fields(
            SendFields,
            (
                ext[ka],
                ext[kb],
                ext[kc],
                int(ext[kd]),
                int(ext[ke]),
                int(ext[kf]),
                int(ext[kg]),
                int(ext[kh]),
                get(ki),
                int(j) if j else None,
                (k.lower() == "true") if k else None,
                int(ll) if ll else None,
                (m == "true" or m == "1" or m.lower() == "true") if m else None,
            ),
        )
    except (KeyError, ValueError):
        raise _error(ext, keys) from None
    problem = _range_error(fields, keys)
    if problem is not None:
        raise problem
    return fields


def _range_error(fields: SendFields, keys: tuple[str, ...]) -> errors.HeaderError | None:
    """The HeaderError naming the first integer field outside its Java type's range."""
    integers = (
        (3, fields.default_topic_queue_nums), (4, fields.queue_id), (5, fields.sys_flag),
        (6, fields.born_timestamp), (7, fields.flag), (9, fields.reconsume_times),
        (11, fields.max_reconsume_times),
    )  # fmt: skip
    for position, value in integers:
        low, high = (_LONG_MIN, _LONG_MAX) if position == _LONG_FIELD else (_INT_MIN, _INT_MAX)
        if value is not None and not low <= value <= high:
            kind = "long" if position == _LONG_FIELD else "int"
            return errors.HeaderError(
                f"the custom field <{keys[position]}> is out of the range of a Java {kind}: {value}"
            )
    return None


def _error(ext: Mapping[str, str], keys: tuple[str, ...]) -> errors.HeaderError:
    """The HeaderError naming the first missing or malformed field."""
    for position, key in enumerate(keys):
        text = ext.get(key)
        if text is None or (not text and position >= _REQUIRED):
            if position < _REQUIRED:
                return errors.HeaderError(f"the custom field <{key}> is null")
            continue
        if position in _INT_FIELDS:
            try:
                int(text)
            except ValueError:
                return errors.HeaderError(f"the custom field <{key}> has an invalid value {text!r}")
    return errors.HeaderError("malformed send message header")  # pragma: no cover


@dataclass(frozen=True, slots=True)
class SendMessageRequestHeader(CommandHeader):
    """SEND_MESSAGE's header with V1 (long) names; the model V2 headers decode into too."""

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    """Negative: the broker picks a queue."""
    sys_flag: int
    born_timestamp: int
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool | None = None
    max_reconsume_times: int | None = None
    batch: bool | None = None

    @classmethod
    def decode(cls, ext: Mapping[str, str]) -> Self:
        return cls(*parse_send_header(ext, v2=False))


@dataclass(frozen=True, slots=True)
class SendMessageRequestHeaderV2(SendMessageRequestHeader):
    """The same header under the short keys ``a``..``m`` (SEND_MESSAGE_V2, batches)."""

    producer_group: str = field(metadata=wire("a"))
    topic: str = field(metadata=wire("b"))
    default_topic: str = field(metadata=wire("c"))
    default_topic_queue_nums: int = field(metadata=wire("d"))
    queue_id: int = field(metadata=wire("e"))
    sys_flag: int = field(metadata=wire("f"))
    born_timestamp: int = field(metadata=wire("g"))
    flag: int = field(metadata=wire("h"))
    properties: str | None = field(default=None, metadata=wire("i"))
    reconsume_times: int | None = field(default=None, metadata=wire("j"))
    unit_mode: bool | None = field(default=None, metadata=wire("k"))
    max_reconsume_times: int | None = field(default=None, metadata=wire("l"))
    batch: bool | None = field(default=None, metadata=wire("m"))

    @classmethod
    def decode(cls, ext: Mapping[str, str]) -> Self:
        return cls(*parse_send_header(ext, v2=True))

    def encode(self) -> dict[str, str]:
        return encode_send_header_v2(self)


def encode_send_header_v2(header: SendFields | SendMessageRequestHeader) -> dict[str, str]:
    """The short-key extFields of a send request (what ``SendMessageRequestHeaderV2.encode``
    gives), from the header or from a :class:`SendFields` tuple.

    Written out by hand, as :func:`parse_send_header` is: the generic encoder costs a few
    microseconds per send, and the producer pays them on every message.
    """
    ext = {
        "a": header.producer_group,
        "b": header.topic,
        "c": header.default_topic,
        "d": str(header.default_topic_queue_nums),
        "e": str(header.queue_id),
        "f": str(header.sys_flag),
        "g": str(header.born_timestamp),
        "h": str(header.flag),
    }
    if header.properties is not None:
        ext["i"] = header.properties
    if header.reconsume_times is not None:
        ext["j"] = str(header.reconsume_times)
    if header.unit_mode is not None:
        ext["k"] = "true" if header.unit_mode else "false"
    if header.max_reconsume_times is not None:
        ext["l"] = str(header.max_reconsume_times)
    if header.batch is not None:
        ext["m"] = "true" if header.batch else "false"
    return ext


class SendHeaderTemplate:
    """The V2 extFields of one producer's sends, its fixed fields encoded once.

    :meth:`ext` gives what :func:`encode_send_header_v2` gives for a :class:`SendFields`
    of this producer group and default topic, with ``reconsumeTimes`` 0 and ``unitMode``
    false (what Java's producer sends), ``maxReconsumeTimes`` absent and ``batch`` true
    only for batches; in the same key order. A producer encodes one header per message:
    skipping the intermediate tuple and the constant fields' conversions halves its cost.
    """

    __slots__ = ("_default_topic", "_group", "_queue_nums")

    def __init__(self, producer_group: str, default_topic: str, default_topic_queue_nums: int):
        self._group = producer_group
        self._default_topic = default_topic
        self._queue_nums = str(default_topic_queue_nums)

    def ext(
        self,
        topic: str,
        queue_id: int,
        sys_flag: int,
        born_timestamp: int,
        flag: int,
        properties: str | None,
        *,
        batch: bool = False,
    ) -> dict[str, str]:
        """The extFields of a send of ``topic`` to ``queue_id`` (``properties`` ``None`` or
        empty: no ``i``)."""
        ext = {
            "a": self._group,
            "b": topic,
            "c": self._default_topic,
            "d": self._queue_nums,
            "e": str(queue_id),
            "f": str(sys_flag),
            "g": str(born_timestamp),
            "h": str(flag),
        }
        if properties:
            ext["i"] = properties
        ext["j"] = "0"
        ext["k"] = "false"
        if batch:
            ext["m"] = "true"
        return ext


@dataclass(frozen=True, slots=True)
class SendMessageResponseHeader(CommandHeader):
    """What a send answers; ``msgId`` is the offset id, comma-joined ids for a batch."""

    msg_id: str
    queue_id: int
    queue_offset: int
    transaction_id: str | None = None
