"""A plain send's store message, laid out from the request's header values, properties and
body: the part of the store records module (:mod:`.records`, which exports it, and
``_records.pyx``, which has it compiled) that the send path calls.

A plain send is one whose header integers are each a plain decimal within its Java type,
not a batch, to a topic the caller has checked (:class:`PlainTopic`), with no property the
caller keeps for itself (:class:`PlainRules`); anything else gets None and goes through the
send path's checks (``SendProcessor._check``).
"""

from __future__ import annotations

import re
import time
import typing
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple, TypeAlias

from rocketkube.broker.store import model
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting.command import RemotingCommand

__all__ = ["Check", "PlainRules", "PlainTopic", "PreparedSend", "prepare_plain", "prepare_run"]

_INT_MIN: Final = -(1 << 31)
_INT_MAX: Final = (1 << 31) - 1


class PlainTopic(NamedTuple):
    """A topic that a plain send may go to with no check but its queue: writable, not a
    retry topic. Trusted while the topic's config is ``config``."""

    config: TopicConfig
    queue_limit: int
    """Queue ids below it are valid."""
    sys_flag: int
    """Bits added to every message's sys flag (MULTI_TAGS)."""


class PlainRules(NamedTuple):
    """What a plain send's preparation is told of the broker, once."""

    forced: tuple[bytes, ...]
    """Property names whose sends the caller decides (DELAY, TRAN_MSG, CLUSTER)."""
    dropped: bytes
    """The property not stored (WAIT): its value says whether to wait for the flush."""
    cluster_entry: bytes
    """``CLUSTER\x01<cluster>`` in UTF-8, appended to every stored message's properties."""
    v1_code: int
    """The request code whose header has the long (V1) field names; the others' are a..m."""


class PreparedSend(NamedTuple):
    """A checked send, its store messages built, waiting for ``put_messages``."""

    messages: Sequence[model.InnerMessage]
    topic: str
    """The topic its stats are counted under."""
    queue_id: int
    """The queue the response names."""
    body_bytes: int
    wait_flush: bool
    started: float


Check: TypeAlias = Callable[[RemotingCommand, bool], "PreparedSend | object"]
"""The caller's preparation of a send that is not plain: a :class:`PreparedSend` or its
refusal (any other object, kept as the reply)."""


_V1_KEYS: Final = (
    "producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
    "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes",
    "batch",
)  # fmt: skip
_FIELDS: Final = len(_V1_KEYS)
_MAX_ENTRIES: Final = 64
_PLAIN_INT: Final = re.compile(r"-?[0-9]{1,18}")


def _plain_int(text: object) -> int | None:
    """The value of ``text`` when it is a str of ``-?[0-9]{1,18}``, else None."""
    if type(text) is not str or _PLAIN_INT.fullmatch(text) is None:
        return None
    return int(text)


def _int32(value: int | None) -> bool:
    return value is not None and _INT_MIN <= value <= _INT_MAX


def _header_values(request: RemotingCommand, v2: bool) -> list[object] | None:
    """The 13 send header values by position (None where absent), or None when the
    header is not one this preparation reads."""
    found: list[object] = [None] * _FIELDS
    values = request.header_values if v2 else None
    if values is not None:
        names = request.header_names
        if type(names) is not str or type(values) is not list or len(names) != len(values):
            return None
        for name, value in zip(names, values, strict=True):
            letter = ord(name) - 97
            if 0 <= letter < _FIELDS:
                found[letter] = value
        return found
    ext = request.ext_fields
    if type(ext) is not dict:
        return None
    if not v2:
        return [ext.get(key) for key in _V1_KEYS]
    for name, value in ext.items():
        if type(name) is not str:
            return None
        if len(name) == 1 and 0 <= ord(name) - 97 < _FIELDS:
            found[ord(name) - 97] = value
    return found


def _properties(
    props: str, rules: PlainRules
) -> tuple[bytes, str | None, str | None, str | None, bool] | None:
    """A plain send's stored properties (as they came but the dropped one, then the CLUSTER
    entry), its TAGS, KEYS and UNIQ_KEY and whether it waits for the flush; None when a
    property leaves the send to the caller (a forced name, a repeated name, too many)."""
    kept: list[bytes] = []
    seen: set[bytes] = set()
    tags = keys = uniq = None
    wait_flush = True
    for entry in props.encode().split(b"\x02"):
        name, sep, value = entry.partition(b"\x01")
        if not (name and sep and value):
            continue  # no name, no separator or no value: not stored
        if len(seen) == _MAX_ENTRIES or name in seen or name in rules.forced:
            return None
        seen.add(name)
        if name == rules.dropped:
            wait_flush = value.lower() == b"true"
            continue
        if name == b"TAGS":
            tags = value.decode()
        elif name == b"KEYS":
            keys = value.decode()
        elif name == b"UNIQ_KEY":
            uniq = value.decode()
        kept.append(entry)
        kept.append(b"\x02")
    kept.append(rules.cluster_entry)
    return b"".join(kept), tags, keys, uniq, wait_flush


def _plain(
    request: RemotingCommand, v2: bool, topics: dict[str, PlainTopic],
    configs: dict[str, TopicConfig], rules: PlainRules, born_host: bytes, started: float,
) -> PreparedSend | None:  # fmt: skip
    found = _header_values(request, v2)
    if found is None:
        return None
    topic = found[1]
    if type(topic) is not str or found[0] is None or found[2] is None:
        return None
    integers = [_plain_int(found[i]) for i in (3, 4, 5, 6, 7)]
    if None in integers:
        return None
    queue_nums, queue_id, sys_flag, born_timestamp, flag = typing.cast("list[int]", integers)
    if not (_int32(queue_nums) and _int32(queue_id) and _int32(sys_flag) and _int32(flag)):
        return None
    reconsume = 0
    if found[9]:
        parsed = _plain_int(found[9])
        if not _int32(parsed):
            return None
        reconsume = typing.cast("int", parsed)
    if found[11] and not _int32(_plain_int(found[11])):
        return None
    batch = found[12]
    if batch:
        if type(batch) is not str:
            return None
        if batch == "1" or batch.encode().lower() == b"true":
            return None
    entry = topics.get(topic)
    if not isinstance(entry, tuple) or len(entry) != 3:
        return None
    if entry[0] is not configs.get(topic) or not 0 <= queue_id < entry[1]:
        return None
    props = found[8]
    if props and type(props) is not str:
        return None
    layout = _properties(typing.cast("str", props) if props else "", rules)
    if layout is None:
        return None
    stored, tags, keys, uniq, wait_flush = layout
    body = request.body
    message = model.InnerMessage(
        topic, queue_id, body, stored, flag, sys_flag | entry[2], born_timestamp, born_host,
        reconsume, 0, model.DispatchHints(tags, keys, uniq),
    )  # fmt: skip
    return PreparedSend((message,), topic, queue_id, len(body), wait_flush, started)


def prepare_plain(
    request: RemotingCommand, v2: bool, topics: dict[str, PlainTopic],
    configs: dict[str, TopicConfig], rules: PlainRules, born_host: bytes,
) -> PreparedSend | None:  # fmt: skip
    """The :class:`PreparedSend` of a plain send, or None: a send whose header integers are
    each a plain decimal within its Java type, not a batch, to a topic of ``topics`` whose
    config is still the one in ``configs``, to a queue below its limit, with no property
    of ``rules.forced`` and no property name twice. (The caller checked that the broker is
    a writable master.) ``rules.dropped`` is not stored; the CLUSTER entry is appended."""
    try:
        return _plain(request, v2, topics, configs, rules, born_host, time.perf_counter())
    except UnicodeEncodeError:
        return None  # lone surrogates: the caller decides


def prepare_run(
    requests: Sequence[RemotingCommand], check: Check, topics: dict[str, PlainTopic],
    configs: dict[str, TopicConfig], rules: PlainRules, born_host: bytes,
    replies: list[Any], ready: list[tuple[int, PreparedSend]],
    messages: list[model.InnerMessage],
) -> None:  # fmt: skip
    """A run's preparation: each request prepared as by :func:`prepare_plain` or, when not
    plain, by ``check(request, v2)``; a prepared send's place and itself go to ``ready``,
    its messages to ``messages`` and None to ``replies``, a refusal to ``replies``. The
    plain sends of a run share one start time (the run came in at once)."""
    started = time.perf_counter()
    for request in requests:
        v2 = request.code != rules.v1_code
        try:
            prepared: object = _plain(request, v2, topics, configs, rules, born_host, started)
        except UnicodeEncodeError:
            prepared = None
        if prepared is None:
            prepared = check(request, v2)
        if isinstance(prepared, PreparedSend):
            ready.append((len(replies), prepared))
            messages.extend(prepared.messages)
            replies.append(None)
        else:
            replies.append(prepared)
