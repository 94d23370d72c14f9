"""Admin requests, part two: consumption statistics, connections, runtime information.

- GET_CONSUME_STATS (208): per read queue of each topic, the queue's max offset, the
  group's committed offset and the store time of the last consumed message.
- GET_CONSUMER_CONNECTION_LIST (203): a group's channels and subscriptions, or
  CONSUMER_NOT_ONLINE (206).
- GET_PRODUCER_CONNECTION_LIST (204): a producer group's channels, or SYSTEM_ERROR.
- GET_BROKER_RUNTIME_INFO (28): a KVTable of strings under Java's key names (what
  ``mqadmin clusterList``/``brokerStatus`` read). Rates come from :class:`RateWindows`,
  sampled when the table is asked for: no background task.
"""

from __future__ import annotations

import collections
from collections.abc import Callable

from rocketkube.broker.context import BrokerContext
from rocketkube.common.message import record
from rocketkube.common.protocol import admin_bodies, route
from rocketkube.common.protocol import admin_headers as h
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import SERVER_VERSION, RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Processor

__all__ = ["BROKER_VERSION_DESC", "AdminStatsProcessors", "RateWindows", "table"]

BROKER_VERSION_DESC = "V4_9_8"
#: Windows (seconds) of the rates in ``putTps``/``getTransferedTps``, as Java prints them.
RATE_WINDOWS = (10, 60, 600)


class RateWindows:
    """Rates of monotonic counters over the last 10 s, 1 min and 10 min.

    Samples are taken when a rate is asked for (and at creation); a window's rate uses
    the newest sample at least that old, else the oldest one (so the first answer is the
    average since start).
    """

    def __init__(self, clock: Callable[[], int], *counters: Callable[[], int]) -> None:
        self.clock = clock
        self.counters = counters
        self.samples: collections.deque[tuple[int, tuple[int, ...]]] = collections.deque()
        self.sample()

    def sample(self) -> tuple[int, tuple[int, ...]]:
        now = self.clock()
        current = (now, tuple(c() for c in self.counters))
        samples = self.samples
        samples.append(current)
        horizon = now - RATE_WINDOWS[-1] * 1000
        # Keep one sample older than the longest window, for that window's rate.
        while len(samples) > 2 and samples[1][0] <= horizon:
            samples.popleft()
        return current

    def rates(self) -> list[str]:
        """Per counter, ``"<10s> <1min> <10min>"`` in messages per second."""
        now, values = self.sample()
        out = []
        for index in range(len(self.counters)):
            per_window = []
            for seconds in RATE_WINDOWS:
                since, before = self._base(now - seconds * 1000)
                elapsed = (now - since) / 1000
                delta = values[index] - before[index]
                per_window.append(f"{delta / elapsed if elapsed > 0 else 0.0:.2f}")
            out.append(" ".join(per_window))
        return out

    def _base(self, cutoff: int) -> tuple[int, tuple[int, ...]]:
        base = self.samples[0]
        for sample in self.samples:
            if sample[0] > cutoff:
                break
            base = sample
        return base


def _runtime_text(ms: int) -> str:
    """Java's ``runtime`` value: ``[ 0 days, 1 hours, 2 minutes, 3 seconds ]``."""
    seconds = max(0, ms) // 1000
    days, seconds = divmod(seconds, 86_400)
    hours, seconds = divmod(seconds, 3_600)
    minutes, seconds = divmod(seconds, 60)
    return f"[ {days} days, {hours} hours, {minutes} minutes, {seconds} seconds ]"


class AdminStatsProcessors:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self.boot_timestamp = ctx.clock()
        stats = ctx.stats
        self.rates = RateWindows(ctx.clock, lambda: stats.put_total, lambda: stats.get_total)

    def table(self) -> dict[int, Processor]:
        c = RequestCode
        return {
            c.GET_CONSUME_STATS: self.get_consume_stats,
            c.GET_CONSUMER_CONNECTION_LIST: self.get_consumer_connection_list,
            c.GET_PRODUCER_CONNECTION_LIST: self.get_producer_connection_list,
            c.GET_BROKER_RUNTIME_INFO: self.get_broker_runtime_info,
        }

    def get_consume_stats(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.GetConsumeStatsRequestHeader.decode(req.ext_fields)
        ctx = self.ctx
        group = header.consumer_group
        topic_names = (
            [header.topic] if header.topic and header.topic.strip()
            else sorted(ctx.offsets.topics_of_group(group))
        )  # fmt: skip
        online = ctx.clients.consumer_group(group)
        broker_name = ctx.settings.broker_name
        stats = admin_bodies.ConsumeStats()
        for topic in topic_names:
            config = ctx.topics.get(topic)
            if config is None:
                continue
            if online is not None and online.subscriptions and topic not in online.subscriptions:
                continue  # the group is online and does not subscribe to this topic
            for queue_id in range(config.read_queue_nums):
                broker_offset = max(0, ctx.store.max_offset(topic, queue_id))
                consumer_offset = max(0, ctx.offsets.query(group, topic, queue_id))
                last = 0
                if consumer_offset > 0:
                    last = max(0, ctx.store.store_timestamp(topic, queue_id, consumer_offset - 1))
                mq = admin_bodies.MessageQueue(topic, broker_name, queue_id)
                stats.offset_table[mq] = admin_bodies.OffsetWrapper(
                    broker_offset, consumer_offset, last
                )
        return RemotingCommand.response(body=stats.encode())

    def get_consumer_connection_list(
        self, conn: Connection, req: RemotingCommand
    ) -> RemotingCommand:
        header = h.GetConsumerConnectionListRequestHeader.decode(req.ext_fields)
        info = self.ctx.clients.consumer_group(header.consumer_group)
        if info is None or not info.channels:
            return RemotingCommand.response(
                ResponseCode.CONSUMER_NOT_ONLINE,
                f"the consumer group[{header.consumer_group}] not online",
            )
        body = admin_bodies.ConsumerConnection(
            connections=[
                admin_bodies.ClientConnection(c.client_id, c.client_addr, c.language, c.version)
                for c in info.channels.values()
            ],
            subscriptions=dict(info.subscriptions),
            consume_type=info.consume_type,
            message_model=info.message_model,
            consume_from_where=info.consume_from_where,
        )
        return RemotingCommand.response(body=body.encode())

    def get_producer_connection_list(
        self, conn: Connection, req: RemotingCommand
    ) -> RemotingCommand:
        header = h.GetProducerConnectionListRequestHeader.decode(req.ext_fields)
        channels = self.ctx.clients.producer_channels(header.producer_group)
        if not channels:
            return RemotingCommand.response(
                ResponseCode.SYSTEM_ERROR, f"the producer group[{header.producer_group}] not exist"
            )
        body = admin_bodies.ProducerConnection(
            [
                admin_bodies.ClientConnection(c.client_id, c.client_addr, c.language, c.version)
                for c in channels
            ]
        )
        return RemotingCommand.response(body=body.encode())

    def get_broker_runtime_info(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response(body=route.encode_kv_table(self.runtime_info()))

    def runtime_info(self) -> dict[str, str]:
        ctx = self.ctx
        store = ctx.store
        stats = ctx.stats
        put_tps, get_tps = self.rates.rates()
        now = ctx.clock()
        disk_ratio = f"{store.disk_use_ratio()}"
        min_offset = store.commit_log_min_offset
        earliest = -1
        if store.commit_log_max_offset > min_offset:
            view = store.lookup_message(min_offset)
            earliest = record.store_timestamp_at(view, 0) if view is not None else -1
        info = {
            "brokerVersionDesc": BROKER_VERSION_DESC,
            "brokerVersion": str(SERVER_VERSION),
            "bootTimestamp": str(self.boot_timestamp),
            "runtime": _runtime_text(now - self.boot_timestamp),
            # Totals count since boot: there is no midnight snapshot, so the morning
            # totals are 0 and "today" in mqadmin means "since boot".
            "msgPutTotalYesterdayMorning": "0",
            "msgPutTotalTodayMorning": "0",
            "msgPutTotalTodayNow": str(stats.put_total),
            "msgGetTotalYesterdayMorning": "0",
            "msgGetTotalTodayMorning": "0",
            "msgGetTotalTodayNow": str(stats.get_total),
            "putMessageTimesTotal": str(stats.put_total),
            "putTps": put_tps,
            "getTransferedTps": get_tps,
            "getTotalTps": get_tps,
            "commitLogMinOffset": str(min_offset),
            "commitLogMaxOffset": str(store.commit_log_max_offset),
            "dispatchBehindBytes": str(store.commit_log_max_offset - store.dispatch_offset),
            "remainHowManyDataToFlush": str(store.commit_log_max_offset - store.flushed_offset),
            "commitLogDiskRatio": disk_ratio,
            "consumeQueueDiskRatio": disk_ratio,
            "earliestMessageTimeStamp": str(earliest),
            "startAcceptSendRequestTimeStamp": "0",
            # Requests run on the event loop: there are no thread pool queues to report.
            "sendThreadPoolQueueSize": "0",
            "sendThreadPoolQueueHeadWaitTimeMills": "0",
            "pullThreadPoolQueueSize": "0",
            "pullThreadPoolQueueHeadWaitTimeMills": "0",
            "queryThreadPoolQueueSize": "0",
            "pageCacheLockTimeMills": "0",
        }
        return info


def table(ctx: BrokerContext) -> dict[int, Processor]:
    return AdminStatsProcessors(ctx).table()
