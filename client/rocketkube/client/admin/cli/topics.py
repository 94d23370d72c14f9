"""Topic subcommands: updateTopic, deleteTopic, topicList, topicRoute, topicStatus.

Flags are mqadmin's (``tools/.../command/topic/*SubCommand.java``, RocketMQ 4.9.8).
``updateTopic -o true`` also writes the ``ORDER_TOPIC_CONFIG`` KV entry
(``brokerName:queueNums;...``) on the name servers, as mqadmin does, so the route of an
ordered topic carries its queue layout.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from rocketkube.client.admin.cli import render
from rocketkube.client.admin.cli.base import Session, Subcommand, add_target, parse_bool
from rocketkube.client.errors import MQClientError
from rocketkube.common.protocol import permission

__all__ = ["SUBCOMMANDS"]

#: The name server KV namespace of ordered topics' queue layouts (Java NamesrvUtil).
ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


def _topic(parser: argparse.ArgumentParser, what: str = "topic name") -> None:
    parser.add_argument("-t", "--topic", required=True, help=what)


# -- updateTopic -------------------------------------------------------------------------------


def _configure_update(parser: argparse.ArgumentParser) -> None:
    add_target(parser, "create the topic")
    _topic(parser)
    add = parser.add_argument
    add(
        "-r",
        "--readQueueNums",
        dest="read_queue_nums",
        type=int,
        default=8,
        help="read queue count (default 8)",
    )
    add(
        "-w",
        "--writeQueueNums",
        dest="write_queue_nums",
        type=int,
        default=8,
        help="write queue count (default 8)",
    )
    add(
        "-p",
        "--perm",
        type=int,
        default=6,
        choices=(2, 4, 6),
        help="permission: 2 W, 4 R, 6 RW (default 6)",
    )
    add(
        "-o",
        "--order",
        type=parse_bool,
        default=False,
        metavar="true|false",
        help="an ordered topic",
    )
    add("-u", "--unit", type=parse_bool, default=False, metavar="true|false", help="a unit topic")
    add(
        "-s",
        "--hasUnitSub",
        dest="has_unit_sub",
        type=parse_bool,
        default=False,
        metavar="true|false",
        help="has unit subscriptions",
    )


async def _update_topic(session: Session) -> None:
    args, admin = session.args, session.admin
    sys_flag = (permission.FLAG_UNIT if args.unit else 0) | (
        permission.FLAG_UNIT_SUB if args.has_unit_sub else 0
    )
    if args.cluster is not None:
        addrs = await admin.cluster_brokers(args.cluster)
    else:
        addrs = [args.broker_addr]
    config = await admin.create_topic(
        args.topic,
        cluster=args.cluster,
        broker_addr=args.broker_addr,
        read_queue_nums=args.read_queue_nums,
        write_queue_nums=args.write_queue_nums,
        perm=args.perm,
        order=args.order,
        topic_sys_flag=sys_flag,
    )
    lines = [f"create topic to {addr} success." for addr in addrs]
    data: dict[str, Any] = {"brokers": addrs, "topicConfig": config.to_json()}
    if args.order:
        order_conf = await _order_conf(session, addrs, args.write_queue_nums)
        await admin.put_kv_config(ORDER_TOPIC_CONFIG, args.topic, order_conf)
        lines.append(f"set orderConf. isOrder=true, orderConf=[{order_conf}]")
        data["orderConf"] = order_conf
    lines.append(render.topic_config_text(config))
    session.emit(data, "\n".join(lines))


async def _order_conf(session: Session, addrs: list[str], queues: int) -> str:
    """``brokerName:queueNums`` for each broker the topic was created on, ``;``-joined."""
    info = await session.admin.cluster_info()
    by_addr = {
        addr: name
        for name, data in info.broker_addr_table.items()
        for addr in data.broker_addrs.values()
    }
    unknown = [addr for addr in addrs if addr not in by_addr]
    if unknown:
        raise MQClientError(f"no name server knows the broker at {', '.join(unknown)}")
    return ";".join(f"{by_addr[addr]}:{queues}" for addr in sorted(addrs))


# -- deleteTopic -------------------------------------------------------------------------------


def _configure_delete(parser: argparse.ArgumentParser) -> None:
    _topic(parser)
    parser.add_argument(
        "-c",
        "--clusterName",
        dest="cluster",
        required=True,
        help="delete the topic from every master of this cluster",
    )


async def _delete_topic(session: Session) -> None:
    args = session.args
    await session.admin.delete_topic(args.topic, args.cluster)
    text = (
        f"delete topic [{args.topic}] from cluster [{args.cluster}] success.\n"
        f"delete topic [{args.topic}] from NameServer success."
    )
    session.emit({"topic": args.topic, "cluster": args.cluster, "deleted": True}, text)


# -- topicList ---------------------------------------------------------------------------------


def _configure_list(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-c",
        "--clusterModel",
        dest="cluster_model",
        action="store_true",
        help="also show each topic's cluster and consumer groups",
    )


async def _topic_list(session: Session) -> None:
    admin = session.admin
    topics = sorted(await admin.topic_list())
    if not session.args.cluster_model:
        session.emit(topics, "\n".join(topics))
        return
    rows: list[list[object]] = []
    data: list[dict[str, Any]] = []
    for topic in topics:
        if topic.startswith(("%RETRY%", "%DLQ%")):
            continue
        route = await admin.topic_route(topic)
        clusters = sorted({b.cluster for b in route.broker_datas})
        cluster = ",".join(clusters)
        groups: Sequence[str] = await admin.topic_consumed_by(topic) if route.broker_datas else []
        data.append({"cluster": cluster, "topic": topic, "groups": groups})
        rows.extend([cluster, topic, group] for group in groups or [""])
    session.emit(data, render.table(["#Cluster Name", "#Topic", "#Consumer Group"], rows))


# -- topicRoute --------------------------------------------------------------------------------


def _configure_route(parser: argparse.ArgumentParser) -> None:
    _topic(parser)
    parser.add_argument(
        "-l",
        "--list",
        dest="as_list",
        action="store_true",
        help="a table instead of the route's JSON",
    )


async def _topic_route(session: Session) -> None:
    route = await session.admin.topic_route(session.args.topic)
    data = route.to_json()
    if session.args.as_list:
        text = render.topic_route_table(route)
    else:
        text = json.dumps(data, indent=2, ensure_ascii=False)
    session.emit(data, text)


# -- topicStatus -------------------------------------------------------------------------------


async def _topic_status(session: Session) -> None:
    stats = await session.admin.topic_stats(session.args.topic)
    session.emit(render.topic_stats_json(stats), render.topic_status_text(stats))


SUBCOMMANDS = (
    Subcommand("updateTopic", "create or update a topic", _configure_update, _update_topic),
    Subcommand(
        "deleteTopic",
        "delete a topic from a cluster and the name servers",
        _configure_delete,
        _delete_topic,
    ),
    Subcommand("topicList", "list every topic", _configure_list, _topic_list),
    Subcommand("topicRoute", "show a topic's route", _configure_route, _topic_route),
    Subcommand(
        "topicStatus", "min/max offset and last update of each queue", _topic, _topic_status
    ),
)
