"""GET_CONSUMER_RUNNING_INFO (307): the request header and the ConsumerRunningInfo body.

An admin asks a broker, the broker forwards the same request to the consumer's channel
(a server-initiated request) and relays the answer. Names are Java's
(``GetConsumerRunningInfoRequestHeader``, ``ConsumerRunningInfo``, ``ProcessQueueInfo``,
``ConsumeStatus``, RocketMQ 4.9.x); the body is what fastjson writes, fields sorted, the
``mqTable`` keyed by MessageQueue objects::

    {"jstack":"...",                                      (only when asked for)
     "mqTable":{{"brokerName":"b","queueId":0,"topic":"t"}:
                {"cachedMsgCount":0,"cachedMsgMaxOffset":0,"cachedMsgMinOffset":0,
                 "cachedMsgSizeInMiB":0,"commitOffset":12,"droped":false,
                 "lastConsumeTimestamp":..,"lastLockTimestamp":0,"lastPullTimestamp":..,
                 "locked":false,"transactionMsgCount":0,"transactionMsgMaxOffset":0,
                 "transactionMsgMinOffset":0,"tryUnlockTimes":0}},
     "properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY","consumerGroup":"g",...},
     "statusTable":{"t":{"consumeFailedMsgs":0,"consumeFailedTPS":0.0,"consumeOKTPS":1.5,
                         "consumeRT":2.0,"pullRT":3.1,"pullTPS":1.5}},
     "subscriptionSet":[SubscriptionData,...]}

Decoding is lenient, as other clients write it: object or JSON-text queue keys, property
values of any JSON type (kept as text), missing fields as Java's defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from rocketkube.common import errors, fastjson
from rocketkube.common.protocol.admin_bodies import MessageQueue, load_object
from rocketkube.common.protocol.heartbeat import SubscriptionData
from rocketkube.common.remoting.header import CommandHeader

__all__ = [
    "CALL_CLIENT_TIMEOUT",
    "PROP_CLIENT_VERSION",
    "PROP_CONSUMER_START_TIMESTAMP",
    "PROP_CONSUME_ORDERLY",
    "PROP_CONSUME_TYPE",
    "PROP_NAMESERVER_ADDR",
    "PROP_THREADPOOL_CORE_SIZE",
    "ConsumeStatus",
    "ConsumerRunningInfo",
    "GetConsumerRunningInfoRequestHeader",
    "ProcessQueueInfo",
    "queue_warnings",
    "same_subscriptions",
]

Body = bytes | bytearray | memoryview

PROP_NAMESERVER_ADDR: Final = "PROP_NAMESERVER_ADDR"
PROP_THREADPOOL_CORE_SIZE: Final = "PROP_THREADPOOL_CORE_SIZE"
PROP_CONSUME_ORDERLY: Final = "PROP_CONSUMEORDERLY"
PROP_CONSUME_TYPE: Final = "PROP_CONSUME_TYPE"
PROP_CLIENT_VERSION: Final = "PROP_CLIENT_VERSION"
PROP_CONSUMER_START_TIMESTAMP: Final = "PROP_CONSUMER_START_TIMESTAMP"

#: Seconds a broker waits for the consumer's answer (Java ``Broker2Client.callClient``:
#: 10 s); an admin waits longer, so it gets the broker's clear timeout answer.
CALL_CLIENT_TIMEOUT: Final = 10.0


@dataclass(frozen=True, slots=True)
class GetConsumerRunningInfoRequestHeader(CommandHeader):
    """GET_CONSUMER_RUNNING_INFO (307), admin -> broker and broker -> consumer alike."""

    consumer_group: str
    client_id: str
    jstack_enable: bool = False


def _int(data: Mapping[str, Any], name: str) -> int:
    return int(data.get(name) or 0)


def _float(data: Mapping[str, Any], name: str) -> float:
    return float(data.get(name) or 0.0)


@dataclass(frozen=True, slots=True)
class ProcessQueueInfo:
    """One queue as its consumer holds it: committed offset, cached (pulled, not yet
    consumed) messages, the orderly batch being consumed ("transaction"), lock and times
    (epoch ms)."""

    commit_offset: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_count: int = 0
    cached_msg_size_in_mib: int = 0
    transaction_msg_min_offset: int = 0
    transaction_msg_max_offset: int = 0
    transaction_msg_count: int = 0
    locked: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    dropped: bool = False
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "cachedMsgCount": self.cached_msg_count,
            "cachedMsgMaxOffset": self.cached_msg_max_offset,
            "cachedMsgMinOffset": self.cached_msg_min_offset,
            "cachedMsgSizeInMiB": self.cached_msg_size_in_mib,
            "commitOffset": self.commit_offset,
            "droped": self.dropped,
            "lastConsumeTimestamp": self.last_consume_timestamp,
            "lastLockTimestamp": self.last_lock_timestamp,
            "lastPullTimestamp": self.last_pull_timestamp,
            "locked": self.locked,
            "transactionMsgCount": self.transaction_msg_count,
            "transactionMsgMaxOffset": self.transaction_msg_max_offset,
            "transactionMsgMinOffset": self.transaction_msg_min_offset,
            "tryUnlockTimes": self.try_unlock_times,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProcessQueueInfo:
        return cls(
            commit_offset=_int(data, "commitOffset"),
            cached_msg_min_offset=_int(data, "cachedMsgMinOffset"),
            cached_msg_max_offset=_int(data, "cachedMsgMaxOffset"),
            cached_msg_count=_int(data, "cachedMsgCount"),
            cached_msg_size_in_mib=_int(data, "cachedMsgSizeInMiB"),
            transaction_msg_min_offset=_int(data, "transactionMsgMinOffset"),
            transaction_msg_max_offset=_int(data, "transactionMsgMaxOffset"),
            transaction_msg_count=_int(data, "transactionMsgCount"),
            locked=bool(data.get("locked", False)),
            try_unlock_times=_int(data, "tryUnlockTimes"),
            last_lock_timestamp=_int(data, "lastLockTimestamp"),
            dropped=bool(data.get("droped", False)),
            last_pull_timestamp=_int(data, "lastPullTimestamp"),
            last_consume_timestamp=_int(data, "lastConsumeTimestamp"),
        )


@dataclass(frozen=True, slots=True)
class ConsumeStatus:
    """A topic's recent pull and consume figures: RT in ms (mean per request), TPS in
    messages a second, ``consume_failed_msgs`` the failed messages of the last hour."""

    pull_rt: float = 0.0
    pull_tps: float = 0.0
    consume_rt: float = 0.0
    consume_ok_tps: float = 0.0
    consume_failed_tps: float = 0.0
    consume_failed_msgs: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "consumeFailedMsgs": self.consume_failed_msgs,
            "consumeFailedTPS": self.consume_failed_tps,
            "consumeOKTPS": self.consume_ok_tps,
            "consumeRT": self.consume_rt,
            "pullRT": self.pull_rt,
            "pullTPS": self.pull_tps,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConsumeStatus:
        return cls(
            pull_rt=_float(data, "pullRT"),
            pull_tps=_float(data, "pullTPS"),
            consume_rt=_float(data, "consumeRT"),
            consume_ok_tps=_float(data, "consumeOKTPS"),
            consume_failed_tps=_float(data, "consumeFailedTPS"),
            consume_failed_msgs=_int(data, "consumeFailedMsgs"),
        )


@dataclass(frozen=True, slots=True)
class ConsumerRunningInfo:
    """What one consumer reports about itself (see the module docstring)."""

    properties: Mapping[str, str] = field(default_factory=dict)
    subscriptions: tuple[SubscriptionData, ...] = ()
    mq_table: Mapping[MessageQueue, ProcessQueueInfo] = field(default_factory=dict)
    status_table: Mapping[str, ConsumeStatus] = field(default_factory=dict)
    jstack: str | None = None

    def to_json(self) -> dict[Any, Any]:
        """The fastjson form (``mqTable`` keys are :class:`~fastjson.ObjectKey`)."""
        data: dict[str, Any] = {}
        if self.jstack is not None:
            data["jstack"] = self.jstack
        data["mqTable"] = {mq.as_key(): pq.to_json() for mq, pq in sorted(self.mq_table.items())}
        data["properties"] = dict(sorted(self.properties.items()))
        data["statusTable"] = {t: s.to_json() for t, s in sorted(self.status_table.items())}
        data["subscriptionSet"] = [
            s.to_json() for s in sorted(self.subscriptions, key=lambda s: s.topic)
        ]
        return data

    def encode(self) -> bytes:
        return fastjson.dumps(self.to_json())

    @classmethod
    def decode(cls, body: Body) -> ConsumerRunningInfo:
        """Parse a body any client wrote; ProtocolError when it is not this shape."""
        data = load_object(body, "ConsumerRunningInfo")
        try:
            return cls._from_json(data)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise errors.ProtocolError(f"malformed ConsumerRunningInfo: {exc!r}") from None

    @classmethod
    def _from_json(cls, data: Mapping[Any, Any]) -> ConsumerRunningInfo:
        properties = {
            str(k): _text(v) for k, v in (data.get("properties") or {}).items() if v is not None
        }
        subscriptions = tuple(
            SubscriptionData.from_json(dict(s)) for s in data.get("subscriptionSet") or ()
        )
        mq_table = {
            MessageQueue.from_key(k): ProcessQueueInfo.from_json(v)
            for k, v in (data.get("mqTable") or {}).items()
        }
        status_table = {
            str(t): ConsumeStatus.from_json(s) for t, s in (data.get("statusTable") or {}).items()
        }
        jstack = data.get("jstack")
        return cls(
            properties=dict(sorted(properties.items())),
            subscriptions=tuple(sorted(subscriptions, key=lambda s: s.topic)),
            mq_table=dict(sorted(mq_table.items())),
            status_table=dict(sorted(status_table.items())),
            jstack=None if jstack is None else str(jstack),
        )


def _text(value: Any) -> str:
    """A property value as Java's ``Properties`` holds it: text (JSON true -> "true")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def same_subscriptions(infos: Mapping[str, ConsumerRunningInfo]) -> bool:
    """Whether every client of a group subscribes the same topics with the same
    expressions (Java ``ConsumerRunningInfo.analyzeSubscription``'s first check)."""

    def key(info: ConsumerRunningInfo) -> frozenset[tuple[str, str, str]]:
        return frozenset((s.topic, s.expression_type, s.sub_string) for s in info.subscriptions)

    return len({key(info) for info in infos.values()}) <= 1


#: A push consumer's queue holding messages but not consumed for this long looks blocked.
BLOCKED_AFTER_MS: Final = 60_000


def queue_warnings(client_id: str, info: ConsumerRunningInfo, now_ms: int) -> list[str]:
    """What looks wrong with a push consumer's queues (Java
    ``ConsumerRunningInfo.analyzeProcessQueue``): orderly queues it cannot lock or unlock,
    or queues holding messages with no consumption for a minute. Nothing for pull ones."""
    if info.properties.get(PROP_CONSUME_TYPE) != "CONSUME_PASSIVELY":
        return []
    orderly = info.properties.get(PROP_CONSUME_ORDERLY, "").lower() == "true"
    out: list[str] = []
    for mq, pq in info.mq_table.items():
        name = (
            f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"
        )
        if orderly and not pq.locked:
            out.append(
                f"{client_id} {name} can't lock for a while, {now_ms - pq.last_lock_timestamp}ms"
            )
        elif orderly and pq.dropped and pq.try_unlock_times > 0:
            out.append(f"{client_id} {name} unlock {pq.try_unlock_times} times, still failed")
        elif not orderly:
            idle = now_ms - pq.last_consume_timestamp
            if idle > BLOCKED_AFTER_MS and pq.cached_msg_count > 0:
                out.append(f"{client_id} {name} can't consume for a while, maybe blocked, {idle}ms")
    return out
