"""Message subcommands: queryMsgById, queryMsgByKey, sendMessage, consumeMessage.

Flags are mqadmin's (``tools/.../command/message/``, RocketMQ 4.9.8), with two changes:
``queryMsgById`` also takes ``-t topic`` (as RocketMQ 5 does) to find a message by the
client id ``sendMessage`` prints (``UNIQ_KEY``), not only by its offset id; and the body is
printed instead of being written under ``/tmp/rocketmq/msgbodys``.

``consumeMessage`` reads without a consumer: plain pulls (no commit, no heartbeat) of each
readable queue, or of ``-b``/``-i`` from ``-o``, between the offsets at ``-s`` and ``-e``
(store times outside them are dropped), at most ``-c`` messages in all.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

from rocketkube.client import routing
from rocketkube.client.admin.cli import render
from rocketkube.client.admin.cli.base import Session, Subcommand, UsageError, parse_bool
from rocketkube.client.admin.cli.base import parse_timestamp as _timestamp
from rocketkube.client.admin.client import TOOLS_CONSUMER_GROUP, AdminClient
from rocketkube.client.consumer.pull import PullStatus
from rocketkube.client.errors import MQClientError
from rocketkube.client.producer.producer import Producer
from rocketkube.common.message.model import Message, MessageExt
from rocketkube.common.names import BrokerName
from rocketkube.common.protocol import permission
from rocketkube.common.protocol.admin_bodies import MessageQueue

__all__ = ["SUBCOMMANDS", "QueueRange", "plan_ranges"]

#: Messages asked for per pull by consumeMessage.
PULL_BATCH = 32


class NoMessageError(MQClientError):
    """A query found nothing (mqadmin: "query message by key finished, but no message")."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# -- queryMsgById / queryMsgByKey --------------------------------------------------------------


def _configure_by_id(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-i", "--msgId", dest="msg_id", required=True, help="offset message id(s), comma-separated"
    )
    parser.add_argument(
        "-t", "--topic", help="the topic, to also find client message ids (UNIQ_KEY)"
    )


async def _find_by_id(admin: AdminClient, msg_id: str, topic: str | None) -> list[MessageExt]:
    if topic:
        found = await admin.query_messages_by_key(topic, msg_id, unique_key=True)
        if found:
            return found[-1:]  # a resent message shares its id: the latest copy
    return [await admin.view_message(msg_id)]


async def _query_by_id(session: Session) -> None:
    ids = [part.strip() for part in session.args.msg_id.split(",") if part.strip()]
    if not ids:
        raise UsageError("no message id given")
    messages: list[MessageExt] = []
    for msg_id in ids:
        messages.extend(await _find_by_id(session.admin, msg_id, session.args.topic))
    text = "\n\n".join(render.message_text(m) for m in messages)
    session.emit([render.message_json(m) for m in messages], text)


def _configure_by_key(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--topic", required=True, help="topic name")
    parser.add_argument("-k", "--msgKey", dest="key", required=True, help="message key")


async def _query_by_key(session: Session) -> None:
    topic, key = session.args.topic, session.args.key
    messages = await session.admin.query_messages_by_key(topic, key, max_num=64)
    if not messages:
        raise NoMessageError(f"no message with key {key!r} in topic {topic}")
    rows = [[m.unique_key or render.offset_msg_id(m), m.queue_id, m.queue_offset] for m in messages]
    text = render.table(["#Message ID", "#QID", "#Offset"], rows)
    session.emit([render.message_json(m) for m in messages], text)


# -- sendMessage -------------------------------------------------------------------------------


def _configure_send(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("-t", "--topic", required=True, help="topic name")
    add("-p", "--body", required=True, help="the message body (UTF-8 text)")
    add("-k", "--key", help="message keys (space-separated)")
    add("-c", "--tags", help="message tag")
    add("-b", "--broker", help="broker name (with -i: send to that queue)")
    add("-i", "--qid", type=int, help="queue id (needs -b)")
    add(
        "-m",
        "--msgTraceEnable",
        dest="msg_trace_enable",
        type=parse_bool,
        default=False,
        metavar="true|false",
        help="accepted for mqadmin compatibility; no trace is sent",
    )


async def _send_message(session: Session) -> None:
    args = session.args
    if args.qid is not None and args.broker is None:
        raise UsageError("Broker name must be set if the queue is chosen!")
    message = Message(args.topic, args.body.encode("utf-8"))
    if args.tags:
        message.tags = args.tags
    if args.key:
        message.keys = args.key.split()
    queue = None
    if args.broker is not None and args.qid is not None:
        queue = routing.MessageQueue(args.topic, args.broker, args.qid)
    async with Producer(settings=session.producer_settings(str(_now_ms()))) as producer:
        result = await producer.send(message, queue=queue)
    data = {
        "brokerName": result.queue.broker_name,
        "queueId": result.queue.queue_id,
        "sendStatus": str(result.status),
        "msgId": result.msg_id,
        "offsetMsgId": result.offset_msg_id,
        "queueOffset": result.queue_offset,
    }
    text = render.table(
        ["#Broker Name", "#QID", "#Send Result", "#MsgId", "#OffsetMsgId"],
        [
            [
                result.queue.broker_name,
                result.queue.queue_id,
                str(result.status),
                result.msg_id,
                result.offset_msg_id,
            ]
        ],
    )
    session.emit(data, text)


# -- consumeMessage ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueRange:
    """Offsets ``[begin, end)`` of one queue to read."""

    queue: MessageQueue
    begin: int
    end: int


def plan_ranges(
    bounds: list[tuple[MessageQueue, int, int]], start_offset: int | None, count: int
) -> list[QueueRange]:
    """Split ``count`` messages over queues in order: each queue's ``[min, max)`` (already
    narrowed by time), from ``start_offset`` if given, the older messages first."""
    plans: list[QueueRange] = []
    left = count
    for queue, low, high in bounds:
        if left <= 0:
            break
        begin = max(low, start_offset) if start_offset is not None else low
        end = min(high, begin + left)
        if end <= begin:
            continue
        plans.append(QueueRange(queue, begin, end))
        left -= end - begin
    return plans


def _configure_consume(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("-t", "--topic", required=True, help="topic name")
    add("-b", "--brokerName", dest="broker_name", help="broker name (with -i)")
    add("-i", "--queueId", dest="queue_id", type=int, help="queue id (needs -b)")
    add("-o", "--offset", type=int, help="first queue offset (needs -i)")
    add(
        "-g",
        "--consumerGroup",
        dest="group",
        default=TOOLS_CONSUMER_GROUP,
        help=f"consumer group of the pulls (default {TOOLS_CONSUMER_GROUP})",
    )
    add(
        "-s",
        "--beginTimestamp",
        dest="begin",
        type=_timestamp,
        metavar="MILLIS|yyyy-MM-dd#HH:mm:ss:SSS",
        help="messages stored from this time",
    )
    add(
        "-e",
        "--endTimestamp",
        dest="end",
        type=_timestamp,
        metavar="MILLIS|yyyy-MM-dd#HH:mm:ss:SSS",
        help="messages stored up to this time",
    )
    add(
        "-c",
        "--MessageNumber",
        dest="count",
        type=int,
        default=128,
        help="at most this many messages (default 128)",
    )


def _check_consume_args(args: argparse.Namespace, now_ms: int) -> None:
    if args.count <= 0:
        raise UsageError("Please input a positive messageNumber!")
    if args.queue_id is not None and args.broker_name is None:
        raise UsageError("Please set the brokerName before queueId!")
    if args.offset is not None and args.queue_id is None:
        raise UsageError("Please set queueId before offset!")
    if args.begin is not None and args.begin > now_ms:
        raise UsageError("Please set the beginTimestamp before now!")
    if args.end is not None and args.end > now_ms:
        raise UsageError("Please set the endTimestamp before now!")
    if args.begin is not None and args.end is not None and args.begin > args.end:
        raise UsageError("the beginTimestamp must not be after the endTimestamp")


async def _bounds(
    session: Session, queue: MessageQueue, addr: str
) -> tuple[MessageQueue, int, int]:
    admin, args = session.admin, session.args
    low = await admin.min_offset(queue, broker_addr=addr)
    high = await admin.max_offset(queue, broker_addr=addr)
    if args.begin is not None:
        low = max(low, await admin.search_offset(queue, args.begin, broker_addr=addr))
    if args.end is not None:
        high = min(high, await admin.search_offset(queue, args.end, broker_addr=addr) + 1)
    return queue, low, high


async def _consume_message(session: Session) -> None:
    admin, args = session.admin, session.args
    _check_consume_args(args, _now_ms())
    addrs = await admin.broker_addrs(args.topic)
    if args.broker_name is not None and args.queue_id is not None:
        if BrokerName(args.broker_name) not in addrs:
            raise MQClientError(f"broker {args.broker_name!r} is not in {args.topic}'s route")
        queues = [MessageQueue(args.topic, args.broker_name, args.queue_id)]
    else:
        route = await admin.topic_route(args.topic)
        queues = [
            MessageQueue(args.topic, data.broker_name, queue_id)
            for data in sorted(route.queue_datas, key=lambda q: q.broker_name)
            if permission.is_readable(data.perm) and data.broker_name in addrs
            for queue_id in range(data.read_queue_nums)
        ]
    bounds = [await _bounds(session, q, addrs[BrokerName(q.broker_name)]) for q in queues]
    data: list[dict[str, Any]] = []
    for plan in plan_ranges(bounds, args.offset, args.count):
        name = BrokerName(plan.queue.broker_name)
        for message in await _read(session, plan, addrs[name]):
            data.append({"brokerName": name, **render.message_json(message)})
    rows = [
        [
            d["brokerName"],
            d["queueId"],
            d["queueOffset"],
            d["msgId"],
            d["tags"] or "",
            " ".join(d["keys"]),
            d["body"],
        ]
        for d in data
    ]
    text = render.table(
        ["#Broker Name", "#QID", "#Offset", "#MsgId", "#Tags", "#Keys", "#Body"], rows
    )
    session.emit(data, f"{text}\n\n{len(data)} messages")


async def _read(session: Session, plan: QueueRange, addr: str) -> list[MessageExt]:
    """Pull ``plan``'s offsets in order; stops early when the broker has no more."""
    args = session.args
    out: list[MessageExt] = []
    offset = plan.begin
    while offset < plan.end:
        want = min(PULL_BATCH, plan.end - offset)
        result = await session.admin.pull(
            plan.queue, offset, want, group=args.group, broker_addr=addr
        )
        if result.status != PullStatus.FOUND or result.next_begin_offset <= offset:
            break
        for message in result.messages:
            if message.queue_offset >= plan.end:
                continue
            if args.begin is not None and message.store_timestamp < args.begin:
                continue
            if args.end is not None and message.store_timestamp > args.end:
                continue
            out.append(message)
        offset = result.next_begin_offset
    return out


SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand("queryMsgById", "show a message by its id", _configure_by_id, _query_by_id),
    Subcommand("queryMsgByKey", "find messages by key", _configure_by_key, _query_by_key),
    Subcommand("sendMessage", "send one message", _configure_send, _send_message),
    Subcommand(
        "consumeMessage",
        "print a topic's messages (plain pulls, nothing committed)",
        _configure_consume,
        _consume_message,
    ),
)
