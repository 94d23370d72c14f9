"""Pure rendering for ``rocketkube admin``: data in, text (aligned tables) or JSON out.

Tables keep mqadmin's column names (``#Broker Name``, ``#QID``, ...) so people find what
they are used to; columns are as wide as their widest cell, two spaces apart. The JSON forms
use RocketMQ's camelCase field names. Times are shown in local time unless ``tz`` is given.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rocketkube.common.message.model import MessageExt
from rocketkube.common.protocol import permission
from rocketkube.common.protocol.admin_bodies import (
    ClientConnection,
    ConsumerConnection,
    ConsumeStats,
    MessageQueue,
    TopicStatsTable,
)
from rocketkube.common.protocol.route import TopicRouteData
from rocketkube.common.protocol.topic_config import TopicConfig

__all__ = [
    "connections_json",
    "connections_text",
    "consume_stats_json",
    "consumer_connection_json",
    "consumer_connection_text",
    "consumer_progress_text",
    "human_time",
    "key_values",
    "message_json",
    "message_text",
    "offset_msg_id",
    "queue_json",
    "reset_offsets_json",
    "reset_offsets_text",
    "table",
    "topic_config_text",
    "topic_route_table",
    "topic_stats_json",
    "topic_status_text",
]

Tz = datetime.tzinfo | None


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """An aligned table: a header line, then one line per row; numbers right-aligned."""
    cells = [[str(h) for h in headers]]
    numeric = [True] * len(headers)
    for row in rows:
        cells.append(["" if v is None else str(v) for v in row])
        for i, value in enumerate(row):
            if not isinstance(value, int | float) or isinstance(value, bool):
                numeric[i] = False
    widths = [max(len(line[i]) for line in cells) for i in range(len(headers))]
    lines = []
    for index, line in enumerate(cells):
        parts = [
            text.rjust(widths[i]) if numeric[i] and index > 0 else text.ljust(widths[i])
            for i, text in enumerate(line)
        ]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def key_values(pairs: Iterable[tuple[str, object]]) -> str:
    """``key: value`` lines with the colons aligned (mqadmin's brokerStatus layout)."""
    items = [(k, "" if v is None else str(v)) for k, v in pairs]
    width = max((len(k) for k, _ in items), default=0)
    return "\n".join(f"{k.ljust(width)}: {v}".rstrip() for k, v in items)


def human_time(ms: int, tz: Tz = None) -> str:
    """``yyyy-MM-dd HH:mm:ss,SSS`` (Java ``UtilAll.timeMillisToHumanString2``); "" for <= 0."""
    if ms <= 0:
        return ""
    when = datetime.datetime.fromtimestamp(ms / 1000, tz)
    return when.strftime("%Y-%m-%d %H:%M:%S,") + f"{ms % 1000:03d}"


# -- topics ------------------------------------------------------------------------------------


def topic_config_text(config: TopicConfig) -> str:
    """Java ``TopicConfig.toString()``, what mqadmin prints after updateTopic."""
    return (
        f"TopicConfig [topicName={config.topic_name}, readQueueNums={config.read_queue_nums}, "
        f"writeQueueNums={config.write_queue_nums}, perm={permission.perm_to_string(config.perm)}, "
        f"topicFilterType={config.topic_filter_type}, topicSysFlag={config.topic_sys_flag}, "
        f"order={str(config.order).lower()}]"
    )


def topic_route_table(route: TopicRouteData) -> str:
    """mqadmin ``topicRoute -l``: one line per broker, then the totals."""
    queues = {q.broker_name: q for q in route.queue_datas}
    rows: list[list[object]] = []
    total_read = total_write = 0
    for broker in sorted(route.broker_datas, key=lambda b: b.broker_name):
        data = queues.get(broker.broker_name)
        read = data.read_queue_nums if data else 0
        write = data.write_queue_nums if data else 0
        total_read += read
        total_write += write
        addrs = "{" + ", ".join(f"{k}={v}" for k, v in sorted(broker.broker_addrs.items())) + "}"
        perm = data.perm if data else 0
        rows.append([broker.cluster, broker.broker_name, addrs, read, write, perm])
    text = table(
        ["#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm"], rows
    )
    return (
        f"{text}\n\nTotal: {len(rows)} brokers, {total_read} read queues, "
        f"{total_write} write queues"
    )


def queue_json(mq: MessageQueue) -> dict[str, Any]:
    return {"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id}


def topic_stats_json(stats: TopicStatsTable) -> list[dict[str, Any]]:
    return [
        {
            **queue_json(mq),
            "minOffset": o.min_offset,
            "maxOffset": o.max_offset,
            "lastUpdateTimestamp": o.last_update_timestamp,
        }
        for mq, o in sorted(stats.offset_table.items())
    ]


def topic_status_text(stats: TopicStatsTable, tz: Tz = None) -> str:
    """mqadmin ``topicStatus``: min/max offset and last store time per queue."""
    rows = [
        [
            mq.broker_name,
            mq.queue_id,
            o.min_offset,
            o.max_offset,
            human_time(o.last_update_timestamp, tz),
        ]
        for mq, o in sorted(stats.offset_table.items())
    ]
    return table(["#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated"], rows)


# -- groups ------------------------------------------------------------------------------------


def consume_stats_json(stats: ConsumeStats) -> dict[str, Any]:
    return {
        "consumeTps": stats.consume_tps,
        "diffTotal": stats.diff_total,
        "offsets": [
            {
                **queue_json(mq),
                "brokerOffset": w.broker_offset,
                "consumerOffset": w.consumer_offset,
                "diff": w.broker_offset - w.consumer_offset,
                "lastTimestamp": w.last_timestamp,
            }
            for mq, w in sorted(stats.offset_table.items())
        ],
    }


def consumer_progress_text(stats: ConsumeStats, tz: Tz = None) -> str:
    """mqadmin ``consumerProgress -g``: offsets and lag per queue, then the totals."""
    rows = []
    for mq, w in sorted(stats.offset_table.items()):
        last = human_time(w.last_timestamp, tz) if w.last_timestamp else "N/A"
        rows.append(
            [
                mq.topic,
                mq.broker_name,
                mq.queue_id,
                w.broker_offset,
                w.consumer_offset,
                w.broker_offset - w.consumer_offset,
                last,
            ]
        )
    text = table(
        [
            "#Topic",
            "#Broker Name",
            "#QID",
            "#Broker Offset",
            "#Consumer Offset",
            "#Diff",
            "#LastTime",
        ],
        rows,
    )
    return f"{text}\n\nConsume TPS: {stats.consume_tps:.2f}\nDiff Total: {stats.diff_total}"


def _connections_rows(connections: Sequence[ClientConnection]) -> list[list[object]]:
    ordered = sorted(connections, key=lambda c: (c.client_id, c.client_addr))
    return [[c.client_id, c.client_addr, c.language, c.version] for c in ordered]


def connections_json(connections: Sequence[ClientConnection]) -> list[dict[str, Any]]:
    ordered = sorted(connections, key=lambda c: (c.client_id, c.client_addr))
    return [
        {
            "clientId": c.client_id,
            "clientAddr": c.client_addr,
            "language": c.language,
            "version": c.version,
        }
        for c in ordered
    ]


def connections_text(connections: Sequence[ClientConnection]) -> str:
    return table(
        ["#ClientId", "#ClientAddr", "#Language", "#Version"], _connections_rows(connections)
    )


def consumer_connection_json(cc: ConsumerConnection) -> dict[str, Any]:
    return {
        "connections": connections_json(cc.connections),
        "subscriptions": {t: cc.subscriptions[t].sub_string for t in sorted(cc.subscriptions)},
        "consumeType": cc.consume_type.name,
        "messageModel": cc.message_model.name,
        "consumeFromWhere": cc.consume_from_where.name,
    }


def consumer_connection_text(cc: ConsumerConnection) -> str:
    """mqadmin ``consumerConnection``: the channels, the subscriptions, the group's modes."""
    subs = table(
        ["#Topic", "#SubExpression"],
        [[t, cc.subscriptions[t].sub_string] for t in sorted(cc.subscriptions)],
    )
    modes = key_values(
        [
            ("ConsumeType", cc.consume_type.name),
            ("MessageModel", cc.message_model.name),
            ("ConsumeFromWhere", cc.consume_from_where.name),
        ]
    )
    return f"{connections_text(cc.connections)}\n\nBelow is subscription:\n{subs}\n\n{modes}"


def reset_offsets_json(offsets: Mapping[MessageQueue, int]) -> list[dict[str, Any]]:
    return [{**queue_json(mq), "offset": offset} for mq, offset in sorted(offsets.items())]


def reset_offsets_text(offsets: Mapping[MessageQueue, int]) -> str:
    rows = [[mq.broker_name, mq.queue_id, off] for mq, off in sorted(offsets.items())]
    return table(["#brokerName", "#queueId", "#offset"], rows)


# -- messages ----------------------------------------------------------------------------------


def _body_text(body: bytes) -> str:
    return body.decode("utf-8", errors="replace")


def offset_msg_id(msg: MessageExt) -> str:
    """The broker's offset id of a stored message; empty without a usable store host."""
    try:
        return msg.msg_id
    except ValueError:  # MessageFormatError is a ValueError
        return ""


def message_json(msg: MessageExt) -> dict[str, Any]:
    return {
        "msgId": msg.unique_key or offset_msg_id(msg),
        "offsetMsgId": offset_msg_id(msg),
        "topic": msg.topic,
        "tags": msg.tags,
        "keys": msg.keys,
        "queueId": msg.queue_id,
        "queueOffset": msg.queue_offset,
        "commitLogOffset": msg.commit_log_offset,
        "reconsumeTimes": msg.reconsume_times,
        "bornTimestamp": msg.born_timestamp,
        "storeTimestamp": msg.store_timestamp,
        "bornHost": msg.born_host,
        "storeHost": msg.store_host,
        "sysFlag": msg.sys_flag,
        "properties": dict(msg.properties),
        "body": _body_text(msg.body),
    }


def message_text(msg: MessageExt, tz: Tz = None) -> str:
    """mqadmin ``queryMsgById``'s detail block; the body is printed, not written to a file."""
    return key_values(
        [
            ("OffsetID", offset_msg_id(msg)),
            ("MsgId", msg.unique_key or ""),
            ("Topic", msg.topic),
            ("Tags", f"[{msg.tags or ''}]"),
            ("Keys", f"[{' '.join(msg.keys)}]"),
            ("Queue ID", msg.queue_id),
            ("Queue Offset", msg.queue_offset),
            ("CommitLog Offset", msg.commit_log_offset),
            ("Reconsume Times", msg.reconsume_times),
            ("Born Timestamp", human_time(msg.born_timestamp, tz)),
            ("Store Timestamp", human_time(msg.store_timestamp, tz)),
            ("Born Host", msg.born_host),
            ("Store Host", msg.store_host),
            ("System Flag", msg.sys_flag),
            ("Properties", dict(msg.properties)),
            ("Message Body", _body_text(msg.body)),
        ]
    )
