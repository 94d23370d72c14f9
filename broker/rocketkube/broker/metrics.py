"""Gauges read from live broker state at scrape time: who the broker is, store offsets, disk
and mapped memory, queue offsets, consumer lag (messages and seconds), replication.

The dashboards and alert rules built on these (``tools/dashboards``,
``charts/rocketkube/alerts``) are described in ``docs/monitoring.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from rocketkube.broker.consumers.offsets import SEPARATOR
from rocketkube.broker.context import BrokerContext

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
        yield self._info()
        store = self._ctx.store
        mapped_files, mapped_bytes = store.mapped()
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
            ("mapped_files", "Store files mapped into memory", mapped_files),
            ("mapped_bytes", "Bytes of the store files mapped into memory", mapped_bytes),
            *(self._more() if self._more is not None else ()),
        ):
            gauge = GaugeMetricFamily(f"rocketkube_broker_{name}", doc)
            gauge.add_metric([], float(value))
            yield gauge
        yield from self._queues()
        yield from self._lag()

    def _info(self) -> GaugeMetricFamily:
        settings = self._ctx.settings
        info = GaugeMetricFamily(
            "rocketkube_broker_info",
            "Always 1: the broker's cluster, name, id and role",
            labels=["broker_cluster", "broker_name", "broker_id", "role"],
        )
        role = "master" if settings.is_master else "slave"
        labels = [settings.broker_cluster_name, settings.broker_name, str(settings.broker_id)]
        info.add_metric([*labels, role], 1.0)
        return info

    def _queues(self) -> Iterator[GaugeMetricFamily]:
        store = self._ctx.store
        newest = GaugeMetricFamily(
            "rocketkube_broker_queue_max_offset",
            "Next offset of each consume queue (messages ever stored in it)",
            labels=["topic", "queue"],
        )
        oldest = GaugeMetricFamily(
            "rocketkube_broker_queue_min_offset",
            "First offset of each consume queue still kept",
            labels=["topic", "queue"],
        )
        for topic in store.topics():
            for queue_id in store.queue_ids(topic):
                labels = [topic, str(queue_id)]
                newest.add_metric(labels, float(store.max_offset(topic, queue_id)))
                oldest.add_metric(labels, float(store.min_offset(topic, queue_id)))
        yield newest
        yield oldest

    def _lag(self) -> Iterator[GaugeMetricFamily]:
        store, now = self._ctx.store, self._ctx.clock()
        lag = GaugeMetricFamily(
            "rocketkube_broker_consumer_lag",
            "Messages not yet consumed (queue max offset minus committed offset)",
            labels=["group", "topic", "queue"],
        )
        behind = GaugeMetricFamily(
            "rocketkube_broker_consumer_lag_seconds",
            "Age of the oldest message not yet consumed (0 when caught up)",
            labels=["group", "topic", "queue"],
        )
        for key, queues in list(self._ctx.offsets.table.items()):
            topic, _, group = key.partition(SEPARATOR)
            for queue_id, offset in queues.items():
                labels = [group, topic, str(queue_id)]
                lag.add_metric(labels, float(max(0, store.max_offset(topic, queue_id) - offset)))
                oldest = max(offset, store.min_offset(topic, queue_id))
                stored = store.store_timestamp(topic, queue_id, oldest)
                behind.add_metric(labels, max(0, now - stored) / 1000 if stored >= 0 else 0.0)
        yield lag
        yield behind
