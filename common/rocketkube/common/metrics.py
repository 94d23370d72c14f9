"""Request metrics shared by the servers: counts by code and result, latency by code."""

from __future__ import annotations

from typing import Any

import prometheus_client

from rocketkube.common.remoting.codes import code_name

LATENCY_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0,
)  # fmt: skip


class RequestMetrics:
    """A :class:`~rocketkube.common.remoting.dispatch.RequestObserver` feeding Prometheus."""

    def __init__(self, registry: prometheus_client.CollectorRegistry, prefix: str) -> None:
        self.requests = prometheus_client.Counter(
            f"{prefix}_requests",
            "Remoting requests handled, by request code and response code",
            ["code", "result"],
            registry=registry,
        )
        self.latency = prometheus_client.Histogram(
            f"{prefix}_request_latency_seconds",
            "Time from receiving a request to producing its response",
            ["code"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )

        # labels() costs microseconds; requests are counted on the hot path, so the
        # children are looked up once per (code, result).
        self._counters: dict[tuple[int, int | None], Any] = {}
        self._histograms: dict[int, Any] = {}

    def __call__(self, request_code: int, response_code: int | None, seconds: float) -> None:
        counter = self._counters.get((request_code, response_code))
        if counter is None:
            code = code_name(request_code, response=False)
            result = "NONE" if response_code is None else code_name(response_code, response=True)
            counter = self._counters[request_code, response_code] = self.requests.labels(
                code, result
            )
        counter.inc()
        histogram = self._histograms.get(request_code)
        if histogram is None:
            histogram = self._histograms[request_code] = self.latency.labels(
                code_name(request_code, response=False)
            )
        histogram.observe(seconds)
