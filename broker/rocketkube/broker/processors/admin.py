"""Admin requests (AdminBrokerProcessor), part one: topics and subscription groups.

:func:`table` is the whole admin family: these codes, the statistics and connection
listings of :mod:`.admin_stats`, and the broker config of :mod:`.admin_config`.

- UPDATE_AND_CREATE_TOPIC (17), DELETE_TOPIC_IN_BROKER (215): master only; system topics
  refused. The topic manager bumps its data version; a creation is answered once the name
  servers route it (bounded by registerBrokerTimeoutMills).
- GET_ALL_TOPIC_CONFIG (21): TopicConfigSerializeWrapper (slaves sync from it).
- GET_TOPIC_STATS_INFO (202): min/max offset and last store time per write queue.
- QUERY_TOPIC_CONSUME_BY_WHO (300): online subscribers plus groups with offsets.
- UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200), GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201),
  DELETE_SUBSCRIPTIONGROUP (207).

A change of a topic or a group is answered once its config file is on disk (written in a
worker thread, the event loop serving meanwhile); SYSTEM_ERROR says when it could not be.
"""

from __future__ import annotations

import asyncio
import logging

from rocketkube.broker import topics
from rocketkube.broker.consumers.groups import SubscriptionGroupConfig
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.processors import admin_config, admin_stats
from rocketkube.common import fastjson
from rocketkube.common.protocol import admin_bodies, permission
from rocketkube.common.protocol import admin_headers as h
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Processor
from rocketkube.common.remoting.replies import ok_once_saved

__all__ = ["MAX_QUEUE_NUMS", "TOPIC_FILTER_TYPES", "TopicAdminProcessors", "table"]

log = logging.getLogger(__name__)

TOPIC_FILTER_TYPES = frozenset({"SINGLE_TAG", "MULTI_TAG"})
#: Most queues an admin may give a topic (as many as the ``BenchmarkTest`` system topic).
MAX_QUEUE_NUMS = 1024
_PERM_BITS = (
    permission.PERM_PRIORITY
    | permission.PERM_READ
    | permission.PERM_WRITE
    | permission.PERM_INHERIT
)
GROUP_NAME_MAX_LENGTH = 255

SLAVE_REMARK = (
    "Can't modify topic or subscription group from slave broker, "
    "please execute it from master broker."
)


def ok(body: bytes = b"") -> RemotingCommand:
    return RemotingCommand.response(ResponseCode.SUCCESS, None, None, body)


def fail(code: int, remark: str) -> RemotingCommand:
    return RemotingCommand.response(code, remark)


def refuse_on_slave(ctx: BrokerContext) -> RemotingCommand | None:
    return None if ctx.settings.is_master else fail(ResponseCode.SYSTEM_ERROR, SLAVE_REMARK)


def check_topic_name(topic: str) -> RemotingCommand | None:
    """TopicValidator.validateTopic + isSystemTopic: an error response, or None."""
    reason = topics.validate_topic(topic)
    if reason is not None:
        return fail(ResponseCode.SYSTEM_ERROR, reason)
    if topics.is_system_topic(topic):
        return fail(ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic.")
    return None


class TopicAdminProcessors:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def table(self) -> dict[int, Processor]:
        c = RequestCode
        return {
            c.UPDATE_AND_CREATE_TOPIC: self.update_and_create_topic,
            c.DELETE_TOPIC_IN_BROKER: self.delete_topic,
            c.GET_ALL_TOPIC_CONFIG: self.get_all_topic_config,
            c.GET_TOPIC_STATS_INFO: self.get_topic_stats_info,
            c.QUERY_TOPIC_CONSUME_BY_WHO: self.query_topic_consume_by_who,
            c.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.update_and_create_subscription_group,
            c.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.get_all_subscription_group_config,
            c.DELETE_SUBSCRIPTIONGROUP: self.delete_subscription_group,
        }

    # -- topics ---------------------------------------------------------------------------

    async def update_and_create_topic(
        self, conn: Connection, req: RemotingCommand
    ) -> RemotingCommand:
        header = h.CreateTopicRequestHeader.decode(req.ext_fields)
        refused = refuse_on_slave(self.ctx) or check_topic_name(header.topic)
        if refused is not None:
            return refused
        for name, value in (
            ("readQueueNums", header.read_queue_nums),
            ("writeQueueNums", header.write_queue_nums),
        ):
            if not 0 < value <= MAX_QUEUE_NUMS:
                return fail(
                    ResponseCode.SYSTEM_ERROR,
                    f"{name} {value} is out of range, allowing 1..{MAX_QUEUE_NUMS}",
                )
        if header.perm & ~_PERM_BITS:
            return fail(ResponseCode.SYSTEM_ERROR, f"perm {header.perm} is not a permission")
        if header.topic_filter_type not in TOPIC_FILTER_TYPES:
            return fail(
                ResponseCode.SYSTEM_ERROR,
                f"topicFilterType {header.topic_filter_type!r} is not SINGLE_TAG or MULTI_TAG",
            )
        config = TopicConfig(
            topic_name=header.topic,
            read_queue_nums=header.read_queue_nums,
            write_queue_nums=header.write_queue_nums,
            perm=header.perm,
            topic_filter_type=header.topic_filter_type,
            topic_sys_flag=header.topic_sys_flag or 0,
            order=header.order,
        )
        log.info("topic %s updated by %s: %s", header.topic, conn.remote_address, config)
        self.ctx.topics.update(config)
        saved = ok_once_saved(self.ctx.topics.saver.flush, f"topic {header.topic}")
        if self.ctx.routes is None:
            return await saved
        answer, _ = await asyncio.gather(saved, self.ctx.routes.published())
        return answer

    async def delete_topic(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.DeleteTopicRequestHeader.decode(req.ext_fields)
        refused = refuse_on_slave(self.ctx) or check_topic_name(header.topic)
        if refused is not None:
            return refused
        log.info("topic %s deleted by %s", header.topic, conn.remote_address)
        self.ctx.topics.delete(header.topic)
        self.ctx.store.delete_topic(header.topic)
        self.ctx.offsets.remove_topic(header.topic)
        return await ok_once_saved(self.ctx.topics.saver.flush, f"topic {header.topic}")

    def get_all_topic_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return ok(fastjson.dumps(self.ctx.topics.wrapper().to_json()))

    def get_topic_stats_info(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.GetTopicStatsInfoRequestHeader.decode(req.ext_fields)
        topic = header.topic
        config = self.ctx.topics.get(topic)
        if config is None:
            return fail(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        store = self.ctx.store
        broker_name = self.ctx.settings.broker_name
        stats = admin_bodies.TopicStatsTable()
        for queue_id in range(config.write_queue_nums):
            low = max(0, store.min_offset(topic, queue_id))
            high = max(0, store.max_offset(topic, queue_id))
            last = store.store_timestamp(topic, queue_id, high - 1) if high > 0 else 0
            mq = admin_bodies.MessageQueue(topic, broker_name, queue_id)
            stats.offset_table[mq] = admin_bodies.TopicOffset(low, high, last)
        return ok(stats.encode())

    def query_topic_consume_by_who(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.QueryTopicConsumeByWhoRequestHeader.decode(req.ext_fields)
        groups = set(self.ctx.clients.groups_consuming(header.topic))
        groups |= self.ctx.offsets.groups_of_topic(header.topic)
        return ok(admin_bodies.encode_group_list(sorted(groups)))

    # -- subscription groups --------------------------------------------------------------

    async def update_and_create_subscription_group(
        self, conn: Connection, req: RemotingCommand
    ) -> RemotingCommand:
        refused = refuse_on_slave(self.ctx)
        if refused is not None:
            return refused
        try:
            data = fastjson.loads(req.body)
            if not isinstance(data, dict):
                raise TypeError("not a JSON object")
            config = SubscriptionGroupConfig.from_json(data)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return fail(ResponseCode.SYSTEM_ERROR, f"malformed SubscriptionGroupConfig: {exc}")
        name = config.group_name
        if not name.strip() or len(name) > GROUP_NAME_MAX_LENGTH:
            return fail(
                ResponseCode.SYSTEM_ERROR,
                f"the group name {name!r} is blank or longer than {GROUP_NAME_MAX_LENGTH}",
            )
        log.info("subscription group %s updated by %s", name, conn.remote_address)
        self.ctx.groups.update(config)
        return await ok_once_saved(self.ctx.groups.saver.flush, f"subscription group {name}")

    def get_all_subscription_group_config(
        self, conn: Connection, req: RemotingCommand
    ) -> RemotingCommand:
        return ok(fastjson.dumps(self.ctx.groups.to_json()))

    async def delete_subscription_group(
        self, conn: Connection, req: RemotingCommand
    ) -> RemotingCommand:
        header = h.DeleteSubscriptionGroupRequestHeader.decode(req.ext_fields)
        refused = refuse_on_slave(self.ctx)
        if refused is not None:
            return refused
        log.info("subscription group %s deleted by %s (offsets %s)", header.group_name,
                 conn.remote_address, "removed" if header.remove_offset else "kept")  # fmt: skip
        self.ctx.groups.delete(header.group_name)
        if header.remove_offset:
            self.ctx.offsets.remove_group(header.group_name)
        return await ok_once_saved(
            self.ctx.groups.saver.flush, f"subscription group {header.group_name}"
        )


def table(ctx: BrokerContext) -> dict[int, Processor]:
    """Every admin code: topics and groups, statistics, broker config."""
    processors = TopicAdminProcessors(ctx).table()
    processors.update(admin_stats.table(ctx))
    processors.update(admin_config.table(ctx))
    return processors
