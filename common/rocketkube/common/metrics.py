"""Request metrics shared by the servers: counts by code and result, latency by code, and
the malformed frames and requests of their peers by kind (with the throttles they earned).

Counted in plain dicts on the hot path and turned into Prometheus families only when
scraped: a prometheus-client counter or histogram update costs microseconds (a lock,
a label lookup), more than some requests take to serve.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

import prometheus_client
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from rocketkube.common.remoting.codes import code_name
from rocketkube.common.remoting.faults import FaultLog

LATENCY_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0,
)  # fmt: skip


class RequestMetrics(Collector):
    """A :data:`~rocketkube.common.remoting.dispatch.RequestObserver` exported to Prometheus."""

    def __init__(
        self,
        registry: prometheus_client.CollectorRegistry,
        prefix: str,
        faults: FaultLog | None = None,
    ) -> None:
        """``faults``: the server's account of its peers' malformed traffic, read when
        scraped."""
        self._prefix = prefix
        self._faults = faults
        self._requests: dict[tuple[int, int | None], int] = {}
        # per request code: [count per bucket..., count above the last bucket], sum
        self._buckets: dict[int, list[int]] = {}
        self._sums: dict[int, float] = {}
        registry.register(self)

    def __call__(
        self, request_code: int, response_code: int | None, seconds: float, count: int
    ) -> None:
        key = (request_code, response_code)
        self._requests[key] = self._requests.get(key, 0) + count
        buckets = self._buckets.get(request_code)
        if buckets is None:
            buckets = self._buckets[request_code] = [0] * (len(LATENCY_BUCKETS) + 1)
            self._sums[request_code] = 0.0
        buckets[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += count
        self._sums[request_code] += seconds * count

    def collect(self) -> Iterator[CounterMetricFamily | HistogramMetricFamily]:
        requests = CounterMetricFamily(
            f"{self._prefix}_requests",
            "Remoting requests handled, by request code and response code",
            labels=["code", "result"],
        )
        for (request_code, response_code), count in list(self._requests.items()):
            result = "NONE" if response_code is None else code_name(response_code, response=True)
            requests.add_metric([code_name(request_code, response=False), result], count)
        yield requests
        latency = HistogramMetricFamily(
            f"{self._prefix}_request_latency_seconds",
            "Time from receiving a request to producing its response",
            labels=["code"],
        )
        for request_code, buckets in list(self._buckets.items()):
            cumulative, running = [], 0
            for bound, count in zip((*map(str, LATENCY_BUCKETS), "+Inf"), buckets, strict=True):
                running += count
                cumulative.append((bound, float(running)))
            latency.add_metric(
                [code_name(request_code, response=False)],
                cumulative,
                self._sums[request_code],
            )
        yield latency
        if self._faults is not None:
            yield from self._collect_faults(self._faults)

    def _collect_faults(self, faults: FaultLog) -> Iterator[CounterMetricFamily]:
        malformed = CounterMetricFamily(
            f"{self._prefix}_malformed_requests",
            "Malformed frames and requests from peers, by kind (frame: the connection was "
            "closed; header, body, value, code: answered with an error)",
            labels=["kind"],
        )
        for kind, count in list(faults.counts.items()):
            malformed.add_metric([kind], count)
        yield malformed
        yield CounterMetricFamily(
            f"{self._prefix}_throttled_connections",
            "Times a connection was left unread for a while: too many malformed requests",
            value=faults.throttles,
        )
        refused = CounterMetricFamily(
            f"{self._prefix}_refused",
            "Connections closed at accept and requests answered SYSTEM_BUSY for the server's "
            "limits, and connections closed for a frame left incomplete, by reason",
            labels=["reason"],
        )
        for reason, count in list(faults.refused.items()):
            refused.add_metric([reason], count)
        yield refused
