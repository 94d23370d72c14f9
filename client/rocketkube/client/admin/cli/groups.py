"""Group subcommands: updateSubGroup, deleteSubGroup, consumerProgress, consumerConnection,
consumerStatus, producerConnection, resetOffsetByTime.

Flags are mqadmin's (``tools/.../command/{consumer,connection,offset}/``, RocketMQ 4.9.8).
``consumerProgress`` without ``-g`` lists every group that has a ``%RETRY%`` topic, with
its online client count and total lag, as mqadmin does; with ``-s true`` it asks every
online client of the group for its running info (GET_CONSUMER_RUNNING_INFO, 307) to show
which client IP holds each queue. ``consumerStatus`` shows one client's running info
(``-i``) or lists the group's clients and whether they subscribe alike.
``resetOffsetByTime`` works for online and offline groups alike: the broker commits the
new offsets itself (see ``rocketkube.broker.processors.reset_offset``), so mqadmin's
fallback path is not needed.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from rocketkube.client.admin.cli import render
from rocketkube.client.admin.cli.base import (
    Session,
    Subcommand,
    UsageError,
    add_target,
    parse_bool,
    parse_timestamp_or_now,
)
from rocketkube.client.errors import MQBrokerError
from rocketkube.common.protocol.admin_bodies import (
    ClientConnection,
    ConsumerConnection,
    ConsumeStats,
    MessageQueue,
)
from rocketkube.common.protocol.running_info import (
    ConsumerRunningInfo,
    queue_warnings,
    same_subscriptions,
)
from rocketkube.common.remoting.codes import ResponseCode

__all__ = ["SUBCOMMANDS"]

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"


def _group(parser: argparse.ArgumentParser, flag: str = "--groupName") -> None:
    parser.add_argument("-g", flag, dest="group", required=True, help="consumer group name")


# -- updateSubGroup ----------------------------------------------------------------------------


def _configure_update(parser: argparse.ArgumentParser) -> None:
    add_target(parser, "create the subscription group")
    _group(parser)
    add = parser.add_argument
    add(
        "-s",
        "--consumeEnable",
        dest="consume_enable",
        default=True,
        type=parse_bool,
        metavar="true|false",
        help="consuming allowed (default true)",
    )
    add(
        "-m",
        "--consumeFromMinEnable",
        dest="consume_from_min_enable",
        default=True,
        type=parse_bool,
        metavar="true|false",
        help="a new group starts from the min offset (default true)",
    )
    add(
        "-d",
        "--consumeBroadcastEnable",
        dest="consume_broadcast_enable",
        default=True,
        type=parse_bool,
        metavar="true|false",
        help="broadcasting allowed (default true)",
    )
    add(
        "-q",
        "--retryQueueNums",
        dest="retry_queue_nums",
        type=int,
        default=1,
        help="retry queue count (default 1)",
    )
    add(
        "-r",
        "--retryMaxTimes",
        dest="retry_max_times",
        type=int,
        default=16,
        help="deliveries before the dead-letter queue (default 16)",
    )
    add(
        "-i",
        "--brokerId",
        dest="broker_id",
        type=int,
        default=0,
        help="the broker id consumers read from (default 0)",
    )
    add(
        "-w",
        "--whichBrokerWhenConsumeSlowly",
        dest="which_broker_when_consume_slowly",
        type=int,
        default=1,
        help="the broker id to read from when lagging (default 1)",
    )
    add(
        "-a",
        "--notifyConsumerIdsChanged",
        dest="notify_consumer_ids_changed",
        default=True,
        type=parse_bool,
        metavar="true|false",
        help="tell consumers when the group changes (default true)",
    )


async def _update_sub_group(session: Session) -> None:
    args, admin = session.args, session.admin
    addrs = await admin.cluster_brokers(args.cluster) if args.cluster else [args.broker_addr]
    config = {
        "groupName": args.group,
        "consumeEnable": args.consume_enable,
        "consumeFromMinEnable": args.consume_from_min_enable,
        "consumeBroadcastEnable": args.consume_broadcast_enable,
        "retryQueueNums": args.retry_queue_nums,
        "retryMaxTimes": args.retry_max_times,
        "brokerId": args.broker_id,
        "whichBrokerWhenConsumeSlowly": args.which_broker_when_consume_slowly,
        "notifyConsumerIdsChangedEnable": args.notify_consumer_ids_changed,
    }
    await admin.create_subscription_group(
        args.group,
        cluster=args.cluster,
        broker_addr=args.broker_addr,
        consume_enable=args.consume_enable,
        consume_from_min_enable=args.consume_from_min_enable,
        consume_broadcast_enable=args.consume_broadcast_enable,
        retry_queue_nums=args.retry_queue_nums,
        retry_max_times=args.retry_max_times,
        broker_id=args.broker_id,
        which_broker_when_consume_slowly=args.which_broker_when_consume_slowly,
        notify_consumer_ids_changed_enable=args.notify_consumer_ids_changed,
    )
    lines = [f"create subscription group to {addr} success." for addr in addrs]
    fields = ", ".join(
        f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in config.items()
    )
    lines.append(f"SubscriptionGroupConfig [{fields}]")
    session.emit({"brokers": addrs, "subscriptionGroupConfig": config}, "\n".join(lines))


# -- deleteSubGroup ----------------------------------------------------------------------------


def _configure_delete(parser: argparse.ArgumentParser) -> None:
    add_target(parser, "delete the subscription group")
    _group(parser)
    parser.add_argument(
        "-r",
        "--removeOffset",
        dest="remove_offset",
        type=parse_bool,
        default=False,
        metavar="true|false",
        help="also remove the group's consumer offsets (default false)",
    )


async def _delete_sub_group(session: Session) -> None:
    """With ``-c`` the group's retry and dead-letter topics go too, as with mqadmin."""
    args, admin = session.args, session.admin
    group = args.group
    await admin.delete_subscription_group(
        group, args.cluster, broker_addr=args.broker_addr, remove_offset=args.remove_offset
    )
    where = f"cluster [{args.cluster}]" if args.cluster else f"broker [{args.broker_addr}]"
    lines = [f"delete subscription group [{group}] from {where} success."]
    deleted_topics = []
    if args.cluster:
        existing = set(await admin.topic_list())
        for topic in (RETRY_PREFIX + group, DLQ_PREFIX + group):
            if topic in existing:
                await admin.delete_topic(topic, args.cluster)
                deleted_topics.append(topic)
                lines.append(f"delete topic [{topic}] from cluster [{args.cluster}] success.")
    data = {"group": group, "deleted": True, "deletedTopics": deleted_topics}
    session.emit(data, "\n".join(lines))


# -- consumerProgress --------------------------------------------------------------------------


def _configure_progress(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-g", "--groupName", dest="group", help="consumer group name")
    parser.add_argument(
        "-s",
        "--showClientIP",
        dest="show_client_ip",
        type=parse_bool,
        default=False,
        metavar="true|false",
        help="true: a Client IP column, which online client holds each queue",
    )


async def _consumer_progress(session: Session) -> None:
    admin = session.admin
    group = session.args.group
    if group:
        stats = await admin.consume_stats(group)
        ips = await _client_ips(session, group) if session.args.show_client_ip else None
        session.emit(
            render.consume_stats_json(stats, ips),
            render.consumer_progress_text(stats, client_ips=ips),
        )
        return
    rows: list[list[object]] = []
    data: list[dict[str, Any]] = []
    for topic in sorted(await admin.topic_list()):
        if not topic.startswith(RETRY_PREFIX):
            continue
        name = topic[len(RETRY_PREFIX) :]
        group_stats, cc = await _group_state(session, name)
        count = len(cc.connections) if cc else 0
        version = min((c.version for c in cc.connections), default=0) if cc else 0
        entry = {
            "group": name,
            "count": count,
            "version": version if count else "OFFLINE",
            "consumeType": cc.consume_type.name if cc else "",
            "messageModel": cc.message_model.name if cc else "",
            "consumeTps": int(group_stats.consume_tps) if group_stats else 0,
            "diffTotal": group_stats.diff_total if group_stats else 0,
        }
        data.append(entry)
        rows.append(
            [
                name,
                count,
                entry["version"],
                "PULL"
                if cc and cc.consume_type.name == "CONSUME_ACTIVELY"
                else ("PUSH" if cc else ""),
                entry["messageModel"],
                entry["consumeTps"],
                entry["diffTotal"],
            ]
        )
    text = render.table(
        ["#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total"], rows
    )
    session.emit(data, text)


async def _group_state(
    session: Session, group: str
) -> tuple[ConsumeStats | None, ConsumerConnection | None]:
    """The group's stats and connections; either is None when the brokers refuse it (an
    offline group has no connections), as mqadmin skips what it cannot read."""
    admin = session.admin
    try:
        stats: ConsumeStats | None = await admin.consume_stats(group)
    except MQBrokerError:
        stats = None
    try:
        cc: ConsumerConnection | None = await admin.consumer_connections(group)
    except MQBrokerError as exc:
        if exc.code != ResponseCode.CONSUMER_NOT_ONLINE:
            raise
        cc = None
    return stats, cc


async def _client_ips(session: Session, group: str) -> dict[MessageQueue, str]:
    """Queue -> the IP part of the id of the online client holding it (Java
    ``getMessageQueueAllocationResult``); a client that does not answer is left out."""
    admin = session.admin
    try:
        cc = await admin.consumer_connections(group)
    except MQBrokerError as exc:
        if exc.code != ResponseCode.CONSUMER_NOT_ONLINE:
            raise
        return {}
    held: dict[MessageQueue, str] = {}
    client_ids = sorted(conn.client_id for conn in cc.connections)
    for client_id, info in (await admin.consumers_running_info(group, client_ids)).items():
        if isinstance(info, ConsumerRunningInfo):
            for mq in info.mq_table:
                held[mq] = client_id.split("@")[0]
    return held


# -- consumerStatus ----------------------------------------------------------------------------


def _configure_consumer_status(parser: argparse.ArgumentParser) -> None:
    _group(parser, "--consumerGroup")
    parser.add_argument("-i", "--clientId", dest="client_id", help="this client only")
    parser.add_argument(
        "-b", "--brokerAddr", dest="broker_addr", help="list the clients this broker knows"
    )
    parser.add_argument(
        "-s",
        "--jstack",
        dest="jstack",
        action="store_true",
        help="include the client's stacks (its asyncio tasks and threads, or Java's jstack)",
    )


async def _consumer_status(session: Session) -> None:
    args, admin = session.args, session.admin
    if args.client_id:
        info = await admin.consumer_running_info(args.group, args.client_id, jstack=args.jstack)
        session.emit(render.running_info_json(info), render.running_info_text(info))
        return
    cc = await admin.consumer_connections(args.group, broker_addr=args.broker_addr)
    rows: list[tuple[ClientConnection, ConsumerRunningInfo | str]] = []
    infos: dict[str, ConsumerRunningInfo] = {}
    connections = sorted(cc.connections, key=lambda c: c.client_id)
    answers = await admin.consumers_running_info(
        args.group, [conn.client_id for conn in connections], jstack=args.jstack
    )
    for conn in connections:
        answer = answers[conn.client_id]
        if isinstance(answer, MQBrokerError):
            rows.append((conn, " ".join(f"{answer.remark or answer}".split())))
            continue
        infos[conn.client_id] = answer
        rows.append((conn, answer))
    same = same_subscriptions(infos) if infos else None
    now_ms = time.time_ns() // 1_000_000
    warnings = [w for cid, info in infos.items() for w in queue_warnings(cid, info, now_ms)]
    data = {
        "group": args.group,
        "clients": [
            {
                **render.connections_json([conn])[0],
                **(
                    {"runningInfo": render.running_info_json(info)}
                    if isinstance(info, ConsumerRunningInfo)
                    else {"error": info}
                ),
            }
            for conn, info in rows
        ],
        "sameSubscription": same,
        "warnings": warnings,
    }
    session.emit(data, render.consumer_status_text(rows, same, warnings))


# -- consumerConnection / producerConnection ---------------------------------------------------


def _configure_consumer_connection(parser: argparse.ArgumentParser) -> None:
    _group(parser, "--consumerGroup")
    parser.add_argument("-b", "--brokerAddr", dest="broker_addr", help="ask this broker only")


async def _consumer_connection(session: Session) -> None:
    cc = await session.admin.consumer_connections(
        session.args.group, broker_addr=session.args.broker_addr
    )
    session.emit(render.consumer_connection_json(cc), render.consumer_connection_text(cc))


def _configure_producer_connection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-g", "--producerGroup", dest="group", required=True, help="producer group name"
    )
    parser.add_argument("-t", "--topic", required=True, help="a topic the group sends to")


async def _producer_connection(session: Session) -> None:
    pc = await session.admin.producer_connections(session.args.group, session.args.topic)
    session.emit(render.connections_json(pc.connections), render.connections_text(pc.connections))


# -- resetOffsetByTime -------------------------------------------------------------------------


def _configure_reset(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-g", "--group", required=True, help="consumer group name")
    parser.add_argument("-t", "--topic", required=True, help="topic name")
    parser.add_argument(
        "-s",
        "--timestamp",
        required=True,
        type=parse_timestamp_or_now,
        metavar="now|MILLIS|yyyy-MM-dd#HH:mm:ss:SSS",
        help="reset to the offsets at this time (now: the max offsets)",
    )
    parser.add_argument(
        "-f",
        "--force",
        type=parse_bool,
        default=True,
        metavar="true|false",
        help="also move offsets forward (default true)",
    )
    parser.add_argument(
        "-c",
        "--cplus",
        action="store_true",
        help="accepted for mqadmin compatibility: C++ consumers are told "
        "in their own format anyway",
    )


async def _reset_offset_by_time(session: Session) -> None:
    args = session.args
    if args.timestamp < -1:
        raise UsageError(f"timestamp must be 'now' or >= 0, not {args.timestamp}")
    offsets = await session.admin.reset_offset_by_timestamp(
        args.topic, args.group, args.timestamp, force=args.force
    )
    head = (
        f"rollback consumer offset by specified group[{args.group}], topic[{args.topic}], "
        f"force[{str(args.force).lower()}], timestamp(long)[{args.timestamp}]"
    )
    data = {
        "group": args.group,
        "topic": args.topic,
        "timestamp": args.timestamp,
        "force": args.force,
        "offsets": render.reset_offsets_json(offsets),
    }
    session.emit(data, f"{head}\n{render.reset_offsets_text(offsets)}")


SUBCOMMANDS = (
    Subcommand(
        "updateSubGroup",
        "create or update a subscription group",
        _configure_update,
        _update_sub_group,
    ),
    Subcommand(
        "deleteSubGroup", "delete a subscription group", _configure_delete, _delete_sub_group
    ),
    Subcommand(
        "consumerProgress",
        "a group's offsets and lag (every group without -g)",
        _configure_progress,
        _consumer_progress,
    ),
    Subcommand(
        "consumerConnection",
        "a consumer group's online clients and subscriptions",
        _configure_consumer_connection,
        _consumer_connection,
    ),
    Subcommand(
        "consumerStatus",
        "a consumer's running info (-i), or the group's clients and whether they agree",
        _configure_consumer_status,
        _consumer_status,
    ),
    Subcommand(
        "producerConnection",
        "a producer group's online clients",
        _configure_producer_connection,
        _producer_connection,
    ),
    Subcommand(
        "resetOffsetByTime",
        "move a group's offsets on a topic to a point in time",
        _configure_reset,
        _reset_offset_by_time,
    ),
)
