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
from rocketkube.common.protocol.running_info import ConsumerRunningInfo
from rocketkube.common.protocol.topic_config import TopicConfig

__all__ = [
    "connections_json",
    "connections_text",
    "consume_stats_json",
    "consumer_connection_json",
    "consumer_connection_text",
    "consumer_progress_text",
    "consumer_status_text",
    "human_time",
    "key_values",
    "message_json",
    "message_text",
    "offset_msg_id",
    "queue_json",
    "reset_offsets_json",
    "reset_offsets_text",
    "running_info_json",
    "running_info_text",
    "table",
    "topic_config_text",
    "topic_route_table",
    "topic_stats_json",
    "topic_status_text",
]

Tz = datetime.tzinfo | None
#: What mqadmin shows where there is no value (a queue no client holds).
NOT_AVAILABLE = "N/A"


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


def consume_stats_json(
    stats: ConsumeStats, client_ips: Mapping[MessageQueue, str] | None = None
) -> dict[str, Any]:
    """With ``client_ips`` (``-s true``) every queue also has ``clientIp`` ("N/A": none)."""
    offsets = []
    for mq, w in sorted(stats.offset_table.items()):
        entry: dict[str, Any] = {
            **queue_json(mq),
            "brokerOffset": w.broker_offset,
            "consumerOffset": w.consumer_offset,
            "diff": w.broker_offset - w.consumer_offset,
            "lastTimestamp": w.last_timestamp,
        }
        if client_ips is not None:
            entry["clientIp"] = client_ips.get(mq, NOT_AVAILABLE)
        offsets.append(entry)
    return {"consumeTps": stats.consume_tps, "diffTotal": stats.diff_total, "offsets": offsets}


def consumer_progress_text(
    stats: ConsumeStats, tz: Tz = None, client_ips: Mapping[MessageQueue, str] | None = None
) -> str:
    """mqadmin ``consumerProgress -g``: offsets and lag per queue, then the totals; with
    ``client_ips`` (``-s true``) a "#Client IP" column: who holds each queue, or "N/A"."""
    rows = []
    for mq, w in sorted(stats.offset_table.items()):
        last = human_time(w.last_timestamp, tz) if w.last_timestamp else "N/A"
        row: list[object] = [mq.topic, mq.broker_name, mq.queue_id, w.broker_offset]
        row.append(w.consumer_offset)
        if client_ips is not None:
            row.append(client_ips.get(mq, NOT_AVAILABLE))
        row += [w.broker_offset - w.consumer_offset, last]
        rows.append(row)
    headers = ["#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset"]
    if client_ips is not None:
        headers.append("#Client IP")
    text = table([*headers, "#Diff", "#LastTime"], rows)
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


def running_info_json(info: ConsumerRunningInfo) -> dict[str, Any]:
    """The whole running info, its queue table as a list (JSON has no object keys)."""
    data: dict[str, Any] = {
        "properties": dict(info.properties),
        "subscriptionSet": [s.to_json() for s in info.subscriptions],
        "mqTable": [{**queue_json(mq), **pq.to_json()} for mq, pq in info.mq_table.items()],
        "statusTable": {topic: st.to_json() for topic, st in info.status_table.items()},
    }
    if info.jstack is not None:
        data["jstack"] = info.jstack
    return data


def running_info_text(info: ConsumerRunningInfo, tz: Tz = None) -> str:
    """mqadmin ``consumerStatus -i`` (Java ``ConsumerRunningInfo.formatString``): the
    properties, subscriptions, queues with their cache and times, and per-topic figures."""
    subs = table(
        ["#Topic", "#ClassFilter", "#SubExpression"],
        [[s.topic, str(s.class_filter_mode).lower(), s.sub_string] for s in info.subscriptions],
    )
    queues = table(
        [
            "#Topic",
            "#Broker Name",
            "#QID",
            "#Consumer Offset",
            "#Cached",
            "#Cached MiB",
            "#Locked",
            "#Dropped",
            "#Last Pull",
            "#Last Consume",
        ],
        [
            [
                mq.topic,
                mq.broker_name,
                mq.queue_id,
                pq.commit_offset,
                pq.cached_msg_count,
                pq.cached_msg_size_in_mib,
                str(pq.locked).lower(),
                str(pq.dropped).lower(),
                human_time(pq.last_pull_timestamp, tz) or NOT_AVAILABLE,
                human_time(pq.last_consume_timestamp, tz) or NOT_AVAILABLE,
            ]
            for mq, pq in info.mq_table.items()
        ],
    )
    status = table(
        ["#Topic", "#Pull RT", "#Pull TPS", "#Consume RT", "#Consume OK TPS",
         "#Consume Failed TPS", "#Consume Failed Msgs (1h)"],
        [
            [topic, f"{st.pull_rt:.2f}", f"{st.pull_tps:.2f}", f"{st.consume_rt:.2f}",
             f"{st.consume_ok_tps:.2f}", f"{st.consume_failed_tps:.2f}", st.consume_failed_msgs]
            for topic, st in info.status_table.items()
        ],
    )  # fmt: skip
    parts = [
        f"#Consumer Properties#\n{key_values(sorted(info.properties.items()))}",
        f"#Consumer Subscription#\n{subs}",
        f"#Consumer MQ Detail#\n{queues}",
        f"#Consumer RT&TPS#\n{status}",
    ]
    if info.jstack is not None:
        parts.append(f"#Consumer jstack#\n{info.jstack.rstrip()}")
    return "\n\n".join(parts)


def consumer_status_text(
    rows: Sequence[tuple[ClientConnection, ConsumerRunningInfo | str]],
    same: bool | None,
    warnings: Sequence[str] = (),
) -> str:
    """mqadmin ``consumerStatus`` without ``-i``: each client (or why it did not answer),
    whether the clients subscribe alike (``same`` None: no client answered), and the
    queues that look stuck (when they do subscribe alike, as mqadmin)."""
    lines = table(
        ["#Index", "#ClientId", "#Version", "#Queues", "#Status"],
        [
            [
                index,
                conn.client_id,
                conn.version,
                len(info.mq_table) if isinstance(info, ConsumerRunningInfo) else "",
                "OK" if isinstance(info, ConsumerRunningInfo) else info,
            ]
            for index, (conn, info) in enumerate(rows, start=1)
        ],
    )
    if same is None:
        return lines
    verdict = (
        "Same subscription in the same group of consumer"
        if same
        else "WARN: Different subscription in the same group of consumer!!!"
    )
    if same and warnings:
        verdict += "\n" + "\n".join(warnings)
    return f"{lines}\n\n{verdict}"


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
