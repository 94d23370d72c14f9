"""Connected clients (ConsumerManager + ProducerManager): who is in which group, on which
connection, subscribed to what. Fed by HEART_BEAT and UNREGISTER_CLIENT, pruned when a
connection closes or stays silent past ``channelExpiredTimeout``.

A consumer group "changes" when a new channel joins, one leaves, or its topic set
changes; the ``on_group_changed`` hook is then told (the broker sends
NOTIFY_CONSUMER_IDS_CHANGED to every member from there).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from rocketkube.common.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    MessageModel,
    SubscriptionData,
)
from rocketkube.common.remoting.connection import Connection

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ClientChannel:
    conn: Connection
    client_id: str
    language: str
    version: int
    last_update_ms: int

    @property
    def client_addr(self) -> str:
        return self.conn.remote_address


@dataclass(slots=True)
class ConsumerGroupInfo:
    group: str
    consume_type: ConsumeType
    message_model: MessageModel
    consume_from_where: ConsumeFromWhere
    channels: dict[Connection, ClientChannel] = field(default_factory=dict)
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)
    last_update_ms: int = 0

    def client_ids(self) -> list[str]:
        return sorted({c.client_id for c in self.channels.values()})


GroupChanged = Callable[[ConsumerGroupInfo], None]


class ClientManager:
    def __init__(self, on_group_changed: GroupChanged | None = None) -> None:
        self.consumers: dict[str, ConsumerGroupInfo] = {}
        self.producers: dict[str, dict[Connection, ClientChannel]] = {}
        self.on_group_changed = on_group_changed

    # -- consumers ----------------------------------------------------------------------

    def register_consumer(self, data: ConsumerData, channel: ClientChannel) -> bool:
        """Record a consumer's heartbeat; True when the group changed (and was notified)."""
        info = self.consumers.get(data.group_name)
        if info is None:
            info = ConsumerGroupInfo(
                data.group_name, data.consume_type, data.message_model, data.consume_from_where
            )
            self.consumers[data.group_name] = info
        info.consume_type = data.consume_type
        info.message_model = data.message_model
        info.consume_from_where = data.consume_from_where
        info.last_update_ms = channel.last_update_ms
        existing = info.channels.get(channel.conn)
        new_channel = existing is None or existing.client_id != channel.client_id
        info.channels[channel.conn] = channel
        new_topics = {s.topic: s for s in data.subscriptions}
        topics_changed = new_topics.keys() != info.subscriptions.keys()
        for topic, sub in new_topics.items():
            old = info.subscriptions.get(topic)
            if old is None or sub.sub_version >= old.sub_version:
                info.subscriptions[topic] = sub
        for topic in list(info.subscriptions):
            if topic not in new_topics:
                del info.subscriptions[topic]
        if new_channel:
            log.info("consumer %s joined group %s from %s", channel.client_id, data.group_name,
                     channel.client_addr)  # fmt: skip
        changed = new_channel or topics_changed
        if changed:
            self._notify(info)
        return changed

    def unregister_consumer(self, group: str, conn: Connection) -> None:
        info = self.consumers.get(group)
        if info is None or info.channels.pop(conn, None) is None:
            return
        log.info("consumer left group %s (%s)", group, conn.remote_address)
        if not info.channels:
            del self.consumers[group]
        self._notify(info)

    def consumer_group(self, group: str) -> ConsumerGroupInfo | None:
        return self.consumers.get(group)

    def find_channel(self, group: str, client_id: str) -> ClientChannel | None:
        """The open channel of ``client_id`` in ``group`` (Java ``findChannel``); None if gone."""
        info = self.consumers.get(group)
        if info is None:
            return None
        for channel in info.channels.values():
            if channel.client_id == client_id and channel.conn.is_open:
                return channel
        return None

    def find_subscription(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.consumers.get(group)
        return info.subscriptions.get(topic) if info is not None else None

    def groups_consuming(self, topic: str) -> list[str]:
        return sorted(g for g, info in self.consumers.items() if topic in info.subscriptions)

    # -- producers ----------------------------------------------------------------------

    def register_producer(self, group: str, channel: ClientChannel) -> None:
        self.producers.setdefault(group, {})[channel.conn] = channel

    def unregister_producer(self, group: str, conn: Connection) -> None:
        channels = self.producers.get(group)
        if channels is not None and channels.pop(conn, None) is not None and not channels:
            del self.producers[group]

    def producer_channels(self, group: str) -> list[ClientChannel]:
        return list(self.producers.get(group, {}).values())

    # -- liveness -----------------------------------------------------------------------

    def on_channel_closed(self, conn: Connection) -> None:
        for group in [g for g, info in self.consumers.items() if conn in info.channels]:
            self.unregister_consumer(group, conn)
        for group in [g for g, chans in self.producers.items() if conn in chans]:
            self.unregister_producer(group, conn)

    def expire(self, now_ms: int, timeout_ms: int) -> list[Connection]:
        """Drop channels silent past the timeout; returns them (the caller closes them)."""
        stale: set[Connection] = set()
        for info in self.consumers.values():
            stale |= {
                c.conn for c in info.channels.values() if c.last_update_ms + timeout_ms < now_ms
            }
        for chans in self.producers.values():
            stale |= {c.conn for c in chans.values() if c.last_update_ms + timeout_ms < now_ms}
        for conn in stale:
            log.warning("client channel %s expired: no heartbeat for %d ms", conn.remote_address,
                        timeout_ms)  # fmt: skip
            self.on_channel_closed(conn)
        return list(stale)

    def _notify(self, info: ConsumerGroupInfo) -> None:
        if self.on_group_changed is not None:
            self.on_group_changed(info)
