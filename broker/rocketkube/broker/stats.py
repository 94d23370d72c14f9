"""Broker counters and Prometheus metrics: messages and bytes in/out per topic, send, pull
and commit log flush latency, messages sent back for retry or to the dead letter queue;
gauges (offsets, lag, disk) are collected from live state at scrape time."""

from __future__ import annotations

import bisect
import collections
from collections.abc import Iterator

import prometheus_client
from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector

from rocketkube.common.metrics import LATENCY_BUCKETS

_BOUNDS = (*map(str, LATENCY_BUCKETS), "+Inf")


class LatencyHistogram(Collector):
    """A label-less histogram of seconds over :data:`LATENCY_BUCKETS`, counted in a plain
    list and turned into a Prometheus family only when scraped.

    prometheus-client's ``Histogram.observe`` takes a lock and walks the buckets in
    Python: microseconds, paid once per send. Here an observation is one C bisect.
    Observed on the event loop only.
    """

    def __init__(
        self, name: str, documentation: str, registry: prometheus_client.CollectorRegistry
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._counts = [0] * len(_BOUNDS)
        self._sum = 0.0
        registry.register(self)

    def observe(self, seconds: float) -> None:
        self._counts[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self._sum += seconds

    def observe_many(self, seconds: list[float]) -> None:
        """:meth:`observe` of each, in one call (a run of pipelined sends): the sends of a
        run share their start, so a run of one value is counted at once, and otherwise
        equal values are counted together (in C) first."""
        if not seconds:
            return
        counts = self._counts
        where = bisect.bisect_left
        first = seconds[0]
        if seconds.count(first) == len(seconds):
            counts[where(LATENCY_BUCKETS, first)] += len(seconds)
        else:
            for value, times in collections.Counter(seconds).items():
                counts[where(LATENCY_BUCKETS, value)] += times
        self._sum += sum(seconds)

    def collect(self) -> Iterator[HistogramMetricFamily]:
        cumulative, running = [], 0
        for bound, count in zip(_BOUNDS, list(self._counts), strict=True):
            running += count
            cumulative.append((bound, float(running)))
        yield HistogramMetricFamily(
            self._name, self._documentation, buckets=cumulative, sum_value=self._sum
        )


class BrokerStats:
    def __init__(self, registry: prometheus_client.CollectorRegistry) -> None:
        self.registry = registry
        self.messages_in = prometheus_client.Counter(
            "rocketkube_broker_messages_in", "Messages stored, by topic", ["topic"],
            registry=registry,
        )  # fmt: skip
        self.bytes_in = prometheus_client.Counter(
            "rocketkube_broker_bytes_in", "Message body bytes stored, by topic", ["topic"],
            registry=registry,
        )  # fmt: skip
        self.messages_out = prometheus_client.Counter(
            "rocketkube_broker_messages_out", "Messages delivered by pulls, by topic and group",
            ["topic", "group"], registry=registry,
        )  # fmt: skip
        self.bytes_out = prometheus_client.Counter(
            "rocketkube_broker_bytes_out", "Record bytes delivered by pulls, by topic and group",
            ["topic", "group"], registry=registry,
        )  # fmt: skip
        self.send_latency = LatencyHistogram(
            "rocketkube_broker_send_latency_seconds",
            "Send request to stored (flushed) reply",
            registry,
        )
        self.pull_latency = LatencyHistogram(
            "rocketkube_broker_pull_latency_seconds",
            "Pull request to response (long polls too)",
            registry,
        )
        self.flush_latency = LatencyHistogram(
            "rocketkube_broker_flush_latency_seconds",
            "Commit log flush rounds: the sync of the bytes appended since the last one",
            registry,
        )
        self.sent_back = prometheus_client.Counter(
            "rocketkube_broker_sent_back",
            "Messages consumers sent back, by group, original topic and destination "
            "(retry: the group's retry topic, dlq: its dead letter queue)",
            ["group", "topic", "to"], registry=registry,
        )  # fmt: skip
        self.put_total = 0
        self.get_total = 0

    def stored(self, topic: str, count: int, body_bytes: int) -> None:
        self.put_total += count
        self.messages_in.labels(topic).inc(count)
        self.bytes_in.labels(topic).inc(body_bytes)

    def delivered(self, topic: str, group: str, count: int, record_bytes: int) -> None:
        self.get_total += count
        self.messages_out.labels(topic, group).inc(count)
        self.bytes_out.labels(topic, group).inc(record_bytes)
