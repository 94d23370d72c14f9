"""The data source's options: parsed and checked once, at planning, into frozen dataclasses.

Names follow Spark's Kafka source where the meaning is the same. Spark hands options over
case-insensitively (lower-cased keys), so names are matched without regard to case; an
unknown name is refused, so a misspelt option cannot be silently ignored.

Reading (:func:`parse_read_options`; ``streaming`` for ``readStream``):

===========================  =================================================================
``namesrvAddr``              name server(s), ``host:port``, several separated by ``;``
``topic``                    one topic or a comma-separated list
``topicPattern``             instead of ``topic``: a regular expression whole topic names
                             match (system topics such as ``%RETRY%...`` never do); a stream
                             picks up topics that come to match it
``startingOffsets``          ``earliest`` (batch default), ``latest`` (streaming only, its
                             default), ``committed`` (``consumerGroup``'s offsets; earliest
                             where it has none) or JSON per topic, broker and queue
``endingOffsets``            batch only: ``latest`` (default) or JSON per topic, broker, queue
``startingTimestamp``        epoch milliseconds; wins over ``startingOffsets``
``endingTimestamp``          batch only: epoch milliseconds; wins over ``endingOffsets``
``tagExpression``            ``*`` (default) or ``TagA || TagB``
``pullBatchSize``            messages per pull, 1 to 1024 (default 32)
``maxMessagesPerPartition``  a Spark partition reads at most this many offsets (default 100000)
``maxMessagesPerTrigger``    streaming only: offsets a micro-batch reads at most, over all
                             queues (default: all there are)
``consumerGroup``            the group ``committed`` starts from; a stream commits each
                             batch's end offsets to it, for lag dashboards
``failOnDataLoss``           ``true`` (default): a start offset retention removed fails the
                             query; ``false``: the read skips to the first stored offset
``readFromSlave``            ``true`` reads from a slave of the queue's broker when it has one
``filterPushdown``           batch only: ``true`` applies the query's filters on topic, queue,
                             tags and store time while planning and pulling (see
                             :mod:`.pushdown`; Spark needs
                             ``spark.sql.python.filterPushdown.enabled=true`` too)
===========================  =================================================================

Offsets JSON, as Kafka's: ``{"T": {"broker-a": {"0": 42, "1": -2}}}``, where ``-2`` means the
queue's earliest offset and ``-1`` its latest; a queue left out takes the default
(``earliest`` to start a batch, ``latest`` to start a stream and to end a batch).

Writing (:func:`parse_write_options`): ``namesrvAddr``, ``topic`` (when given it is every
row's topic, as in Kafka's sink; else each row's ``topic`` column), ``producerGroup`` and
``writeBatchSize`` (messages per batch send, default 64).

Reads and writes also take the ACL and TLS options of :mod:`.security` (``accessKey``,
``secretKey``, ``tls``, ``tlsCaFile``...), for every client they make. The SDK clients are
built from settings the options make (:meth:`ReadOptions.admin_settings`,
:meth:`WriteOptions.producer_settings`); options the source does not take (timeouts, the
producer's retries) keep the SDK's defaults.

A bad value raises :class:`OptionError`, naming the option and the forms it accepts.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from typing import Final

from rocketkube.client.admin.settings import AdminSettings
from rocketkube.client.producer.settings import ProducerSettings
from rocketkube.spark import security
from rocketkube.spark.security import Security

__all__ = [
    "EARLIEST",
    "LATEST",
    "AtTimestamp",
    "Committed",
    "Earliest",
    "Latest",
    "OffsetSpec",
    "OptionError",
    "PerQueue",
    "QueueKey",
    "ReadOptions",
    "WriteOptions",
    "parse_read_options",
    "parse_write_options",
]

#: A queue offset in offsets JSON meaning the queue's first stored message (Kafka's -2).
EARLIEST: Final = -2
#: A queue offset in offsets JSON meaning the queue's end (Kafka's -1).
LATEST: Final = -1

DEFAULT_NAMESRV: Final = "127.0.0.1:9876"
DEFAULT_PULL_BATCH_SIZE: Final = 32
MAX_PULL_BATCH_SIZE: Final = 1024
DEFAULT_MAX_MESSAGES_PER_PARTITION: Final = 100_000
DEFAULT_PRODUCER_GROUP: Final = "rocketkube-spark-writer"
DEFAULT_WRITE_BATCH_SIZE: Final = 64
#: Topics a ``topicPattern`` never matches: the broker's own (Java's ``TopicValidator``)...
SYSTEM_TOPICS: Final = frozenset(
    {
        "TBW102",
        "SELF_TEST_TOPIC",
        "BenchmarkTest",
        "OFFSET_MOVED_EVENT",
        "SCHEDULE_TOPIC_XXXX",
        "TRANS_CHECK_MAX_TIME_TOPIC",
    }
)
#: ... and those of groups (retry, dead letter) and the system (transactions, traces).
SYSTEM_PREFIXES: Final = ("%RETRY%", "%DLQ%", "RMQ_SYS_", "rmq_sys_")

_OFFSETS_JSON: Final = (
    'JSON per topic, broker and queue such as {"T": {"broker-a": {"0": 42}}} '
    f"({EARLIEST}: earliest, {LATEST}: latest)"
)
_COMMON_READ_NAMES: Final = (
    "namesrvAddr",
    "topic",
    "topicPattern",
    "startingOffsets",
    "startingTimestamp",
    "tagExpression",
    "pullBatchSize",
    "maxMessagesPerPartition",
    "consumerGroup",
    "failOnDataLoss",
    "readFromSlave",
    *security.NAMES,
)
_BATCH_ONLY: Final = ("endingOffsets", "endingTimestamp", "filterPushdown")
_STREAMING_ONLY: Final = ("maxMessagesPerTrigger",)
#: ``checkpointLocation`` is Spark's own, handed to a streaming sink with its options.
_WRITE_NAMES: Final = (
    "namesrvAddr",
    "topic",
    "producerGroup",
    "writeBatchSize",
    "checkpointLocation",
    *security.NAMES,
)


class OptionError(ValueError):
    """A data source option is missing, unknown or malformed; the message names it."""

    def __init__(self, name: str, value: str | None, accepted: str) -> None:
        shown = "missing" if value is None else repr(value)
        super().__init__(f"rocketmq option {name}: {shown} is not valid; expected {accepted}")
        self.option = name


@dataclasses.dataclass(frozen=True, slots=True)
class QueueKey:
    """One queue of a topic on a broker, as offsets JSON names it."""

    topic: str
    broker_name: str
    queue_id: int


@dataclasses.dataclass(frozen=True, slots=True)
class Earliest:
    """Each queue's first stored message."""


@dataclasses.dataclass(frozen=True, slots=True)
class Latest:
    """Each queue's end: the offset its next message will get."""


@dataclasses.dataclass(frozen=True, slots=True)
class Committed:
    """Each queue's offset committed by the ``consumerGroup``; its first stored message
    where the group has none."""


@dataclasses.dataclass(frozen=True, slots=True)
class AtTimestamp:
    """Each queue's first message stored at or after ``ms`` (SEARCH_OFFSET_BY_TIMESTAMP)."""

    ms: int


@dataclasses.dataclass(frozen=True, slots=True)
class PerQueue:
    """Offsets named per queue (:data:`EARLIEST` and :data:`LATEST` allowed); every other
    queue takes ``default``."""

    offsets: Mapping[QueueKey, int]
    default: Earliest | Latest


OffsetSpec = Earliest | Latest | Committed | AtTimestamp | PerQueue


@dataclasses.dataclass(frozen=True, slots=True)
class ReadOptions:
    """What a read covers and how it pulls: ``topics`` by name, or every topic whose whole
    name matches ``topic_pattern`` (then ``topics`` is empty)."""

    namesrv_addr: str
    topics: tuple[str, ...]
    starting: OffsetSpec = Earliest()
    ending: OffsetSpec = Latest()
    tag_expression: str = "*"
    pull_batch_size: int = DEFAULT_PULL_BATCH_SIZE
    max_messages_per_partition: int = DEFAULT_MAX_MESSAGES_PER_PARTITION
    read_from_slave: bool = False
    topic_pattern: str | None = None
    consumer_group: str | None = None
    max_messages_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    filter_pushdown: bool = False
    security: Security = security.PLAIN

    def reads(self, topic: str) -> bool:
        """Whether ``topic`` is one this read covers."""
        if self.topic_pattern is None:
            return topic in self.topics
        system = topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_PREFIXES)
        return not system and re.fullmatch(self.topic_pattern, topic) is not None

    def admin_settings(self) -> AdminSettings:
        """What every client of the read is made with: planning's lookups, each executor's
        pulls and a stream's commits of its group's offsets all go through an admin
        client (they name the queue and offset themselves, as no consumer would)."""
        return AdminSettings(
            namesrv_addr=self.namesrv_addr,
            tls=self.security.tls,
            credentials=self.security.credentials,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class WriteOptions:
    """Where a batch write sends and how it groups messages."""

    namesrv_addr: str
    topic: str | None = None
    producer_group: str = DEFAULT_PRODUCER_GROUP
    write_batch_size: int = DEFAULT_WRITE_BATCH_SIZE
    security: Security = security.PLAIN

    def producer_settings(self) -> ProducerSettings:
        """What each task's producer is made with."""
        return ProducerSettings(
            group=self.producer_group,
            namesrv_addr=self.namesrv_addr,
            tls=self.security.tls,
            credentials=self.security.credentials,
        )


def _known(
    options: Mapping[str, str], names: tuple[str, ...], elsewhere: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The options keyed by their documented names; an unknown name is an error, and so is
    a name of ``elsewhere`` (the other kind of query's options, each saying where it goes)."""
    by_lower = {name.lower(): name for name in names}
    other = {name.lower(): where for name, where in (elsewhere or {}).items()}
    known: dict[str, str] = {}
    for key, value in options.items():
        name = by_lower.get(key.lower())
        if key.lower() in other:
            raise OptionError(key, value, f"no such option here: it is for {other[key.lower()]}")
        if name is None:
            raise OptionError(key, value, "no such option; known: " + ", ".join(names))
        known[name] = value
    return known


def _positive_int(name: str, value: str | None, default: int, maximum: int | None = None) -> int:
    if value is None:
        return default
    limit = f" up to {maximum}" if maximum is not None else ""
    try:
        number = int(value.strip())
    except ValueError:
        number = 0
    if number < 1 or (maximum is not None and number > maximum):
        raise OptionError(name, value, f"a whole number from 1{limit}")
    return number


def _timestamp(name: str, value: str) -> AtTimestamp:
    try:
        ms = int(value.strip())
    except ValueError:
        ms = -1
    if ms < 0:
        raise OptionError(name, value, "epoch milliseconds, a whole number of 0 or more")
    return AtTimestamp(ms)


def _boolean(name: str, value: str | None, default: bool = False) -> bool:
    if value is None:
        return default
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise OptionError(name, value, "true or false")
    return text == "true"


def _topics(known: Mapping[str, str]) -> tuple[tuple[str, ...], str | None]:
    """The topics named by ``topic``, or the pattern of ``topicPattern``: exactly one."""
    value, pattern = known.get("topic"), known.get("topicPattern")
    if pattern is not None:
        if value is not None:
            raise OptionError("topicPattern", pattern, "no topic option beside it (one of two)")
        try:
            re.compile(pattern)
        except re.error:
            raise OptionError("topicPattern", pattern, "a Python regular expression") from None
        return (), pattern
    topics = tuple(t.strip() for t in (value or "").split(",") if t.strip())
    if not topics:
        raise OptionError(
            "topic", value, "a topic name or a comma-separated list of them (or topicPattern)"
        )
    return topics, None


def _queue_offsets(name: str, value: str) -> dict[QueueKey, int]:
    """``{"T": {"broker-a": {"0": 42}}}`` into queue -> offset."""
    try:
        tree = json.loads(value)
    except ValueError:
        tree = None
    offsets: dict[QueueKey, int] = {}
    if not isinstance(tree, dict) or not tree:
        raise OptionError(name, value, _OFFSETS_JSON)
    for topic, brokers in tree.items():
        if not isinstance(brokers, dict):
            raise OptionError(name, value, _OFFSETS_JSON)
        for broker, queues in brokers.items():
            if not isinstance(queues, dict):
                raise OptionError(name, value, _OFFSETS_JSON)
            for queue, offset in queues.items():
                if not (queue.isdigit() and type(offset) is int and offset >= EARLIEST):
                    raise OptionError(name, value, _OFFSETS_JSON)
                offsets[QueueKey(topic, broker, int(queue))] = offset
    return offsets


def _offsets(
    name: str, value: str | None, words: dict[str, OffsetSpec], default: Earliest | Latest
) -> OffsetSpec:
    """``startingOffsets`` or ``endingOffsets``: one of ``words`` (the first is the default)
    or JSON per queue, whose queues left out take ``default``."""
    if value is None:
        return next(iter(words.values()))
    word = words.get(value.strip().lower())
    if word is not None:
        return word
    if not value.lstrip().startswith("{"):
        raise OptionError(name, value, f"{', '.join(words)} or {_OFFSETS_JSON}")
    return PerQueue(_queue_offsets(name, value), default)


def _check_topics_named(name: str, value: str, spec: OffsetSpec, parsed: ReadOptions) -> None:
    if isinstance(spec, PerQueue):
        strangers = sorted({key.topic for key in spec.offsets if not parsed.reads(key.topic)})
        if strangers:
            read = parsed.topic_pattern or ", ".join(parsed.topics)
            raise OptionError(name, value, f"offsets of the topics read ({read}) only")


def _starting_words(streaming: bool) -> dict[str, OffsetSpec]:
    """The words ``startingOffsets`` takes, its default first."""
    if streaming:
        return {"latest": Latest(), "earliest": Earliest(), "committed": Committed()}
    return {"earliest": Earliest(), "committed": Committed()}


def parse_read_options(options: Mapping[str, str], *, streaming: bool = False) -> ReadOptions:
    """The options of a batch read (a streaming one with ``streaming``), checked; raises
    :class:`OptionError`."""
    names: tuple[str, ...]
    if streaming:
        names = _COMMON_READ_NAMES + _STREAMING_ONLY
        elsewhere = dict.fromkeys(_BATCH_ONLY, "batch reads only")
    else:
        names = _COMMON_READ_NAMES + _BATCH_ONLY
        elsewhere = dict.fromkeys(_STREAMING_ONLY, "streaming reads only")
    known = _known(options, names, elsewhere)
    topics, pattern = _topics(known)
    start_default: Earliest | Latest = Latest() if streaming else Earliest()
    starting = _offsets(
        "startingOffsets", known.get("startingOffsets"), _starting_words(streaming), start_default
    )
    ending = _offsets("endingOffsets", known.get("endingOffsets"), {"latest": Latest()}, Latest())
    if "startingTimestamp" in known:
        starting = _timestamp("startingTimestamp", known["startingTimestamp"])
    if "endingTimestamp" in known:
        ending = _timestamp("endingTimestamp", known["endingTimestamp"])
    group = known.get("consumerGroup")
    if group is not None and not group.strip():
        raise OptionError("consumerGroup", group, "a consumer group name")
    parsed = ReadOptions(
        namesrv_addr=_namesrv(known.get("namesrvAddr")),
        topics=topics,
        starting=starting,
        ending=ending,
        tag_expression=(known.get("tagExpression") or "").strip() or "*",
        pull_batch_size=_positive_int(
            "pullBatchSize",
            known.get("pullBatchSize"),
            DEFAULT_PULL_BATCH_SIZE,
            MAX_PULL_BATCH_SIZE,
        ),
        max_messages_per_partition=_positive_int(
            "maxMessagesPerPartition",
            known.get("maxMessagesPerPartition"),
            DEFAULT_MAX_MESSAGES_PER_PARTITION,
        ),
        read_from_slave=_boolean("readFromSlave", known.get("readFromSlave")),
        topic_pattern=pattern,
        consumer_group=group.strip() if group is not None else None,
        max_messages_per_trigger=_optional_positive_int(
            "maxMessagesPerTrigger", known.get("maxMessagesPerTrigger")
        ),
        fail_on_data_loss=_boolean("failOnDataLoss", known.get("failOnDataLoss"), default=True),
        filter_pushdown=_boolean("filterPushdown", known.get("filterPushdown")),
        security=security.parse(known, OptionError),
    )
    _check_topics_named("startingOffsets", known.get("startingOffsets", ""), starting, parsed)
    _check_topics_named("endingOffsets", known.get("endingOffsets", ""), ending, parsed)
    if isinstance(starting, Committed) and parsed.consumer_group is None:
        raise OptionError(
            "startingOffsets", known["startingOffsets"], "committed only with consumerGroup"
        )
    return parsed


def _optional_positive_int(name: str, value: str | None) -> int | None:
    return None if value is None else _positive_int(name, value, 0)


def parse_write_options(options: Mapping[str, str]) -> WriteOptions:
    """The write options, checked; raises :class:`OptionError`."""
    known = _known(options, _WRITE_NAMES)
    topic = known.get("topic")
    if topic is not None and (not topic.strip() or "," in topic):
        raise OptionError("topic", topic, "one topic name (or no option: each row's topic)")
    group = known.get("producerGroup", DEFAULT_PRODUCER_GROUP).strip()
    if not group:
        raise OptionError("producerGroup", known["producerGroup"], "a producer group name")
    return WriteOptions(
        namesrv_addr=_namesrv(known.get("namesrvAddr")),
        topic=topic.strip() if topic is not None else None,
        producer_group=group,
        write_batch_size=_positive_int(
            "writeBatchSize", known.get("writeBatchSize"), DEFAULT_WRITE_BATCH_SIZE
        ),
        security=security.parse(known, OptionError),
    )


def _namesrv(value: str | None) -> str:
    if value is None:
        return DEFAULT_NAMESRV
    addrs = [a.strip() for a in value.split(";") if a.strip()]
    if not addrs or not all(_is_host_port(a) for a in addrs):
        raise OptionError("namesrvAddr", value, "host:port, several separated by ';'")
    return ";".join(addrs)


def _is_host_port(addr: str) -> bool:
    host, _, port = addr.rpartition(":")
    return bool(host) and port.isdigit() and 0 < int(port) < 65536
