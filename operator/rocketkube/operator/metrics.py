"""The operator's own Prometheus metrics, in a registry per operator (never the process's
global one, so two operators in one process, as in tests, count apart).

::

    rocketkube_operator_reconciles_total{kind,result}    handler runs: ok, retry, invalid,
                                                          error
    rocketkube_operator_reconcile_seconds{kind}          how long each took
    rocketkube_operator_managed_objects{kind}            resources the operator watches
    rocketkube_operator_drift_repairs_total{kind}        topics and groups changed behind
                                                          the operator's back, repaired
    rocketkube_operator_roll_restarts_total              broker pods deleted by rolls

Served at ``/metrics`` on ``--metrics-port`` by :class:`~rocketkube.common.http_endpoint.
HttpEndpoint` (``/healthz`` there too).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import prometheus_client

__all__ = ["Metrics", "Result"]


class Result(enum.StrEnum):
    """How a handler run ended."""

    OK = "ok"
    RETRY = "retry"
    """It asked to be called again (waiting, a conflict, an unreachable broker)."""
    INVALID = "invalid"
    """The spec cannot be reconciled as it is."""
    ERROR = "error"


class Metrics:
    """The counters one operator keeps, and the registry that serves them."""

    def __init__(self) -> None:
        self.registry = prometheus_client.CollectorRegistry()
        prefix = "rocketkube_operator"
        self.reconciles = prometheus_client.Counter(
            f"{prefix}_reconciles",
            "Handler runs by resource kind and result.",
            ["kind", "result"],
            registry=self.registry,
        )
        self.durations = prometheus_client.Histogram(
            f"{prefix}_reconcile_seconds",
            "Duration of handler runs by resource kind.",
            ["kind"],
            registry=self.registry,
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.managed = prometheus_client.Gauge(
            f"{prefix}_managed_objects",
            "Resources the operator watches, by kind.",
            ["kind"],
            registry=self.registry,
        )
        self.drift_repairs = prometheus_client.Counter(
            f"{prefix}_drift_repairs",
            "Topics and consumer groups changed behind the operator's back and repaired.",
            ["kind"],
            registry=self.registry,
        )
        self.roll_restarts = prometheus_client.Counter(
            f"{prefix}_roll_restarts",
            "Broker pods deleted by rolling updates.",
            registry=self.registry,
        )
        self._seen: dict[str, set[tuple[str, str]]] = {}
        self._lock = threading.Lock()

    @contextmanager
    def timed(self, kind: str) -> Iterator[None]:
        """Observe the duration of the block under ``kind``."""
        with self.durations.labels(kind).time():
            yield

    def count(self, kind: str, result: Result) -> None:
        self.reconciles.labels(kind, result.value).inc()

    def track(self, kind: str, namespace: str, name: str, present: bool) -> None:
        """A watch event: the object exists (``present``) or is gone."""
        with self._lock:
            seen = self._seen.setdefault(kind, set())
            if present:
                seen.add((namespace, name))
            else:
                seen.discard((namespace, name))
            self.managed.labels(kind).set(len(seen))
