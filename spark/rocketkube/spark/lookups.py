"""What the driver asks the cluster while planning a read, through one admin connection:
the topics a read covers, their queues' bounds, offsets by time, a consumer group's committed
offsets, and (streaming) the group's commit of a batch's end offsets.

Brokers are asked directly (GET_TOPIC_STATS_INFO, SEARCH_OFFSET_BY_TIMESTAMP,
QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET) at the master address the topic's route names.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from rocketkube.client import sync
from rocketkube.client.admin.client import AdminClient
from rocketkube.client.errors import TopicNotExistError
from rocketkube.client.routing import MessageQueue
from rocketkube.common.names import BrokerName
from rocketkube.spark import offsets
from rocketkube.spark import options as opts

__all__ = ["Planner"]


class Planner:
    """The cluster as planning sees it; use as ``with Planner(options) as planner``."""

    def __init__(self, options: opts.ReadOptions) -> None:
        self.options = options
        self._admin = sync.AdminClient(settings=options.admin_settings())
        self._addrs: dict[tuple[str, str], str] = {}

    def __enter__(self) -> Planner:
        self._admin.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._admin.close()

    def topics(self) -> list[str]:
        """The topics read: those named, or those the name servers list that match
        ``topicPattern`` (sorted)."""
        if self.options.topic_pattern is None:
            return list(self.options.topics)
        listed = self._admin.run(lambda a: a.topic_list())
        return sorted(topic for topic in set(listed) if self.options.reads(topic))

    def bounds(self) -> list[offsets.QueueBounds]:
        """Every queue of the topics read, with what it stores now; a topic a pattern matched
        that has no route any more (deleted) is left out."""
        found: list[offsets.QueueBounds] = []
        for topic in self.topics():
            try:
                found += self._topic_bounds(topic)
            except TopicNotExistError:
                if self.options.topic_pattern is None:
                    raise
        return found

    def _topic_bounds(self, topic: str) -> list[offsets.QueueBounds]:
        stats = self._admin.run(lambda a: a.topic_stats(topic))
        addrs = self._admin.run(lambda a: a.broker_addrs(topic))
        self._addrs.update({(topic, broker): addr for broker, addr in addrs.items()})
        return [
            offsets.QueueBounds(
                opts.QueueKey(mq.topic, mq.broker_name, mq.queue_id),
                span.min_offset,
                span.max_offset,
            )
            for mq, span in stats.offset_table.items()
        ]

    def _addr(self, queue: opts.QueueKey) -> str | None:
        return self._addrs.get((queue.topic, queue.broker_name))

    def search(self, queue: opts.QueueKey, ms: int) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP on the queue's broker."""
        mq = _mq(queue)
        addr = self._addr(queue)
        return self._admin.run(lambda a: a.search_offset(mq, ms, broker_addr=addr))

    def committed(self, queue: opts.QueueKey) -> int | None:
        """``consumerGroup``'s committed offset of the queue, ``None`` when none."""
        group = self.options.consumer_group
        if group is None:
            raise ValueError("committed offsets need the consumerGroup option")
        mq = _mq(queue)
        addr = self._addr(queue)
        return self._admin.run(lambda a: a.consumer_offset(group, mq, broker_addr=addr))

    def commit(self, group: str, positions: Mapping[opts.QueueKey, int]) -> None:
        """Commit ``positions`` (next offsets to read) as ``group``'s, concurrently; queues
        of brokers no longer routed are left out."""

        async def commit_all(admin: AdminClient) -> None:
            addrs = {
                topic: await admin.broker_addrs(topic) for topic in {q.topic for q in positions}
            }
            await asyncio.gather(
                *(
                    admin.update_consumer_offset(group, _mq(queue), offset, broker_addr=addr)
                    for queue, offset in positions.items()
                    if (addr := addrs[queue.topic].get(BrokerName(queue.broker_name))) is not None
                )
            )

        self._admin.run(commit_all)


def _mq(queue: opts.QueueKey) -> MessageQueue:
    return MessageQueue(queue.topic, queue.broker_name, queue.queue_id)
