"""Broker counters and Prometheus metrics: messages and bytes in/out per topic, send and
pull latency; gauges (offsets, lag, disk) are collected from live state at scrape time."""

from __future__ import annotations

import prometheus_client

from rocketkube.common.metrics import LATENCY_BUCKETS


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
        self.send_latency = prometheus_client.Histogram(
            "rocketkube_broker_send_latency_seconds", "Send request to stored (flushed) reply",
            buckets=LATENCY_BUCKETS, registry=registry,
        )  # fmt: skip
        self.pull_latency = prometheus_client.Histogram(
            "rocketkube_broker_pull_latency_seconds", "Pull request to response (long polls too)",
            buckets=LATENCY_BUCKETS, registry=registry,
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
