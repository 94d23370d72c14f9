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
    rocketkube_operator_condition{kind,resource_namespace,resource_name,type,reason}
                                                          each watched object's conditions
                                                          as last seen: 1 True, 0 otherwise

Every kind's (and result's) series exist from the start at 0, so a dashboard or alert sees
a rate of 0, not nothing, before the first event. The condition gauge names the object's
namespace ``resource_namespace``: ``namespace`` is the operator pod's own, given by the
scrape (``docs/monitoring.md``).

Served at ``/metrics`` on ``--metrics-port`` by :class:`~rocketkube.common.http_endpoint.
HttpEndpoint` (``/healthz`` there too).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import prometheus_client
from prometheus_client.core import GaugeMetricFamily

from rocketkube.operator.api import crds

__all__ = ["Metrics", "Result"]

DRIFTING_KINDS = ("Topic", "ConsumerGroup")
"""The kinds whose brokers' copy can be changed behind the operator's back."""

#: (type, status, reason) of each condition of a watched object
Conditions = list[tuple[str, str, str]]


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
        self._conditions: dict[tuple[str, str, str], Conditions] = {}
        self._lock = threading.Lock()
        self.registry.register(_ConditionCollector(self))
        for kind in (k.kind for k in crds.KINDS):
            for result in Result:
                self.reconciles.labels(kind, result.value)
            self.durations.labels(kind)
            self.managed.labels(kind)
        for kind in DRIFTING_KINDS:
            self.drift_repairs.labels(kind)

    @contextmanager
    def timed(self, kind: str) -> Iterator[None]:
        """Observe the duration of the block under ``kind``."""
        with self.durations.labels(kind).time():
            yield

    def count(self, kind: str, result: Result) -> None:
        self.reconciles.labels(kind, result.value).inc()

    def track(
        self,
        kind: str,
        namespace: str,
        name: str,
        present: bool,
        conditions: Iterable[Mapping[str, Any]] = (),
    ) -> None:
        """A watch event: the object exists (``present``, with its status ``conditions``)
        or is gone."""
        key = (kind, namespace, name)
        found = [(str(c.get("type")), str(c.get("status")), str(c.get("reason", "")))
                 for c in conditions]  # fmt: skip
        with self._lock:
            seen = self._seen.setdefault(kind, set())
            if present:
                seen.add((namespace, name))
                self._conditions[key] = found
            else:
                seen.discard((namespace, name))
                self._conditions.pop(key, None)
            self.managed.labels(kind).set(len(seen))

    def conditions(self) -> dict[tuple[str, str, str], Conditions]:
        """(kind, namespace, name) -> conditions, as last seen."""
        with self._lock:
            return dict(self._conditions)


class _ConditionCollector:
    """``rocketkube_operator_condition``, read from :meth:`Metrics.conditions` when
    scraped: an object gone or a condition changed leaves no stale series."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[GaugeMetricFamily]:
        gauge = GaugeMetricFamily(
            "rocketkube_operator_condition",
            "Conditions of the watched objects as last seen: 1 while True, else 0",
            labels=["kind", "resource_namespace", "resource_name", "type", "reason"],
        )
        for (kind, namespace, name), found in self._metrics.conditions().items():
            for type_, status, reason in found:
                gauge.add_metric(
                    [kind, namespace, name, type_, reason], 1.0 if status == "True" else 0.0
                )
        yield gauge
