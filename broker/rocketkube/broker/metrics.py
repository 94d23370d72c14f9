"""Gauges read from live broker state at scrape time: store offsets, disk use, consumer lag,
replication."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from rocketkube.broker.context import BrokerContext
from rocketkube.broker.offsets import SEPARATOR

#: ``(name, help, value)`` of gauges a part of the broker reports (replication).
Gauges = Callable[[], Iterable[tuple[str, str, float]]]


class BrokerCollector(Collector):
    def __init__(
        self, ctx: BrokerContext, held_pulls: Callable[[], int], more: Gauges | None = None
    ) -> None:
        self._ctx = ctx
        self._held_pulls = held_pulls
        self._more = more

    def collect(self) -> Iterator[GaugeMetricFamily]:
        store = self._ctx.store
        for name, doc, value in (
            ("commitlog_min_offset", "Lowest commit log offset kept", store.commit_log_min_offset),
            ("commitlog_max_offset", "Commit log end offset", store.commit_log_max_offset),
            ("commitlog_flushed_offset", "Commit log offset known on disk", store.flushed_offset),
            ("dispatch_offset", "Commit log offset dispatched to queues", store.dispatch_offset),
            ("disk_used_ratio", "Used share of the store's disk", store.disk_use_ratio()),
            ("disk_full", "1 while the store refuses writes for lack of disk", not store.writable),
            ("index_dropped_keys", "Keys the index lacked disk for", store.index_dropped_keys),
            ("held_pulls", "Long-polling pulls waiting for messages", self._held_pulls()),
            ("topics", "Topics configured on this broker", len(self._ctx.topics.table)),
            *(self._more() if self._more is not None else ()),
        ):
            gauge = GaugeMetricFamily(f"rocketkube_broker_{name}", doc)
            gauge.add_metric([], float(value))
            yield gauge
        lag = GaugeMetricFamily(
            "rocketkube_broker_consumer_lag",
            "Messages not yet consumed (queue max offset minus committed offset)",
            labels=["group", "topic", "queue"],
        )
        for key, queues in list(self._ctx.offsets.table.items()):
            topic, _, group = key.partition(SEPARATOR)
            for queue_id, offset in queues.items():
                behind = max(0, store.max_offset(topic, queue_id) - offset)
                lag.add_metric([group, topic, str(queue_id)], float(behind))
        yield lag
