"""Client management (ClientManageProcessor): HEART_BEAT, UNREGISTER_CLIENT,
GET_CONSUMER_LIST_BY_GROUP, and the NOTIFY_CONSUMER_IDS_CHANGED the broker sends.

- HEART_BEAT (34) registers every consumer group of the body on the sender's connection
  (creating ``%RETRY%<group>`` when the group's config exists) and every producer group.
- UNREGISTER_CLIENT (35) removes the connection from the named groups.
- GET_CONSUMER_LIST_BY_GROUP (38) lists the client ids of a group's live channels.
- CHECK_CLIENT_CONFIG (46), which Java consumers send for each non-TAG subscription when
  they start (and fail to start on a refusal): 0 for TAG, 1 for anything else without
  ``enablePropertyFilter``, 23 with the parser's message for a SQL92 expression that does
  not parse, or for another expression type. A heartbeat is never refused for its
  subscriptions, as in Java: a bad one is refused when pulled (:mod:`.pull`).
- :func:`install` makes :class:`~rocketkube.broker.consumers.clients.ClientManager` call
  :func:`notify_group_changed` whenever a group changes (a channel joins or leaves, the
  topic set changes, a channel closes or expires): every member gets a oneway 40.
"""

from __future__ import annotations

import functools
import logging

from rocketkube.broker import topics
from rocketkube.broker.consumers.clients import ClientChannel, ConsumerGroupInfo
from rocketkube.broker.context import BrokerContext
from rocketkube.common import errors, fastjson
from rocketkube.common import filter as sql_filter
from rocketkube.common.protocol import admin_bodies, permission
from rocketkube.common.protocol import admin_headers as h
from rocketkube.common.protocol.heartbeat import EXPRESSION_TAG, HeartbeatData, SubscriptionData
from rocketkube.common.remoting import faults
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Processor

__all__ = ["ClientProcessors", "install", "notify_group_changed", "table"]

log = logging.getLogger(__name__)

#: Language the broker writes on the requests it sends to clients, as Java's broker does.
BROKER_LANGUAGE = "JAVA"


def notify_group_changed(ctx: BrokerContext, info: ConsumerGroupInfo) -> None:
    """Send NOTIFY_CONSUMER_IDS_CHANGED (oneway) to every channel of the group, unless the
    broker's or the group's ``notifyConsumerIdsChangedEnable`` is off."""
    if not ctx.settings.notify_consumer_ids_changed_enable or not info.channels:
        return
    config = ctx.groups.table.get(info.group)  # no auto-creation from a notification
    if config is not None and not config.notify_consumer_ids_changed_enable:
        return
    header = h.NotifyConsumerIdsChangedRequestHeader(info.group).encode()
    for conn in list(info.channels):
        request = RemotingCommand.request(
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, dict(header), language=BROKER_LANGUAGE
        )
        try:
            conn.invoke_oneway(request)
        except errors.RemotingError:
            log.debug("could not notify %s of group %s: closed", conn.remote_address, info.group)


def install(ctx: BrokerContext) -> None:
    """Wire :func:`notify_group_changed` as the client manager's group-change hook."""
    ctx.clients.on_group_changed = functools.partial(notify_group_changed, ctx)


def _blank_to_none(value: str | None) -> str | None:
    return value or None


class ClientProcessors:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def table(self) -> dict[int, Processor]:
        c = RequestCode
        return {
            c.HEART_BEAT: self.heart_beat,
            c.UNREGISTER_CLIENT: self.unregister_client,
            c.GET_CONSUMER_LIST_BY_GROUP: self.get_consumer_list_by_group,
            c.CHECK_CLIENT_CONFIG: self.check_client_config,
        }

    def heart_beat(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        try:
            data = HeartbeatData.decode(req.body)
        except errors.ProtocolError as exc:
            conn.fault(faults.BODY, str(exc))
            return RemotingCommand.response(ResponseCode.SYSTEM_ERROR, str(exc))
        if not data.client_id:
            return RemotingCommand.response(ResponseCode.SYSTEM_ERROR, "heartbeat without clientID")
        ctx = self.ctx
        channel = ClientChannel(conn, data.client_id, req.language, req.version, ctx.clock())
        for consumer in data.consumers:
            if not consumer.group_name:
                conn.fault(faults.BODY, "heartbeat: a consumer without groupName")
                continue
            config = ctx.groups.get(consumer.group_name)
            if config is not None:
                ctx.topics.create_system_like(
                    topics.retry_topic(consumer.group_name),
                    config.retry_queue_nums,
                    permission.PERM_READ | permission.PERM_WRITE,
                    permission.FLAG_UNIT_SUB if consumer.unit_mode else 0,
                )
            ctx.clients.register_consumer(consumer, channel)
        for group in data.producer_groups:
            if group:
                ctx.clients.register_producer(group, channel)
        # The default version (409) is what Java clients read as the broker's version.
        return RemotingCommand.response()

    def unregister_client(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.UnregisterClientRequestHeader.decode(req.ext_fields)
        producer_group = _blank_to_none(header.producer_group)
        consumer_group = _blank_to_none(header.consumer_group)
        if producer_group is not None:
            self.ctx.clients.unregister_producer(producer_group, conn)
        if consumer_group is not None:
            self.ctx.clients.unregister_consumer(consumer_group, conn)
        return RemotingCommand.response()

    def get_consumer_list_by_group(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.GetConsumerListByGroupRequestHeader.decode(req.ext_fields)
        info = self.ctx.clients.consumer_group(header.consumer_group)
        client_ids = info.client_ids() if info is not None else []
        if not client_ids:
            return RemotingCommand.response(
                ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {header.consumer_group}"
            )
        return RemotingCommand.response(body=admin_bodies.encode_consumer_id_list(client_ids))

    def check_client_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        try:
            body = fastjson.loads(req.body) if req.body else {}
            raw = body.get("subscriptionData")
            sub = SubscriptionData.from_json(raw) if raw else None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            conn.fault(faults.BODY, f"malformed CHECK_CLIENT_CONFIG body: {exc!r}")
            return RemotingCommand.response(ResponseCode.SYSTEM_ERROR, f"malformed body: {exc!r}")
        if sub is None or sub.expression_type == EXPRESSION_TAG:
            return RemotingCommand.response()
        if not self.ctx.settings.enable_property_filter:
            return RemotingCommand.response(
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {sub.expression_type}",
            )
        if sub.expression_type != sql_filter.EXPRESSION_TYPE:
            return RemotingCommand.response(
                ResponseCode.SUBSCRIPTION_PARSE_FAILED, f"no filter of type {sub.expression_type}"
            )
        try:
            sql_filter.parse(sub.sub_string)
        except sql_filter.Sql92SyntaxError as exc:
            return RemotingCommand.response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc))
        return RemotingCommand.response()


def table(ctx: BrokerContext) -> dict[int, Processor]:
    return ClientProcessors(ctx).table()
