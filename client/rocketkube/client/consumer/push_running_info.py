"""What a :class:`~rocketkube.client.consumer.push.PushConsumer` reports to
GET_CONSUMER_RUNNING_INFO (307), as Java's ``DefaultMQPushConsumerImpl.consumerRunningInfo``:
its settings and ``PROP_*`` properties, subscriptions, every owned queue and per-topic pull
and consume figures. Built from what the consumer hands over, so nothing here does I/O.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from rocketkube.client.consumer import running_info as ri
from rocketkube.client.consumer.consume_stats import ConsumeStatsRecorder
from rocketkube.client.consumer.core import FROM_WHERE
from rocketkube.client.consumer.process_queue import ProcessQueue
from rocketkube.client.routing import MessageQueue
from rocketkube.common.protocol import admin_bodies
from rocketkube.common.protocol import running_info as rip
from rocketkube.common.protocol.heartbeat import ConsumeType, SubscriptionData

if TYPE_CHECKING:
    from rocketkube.client.consumer.push import PushConsumer

__all__ = ["push_running_info", "push_settings"]


def push_running_info(
    consumer: PushConsumer,
    *,
    start_ms: int,
    subscriptions: Iterable[SubscriptionData],
    owned: Mapping[MessageQueue, ProcessQueue],
    committed: Callable[[MessageQueue], int | None],
    stats: ConsumeStatsRecorder,
) -> rip.ConsumerRunningInfo:
    """The running info of ``consumer``, started at ``start_ms``, owning the ``owned``
    queues whose committed offsets ``committed`` reads (-1 reported when none yet)."""
    properties = ri.base_properties(
        consume_type=ConsumeType.CONSUME_PASSIVELY.name,
        namesrv_addrs=consumer.namesrv_addrs,
        start_ms=start_ms,
    )
    properties[rip.PROP_CONSUME_ORDERLY] = "true" if consumer.orderly else "false"
    properties[rip.PROP_THREADPOOL_CORE_SIZE] = str(consumer.consume_concurrency)
    properties.update(ri.settings_properties(push_settings(consumer)))
    now_ms, now_monotonic = int(time.time() * 1000), time.monotonic()
    mq_table = {}
    for queue, process_queue in owned.items():
        offset = committed(queue)
        key = admin_bodies.MessageQueue(queue.topic, queue.broker_name, queue.queue_id)
        mq_table[key] = process_queue.info(
            offset if offset is not None else -1, now_ms=now_ms, now_monotonic=now_monotonic
        )
    subscribed = tuple(subscriptions)
    return rip.ConsumerRunningInfo(
        properties=properties,
        subscriptions=subscribed,
        mq_table=mq_table,
        status_table={s.topic: stats.status(s.topic) for s in subscribed},
    )


def push_settings(consumer: PushConsumer) -> dict[str, object]:
    """The settings of ``consumer``, by the names of Java's ``DefaultMQPushConsumer``
    fields."""
    allocate = consumer.allocate
    return {
        "consumerGroup": consumer.group,
        "namesrvAddr": ";".join(consumer.namesrv_addrs),
        "clientId": consumer.client_id,
        "messageModel": consumer.message_model.name,
        "consumeFromWhere": FROM_WHERE[consumer.consume_from].name,
        "consumeTimestamp": consumer.consume_timestamp_ms,
        "allocateMessageQueueStrategy": getattr(allocate, "__name__", repr(allocate)),
        "consumeThreadMin": consumer.consume_concurrency,
        "consumeThreadMax": consumer.consume_concurrency,
        "consumeMessageBatchMaxSize": consumer.consume_batch_size,
        "pullBatchSize": consumer.pull_batch_size,
        "pullThresholdForQueue": consumer.pull_threshold_for_queue,
        "pullThresholdSizeForQueue": consumer.pull_threshold_size_for_queue_mib,
        "maxReconsumeTimes": consumer.max_reconsume_times,
        "suspendCurrentQueueTimeMillis": int(consumer.suspend_current_queue_time * 1000),
        "heartbeatBrokerInterval": int(consumer.heartbeat_interval * 1000),
        "persistConsumerOffsetInterval": int(consumer.persist_interval * 1000),
    }
