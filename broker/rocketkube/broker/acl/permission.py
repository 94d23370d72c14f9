"""Permissions, and what each request needs (RocketMQ 4.9's ``Permission`` and
``PlainAccessValidator.parse``), pure: no I/O, no state.

A resource is a topic, or a group written as its retry topic (``%RETRY%<group>``), as
RocketMQ keys both in one map. The table (docs/protocol.md §15.2)::

    SEND_MESSAGE (10), SEND_MESSAGE_V2 (310),   topic PUB; a %RETRY% topic: the producer
    SEND_BATCH_MESSAGE (320)                    group SUB instead
    CONSUMER_SEND_MSG_BACK (36)                 group SUB
    PULL_MESSAGE (11)                           topic SUB (unless %RETRY%) and group SUB
    QUERY_MESSAGE (12)                          topic SUB
    HEART_BEAT (34)                             each consumer's group SUB, each of its
                                                subscribed topics SUB
    UNREGISTER_CLIENT (35),                     group SUB
    GET_CONSUMER_LIST_BY_GROUP (38)
    UPDATE_CONSUMER_OFFSET (15),                group SUB and topic SUB
    QUERY_CONSUMER_OFFSET (14)
    ADMIN_CODES                                 an admin account
    anything else                               a valid signature only

Sends to ``RMQ_SYS_TRACE_TOPIC`` need nothing more than a valid signature, as RocketMQ
lets every account write message traces.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from typing import Final

from rocketkube.broker import topics
from rocketkube.common.protocol.heartbeat import HeartbeatData
from rocketkube.common.remoting.codes import RequestCode
from rocketkube.common.remoting.command import RemotingCommand

__all__ = [
    "ADMIN_CODES",
    "Perm",
    "check_permission",
    "group_resource",
    "is_group",
    "needs",
    "parse_perm",
    "perm_name",
    "resource_name",
]

TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"


class Perm(enum.IntFlag):
    """RocketMQ's ``Permission`` bits."""

    DENY = 1
    ANY = 2
    PUB = 4
    SUB = 8


_NAMES: Final = {
    "DENY": Perm.DENY,
    "PUB": Perm.PUB,
    "SUB": Perm.SUB,
    "PUB|SUB": Perm.PUB | Perm.SUB,
    "SUB|PUB": Perm.PUB | Perm.SUB,
}

#: Requests only an admin account may make (``Permission.ADMIN_CODE``, and the ACL
#: configuration codes, which rewrite every account).
ADMIN_CODES: Final = frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
        RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
        RequestCode.DELETE_ACL_CONFIG,
        RequestCode.GET_BROKER_CLUSTER_ACL_INFO,
        RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
    }
)


def parse_perm(text: str | None) -> Perm:
    """``DENY``, ``PUB``, ``SUB``, ``PUB|SUB``; anything else (or nothing) is DENY, as in
    ``Permission.parsePermFromString``."""
    if text is None:
        return Perm.DENY
    return _NAMES.get(text.strip().upper(), Perm.DENY)


def perm_name(perm: Perm) -> str:
    if perm & Perm.DENY:
        return "DENY"
    return "|".join(name for name, bit in (("PUB", Perm.PUB), ("SUB", Perm.SUB)) if perm & bit)


def check_permission(needed: Perm, owned: Perm) -> bool:
    """``Permission.checkPermission``: DENY wins; ANY is PUB or SUB; else a shared bit."""
    if owned & Perm.DENY:
        return False
    if needed & Perm.ANY:
        return bool(owned & (Perm.PUB | Perm.SUB))
    return bool(needed & owned)


def group_resource(group: str) -> str:
    """The key of a group among resources: its retry topic, as RocketMQ keys it."""
    return topics.retry_topic(group)


def is_group(resource: str) -> bool:
    return resource.startswith(topics.RETRY_GROUP_TOPIC_PREFIX)


def resource_name(resource: str) -> str:
    """``topic:T`` or ``group:G`` (``PlainAccessResource.printStr``)."""
    if is_group(resource):
        return f"group:{resource[len(topics.RETRY_GROUP_TOPIC_PREFIX) :]}"
    return f"topic:{resource}"


def needs(request: RemotingCommand) -> dict[str, Perm]:
    """The resources ``request`` touches and the permission each needs; ValueError when a
    heartbeat body cannot be read."""
    code = request.code
    fields = request.ext_fields
    if code == RequestCode.HEART_BEAT:
        return dict(_heartbeat(request))
    out: dict[str, Perm] = {}
    if code in _SENDS:
        topic_key, group_key = _SENDS[code]
        topic = fields.get(topic_key)
        if topic is not None and is_group(topic):
            _add(out, _group(fields.get(group_key)), Perm.SUB)
        elif topic != TRACE_TOPIC:
            _add(out, topic, Perm.PUB)
    elif code == RequestCode.PULL_MESSAGE:
        topic = fields.get("topic")
        if topic is not None and not is_group(topic):
            _add(out, topic, Perm.SUB)
        _add(out, _group(fields.get("consumerGroup")), Perm.SUB)
    elif code == RequestCode.QUERY_MESSAGE:
        _add(out, fields.get("topic"), Perm.SUB)
    elif code in _GROUP_ONLY:
        _add(out, _group(fields.get(_GROUP_ONLY[code])), Perm.SUB)
    elif code in _OFFSETS:
        _add(out, _group(fields.get("consumerGroup")), Perm.SUB)
        _add(out, fields.get("topic"), Perm.SUB)
    return out


#: Send codes: their topic field and their (producer) group field.
_SENDS: Final[Mapping[int, tuple[str, str]]] = {
    RequestCode.SEND_MESSAGE: ("topic", "producerGroup"),
    RequestCode.SEND_MESSAGE_V2: ("b", "a"),
    RequestCode.SEND_BATCH_MESSAGE: ("b", "a"),
}
#: Codes that name only a group: the field that does.
_GROUP_ONLY: Final[Mapping[int, str]] = {
    RequestCode.CONSUMER_SEND_MSG_BACK: "group",
    RequestCode.UNREGISTER_CLIENT: "consumerGroup",
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: "consumerGroup",
}
_OFFSETS: Final = frozenset({RequestCode.UPDATE_CONSUMER_OFFSET, RequestCode.QUERY_CONSUMER_OFFSET})


def _group(name: str | None) -> str | None:
    return None if not name else group_resource(name)


def _add(out: dict[str, Perm], resource: str | None, perm: Perm) -> None:
    if resource:
        out[resource] = perm


def _heartbeat(request: RemotingCommand) -> Iterator[tuple[str, Perm]]:
    if not request.body:
        return
    for consumer in HeartbeatData.decode(request.body).consumers:
        yield group_resource(consumer.group_name), Perm.SUB
        for subscription in consumer.subscriptions:
            yield subscription.topic, Perm.SUB
