"""PULL_MESSAGE (11): checks, the store read, status -> code, offset commit, long polling.

Follows Java's ``PullMessageProcessor`` (docs/protocol.md §5):

1. Checks, in Java's order: broker readable (16), group known (26; auto-created when
   allowed) and consume-enabled (16), topic known (17) and readable (16), queueId in range
   (1), then the subscription: the request's own with FLAG_SUBSCRIPTION (unparsable 23),
   else the heartbeat-registered one (no group info or no subscription 24, broadcasting
   refused 16, older than the request's subVersion 25). A TAG expression filters by the
   consume queue's tags code. A SQL92 one answers 1 ("The broker does not support consumer
   to filter message by SQL92") unless ``enablePropertyFilter``; then it is parsed (once
   per expression, :mod:`~rocketkube.broker.consumers.filters`), a syntax error answering 23
   with the parser's message, and it filters each record by its properties.
2. ``store.get_messages`` with the subscription's filters, and the status mapped to a
   code (table below). The response header always carries all four fields; the remark is
   the store status name; the body is the store's memoryviews (joined only when several).
3. A would-be 19 with FLAG_SUSPEND, on the first processing, is held by the
   :class:`~rocketkube.broker.consumers.long_polling.PullRequestHoldService`; the processor returns
   its future and the hold service re-runs the pull (``first=False``) on wake-up.
4. FLAG_COMMIT_OFFSET on the first processing of a master stores ``commitOffset``, whatever
   the pull finds (not when a check failed, as in Java).

Store status -> (nextBeginOffset, code)::

    FOUND                                       offset + scanned      0
    NO_MATCHED_MESSAGE, MESSAGE_WAS_REMOVING    offset + scanned      20
    OFFSET_OVERFLOW_ONE                         offset                19
    OFFSET_FOUND_NULL                           next CQ file start    19
    OFFSET_OVERFLOW_BADLY                       max                   21
    OFFSET_TOO_SMALL                            min                   21
    NO_MATCHED_LOGIC_QUEUE, NO_MESSAGE_IN_QUEUE 0                     19 at offset 0, else 21

On a slave (offsetCheckInSlave=false) offsets are not corrected: nextBeginOffset stays the
requested offset and 21 becomes 20.

``suggestWhichBrokerId`` is 0 (the master) unless ``slaveReadEnable``; then it is the
group's ``whichBrokerWhenConsumeSlowly`` (default 1) for a consumer reading further behind
the log's end than ``accessMessageInMemoryMaxRatio`` of the memory, else the group's
``brokerId`` (default 0), so a consumer that caught up goes back to the master.

Where this differs from Java: a slave serves pulls whatever ``slaveReadEnable`` says
(suggesting the master when it is off). Java's slave answers 20 there, and a Java consumer
whose master is down then moves on to ``nextBeginOffset`` without the messages.
"""

from __future__ import annotations

import asyncio
import time
from typing import NamedTuple

from rocketkube.broker.consumers import filters
from rocketkube.broker.consumers.long_polling import PullRequestHoldService
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.store import GetResult, GetStatus, RecordFilter, TagFilter
from rocketkube.common.filter import EXPRESSION_TYPE as EXPRESSION_SQL92
from rocketkube.common.filter import Sql92SyntaxError
from rocketkube.common.message import sysflag
from rocketkube.common.protocol import heartbeat, permission
from rocketkube.common.protocol import pull_headers as h
from rocketkube.common.protocol.route import MASTER_ID
from rocketkube.common.protocol.subscription_group import SubscriptionGroupConfig
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Processor

__all__ = ["PullProcessor", "table"]

_FIXED_CODES: dict[GetStatus, int] = {
    GetStatus.FOUND: ResponseCode.SUCCESS,
    GetStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}

#: Statuses whose nextBeginOffset is a correction (Java ``nextOffsetCorrection``).
_CORRECTED = frozenset(
    {
        GetStatus.NO_MATCHED_LOGIC_QUEUE,
        GetStatus.NO_MESSAGE_IN_QUEUE,
        GetStatus.OFFSET_TOO_SMALL,
        GetStatus.OFFSET_OVERFLOW_BADLY,
    }
)

PullReply = RemotingCommand | asyncio.Future[RemotingCommand | None]


def pull_code(status: GetStatus, offset: int) -> int:
    """The response code of a store status for a pull at ``offset`` (docs/protocol.md §5.4)."""
    code = _FIXED_CODES.get(status)
    if code is not None:
        return code
    # NO_MATCHED_LOGIC_QUEUE / NO_MESSAGE_IN_QUEUE
    return ResponseCode.PULL_NOT_FOUND if offset == 0 else ResponseCode.PULL_OFFSET_MOVED


class _Filters(NamedTuple):
    """What the store reads with: the tags-code prefilter, then a per-record one."""

    tags: TagFilter | None
    records: RecordFilter | None


def tag_filter(sub: heartbeat.SubscriptionData, sys_flag: int) -> TagFilter | None:
    """The consume queue filter of a TAG subscription; ``None`` matches everything."""
    if sub.matches_all or sub.class_filter_mode or sys_flag & sysflag.FLAG_CLASS_FILTER:
        return None
    return frozenset(sub.code_set).__contains__


def _error(code: int, remark: str) -> RemotingCommand:
    return RemotingCommand.response(code, remark)


class PullProcessor:
    def __init__(self, ctx: BrokerContext, holds: PullRequestHoldService) -> None:
        self.ctx = ctx
        self.holds = holds
        self.filters = filters.FilterCache()

    def table(self) -> dict[int, Processor]:
        return {RequestCode.PULL_MESSAGE: self.pull_message}

    def pull_message(self, conn: Connection, request: RemotingCommand) -> PullReply:
        header = h.PullMessageRequestHeader.decode(request.ext_fields)
        return self.pull(conn, header, time.perf_counter(), first=True)

    def pull(
        self,
        conn: Connection,
        header: h.PullMessageRequestHeader,
        started: float,
        *,
        first: bool,
    ) -> PullReply:
        """Process a pull; ``first=False`` for a held pull woken up (no hold, no commit)."""
        ctx = self.ctx
        checked = self._check(conn, header)
        if isinstance(checked, RemotingCommand):
            ctx.stats.pull_latency.observe(time.perf_counter() - started)
            return checked
        flag = header.sys_flag
        topic, queue_id, offset = header.topic, header.queue_id, header.queue_offset
        result = ctx.store.get_messages(
            topic, queue_id, offset, header.max_msg_nums, checked.tags, checked.records
        )
        code = pull_code(result.status, offset)
        reply: PullReply
        if code == ResponseCode.PULL_NOT_FOUND and first and flag & sysflag.FLAG_SUSPEND:
            settings = ctx.settings
            timeout_ms = (
                header.suspend_timeout_millis
                if settings.long_polling_enable
                else settings.short_polling_time_mills
            )
            reply = self.holds.hold(
                conn, topic, queue_id, offset, checked.tags, timeout_ms,
                lambda: self._rerun(conn, header, started),
            )  # fmt: skip
        else:
            reply = self._respond(header, result, code)
            ctx.stats.pull_latency.observe(time.perf_counter() - started)
        if first and flag & sysflag.FLAG_COMMIT_OFFSET and ctx.settings.is_master:
            ctx.offsets.commit(header.consumer_group, topic, queue_id, header.commit_offset)
        return reply

    def _rerun(
        self, conn: Connection, header: h.PullMessageRequestHeader, started: float
    ) -> RemotingCommand:
        reply = self.pull(conn, header, started, first=False)
        assert isinstance(reply, RemotingCommand)  # first=False never holds
        return reply

    def _respond(
        self, header: h.PullMessageRequestHeader, result: GetResult, code: int
    ) -> RemotingCommand:
        next_begin = result.next_begin_offset
        if not self.ctx.settings.is_master and result.status in _CORRECTED:
            next_begin = header.queue_offset
            if code == ResponseCode.PULL_OFFSET_MOVED:
                code = ResponseCode.PULL_RETRY_IMMEDIATELY
        ext = h.PullMessageResponseHeader(
            suggest_which_broker_id=self._suggest(header.consumer_group, result),
            next_begin_offset=next_begin,
            min_offset=result.min_offset,
            max_offset=result.max_offset,
        ).encode()
        response = RemotingCommand.response(code, result.status.value, ext)
        if code == ResponseCode.SUCCESS:
            buffers = result.buffers
            response.body = buffers[0] if len(buffers) == 1 else b"".join(buffers)
            self.ctx.stats.delivered(
                header.topic, header.consumer_group, result.message_count, result.total_size
            )
        return response

    def _suggest(self, group: str, result: GetResult) -> int:
        """The broker id the consumer should pull this queue from next (step 3)."""
        if not self.ctx.settings.slave_read_enable:
            return MASTER_ID
        config = self.ctx.groups.get(group)
        if config is None:
            return MASTER_ID
        if result.suggest_pulling_from_slave:
            return config.which_broker_when_consume_slowly
        return config.broker_id

    def _check(
        self, conn: Connection, header: h.PullMessageRequestHeader
    ) -> RemotingCommand | _Filters:
        """An error response, or the filters of the pull's subscription."""
        ctx = self.ctx
        rc = ResponseCode
        group, topic = header.consumer_group, header.topic
        if not permission.is_readable(ctx.permission):
            return _error(
                rc.NO_PERMISSION,
                f"the broker[{ctx.settings.broker_ip1}] pulling message is forbidden",
            )
        group_config = ctx.groups.get(group)
        if group_config is None:
            return _error(
                rc.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group [{group}] does not exist"
            )
        if not group_config.consume_enable:
            return _error(rc.NO_PERMISSION, f"subscription group no permission, {group}")
        topic_config = ctx.topics.get(topic)
        if topic_config is None:
            return _error(rc.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
        if not permission.is_readable(topic_config.perm):
            return _error(rc.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden")
        queue_id = header.queue_id
        if queue_id < 0 or queue_id >= topic_config.read_queue_nums:
            return _error(
                rc.SYSTEM_ERROR,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                f"[{topic_config.read_queue_nums}] consumer:[{conn.remote_address}]",
            )
        return self._filters(header, group_config)

    def _filters(
        self, header: h.PullMessageRequestHeader, group_config: SubscriptionGroupConfig
    ) -> RemotingCommand | _Filters:
        """The subscription's filters: the pull's own (FLAG_SUBSCRIPTION) or the registered."""
        if header.sys_flag & sysflag.FLAG_SUBSCRIPTION:
            sub = _request_subscription(header)
        else:
            sub = self._registered_subscription(header, group_config)
        if isinstance(sub, RemotingCommand):
            return sub
        if sub.expression_type in ("", heartbeat.EXPRESSION_TAG):
            return _Filters(tag_filter(sub, header.sys_flag), None)
        return self._property_filter(sub.expression_type, sub.sub_string)

    def _registered_subscription(
        self, header: h.PullMessageRequestHeader, group_config: SubscriptionGroupConfig
    ) -> RemotingCommand | heartbeat.SubscriptionData:
        rc = ResponseCode
        group = header.consumer_group
        info = self.ctx.clients.consumer_group(group)
        if info is None:
            return _error(rc.SUBSCRIPTION_NOT_EXIST, "the consumer's group info not exist")
        if (
            not group_config.consume_broadcast_enable
            and info.message_model is heartbeat.MessageModel.BROADCASTING
        ):
            return _error(
                rc.NO_PERMISSION, f"the consumer group[{group}] can not consume by broadcast way"
            )
        registered = info.subscriptions.get(header.topic)
        if registered is None:
            return _error(rc.SUBSCRIPTION_NOT_EXIST, "the consumer's subscription not exist")
        if registered.sub_version < header.sub_version:
            return _error(rc.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
        return registered

    def _property_filter(self, expression_type: str, expression: str) -> RemotingCommand | _Filters:
        """A SQL92 subscription's filters; refused without ``enablePropertyFilter``."""
        if not self.ctx.settings.enable_property_filter:
            return _no_property_filter(expression_type)
        if expression_type != EXPRESSION_SQL92:
            return _error(
                ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                f"parse the consumer's subscription failed: no filter of type {expression_type}",
            )
        selector = self.filters.get(expression)
        if isinstance(selector, Sql92SyntaxError):
            return _error(
                ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                f"parse the consumer's subscription failed: {selector}",
            )
        return _Filters(None, filters.record_filter(selector))


def _request_subscription(
    header: h.PullMessageRequestHeader,
) -> RemotingCommand | heartbeat.SubscriptionData:
    """The subscription a pull carries (FLAG_SUBSCRIPTION); 23 when it cannot be one."""
    expression_type = header.expression_type or heartbeat.EXPRESSION_TAG
    topic, expression = header.topic, header.subscription
    if expression_type == heartbeat.EXPRESSION_TAG:
        sub = heartbeat.parse_subscription(topic, expression, header.sub_version)
        if sub.matches_all or sub.code_set:
            return sub
    elif expression_type == EXPRESSION_SQL92 and (expression or "").strip():
        return heartbeat.SubscriptionData(
            topic, expression or "", sub_version=header.sub_version, expression_type=expression_type
        )
    return _error(
        ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"
    )


def _no_property_filter(expression_type: str) -> RemotingCommand:
    return _error(
        ResponseCode.SYSTEM_ERROR,
        f"The broker does not support consumer to filter message by {expression_type}",
    )


def table(ctx: BrokerContext, holds: PullRequestHoldService) -> dict[int, Processor]:
    """PULL_MESSAGE, held pulls going to ``holds`` (the app builds one per context)."""
    return PullProcessor(ctx, holds).table()
