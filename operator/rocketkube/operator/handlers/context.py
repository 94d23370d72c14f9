"""What every handler shares, passed through kopf's ``memo`` (never module globals): the
Kubernetes client, how to reach a cluster's name servers, timing, the metrics.

``main`` builds one :class:`Context` per operator and gives kopf a memo holding it; kopf
hands each resource a shallow copy of that memo, so every handler sees the same context.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from rocketkube.operator import metrics
from rocketkube.operator.api import names

if TYPE_CHECKING:  # kopf and the Kubernetes client are the operator extra's: the command
    import kopf  # line reads the defaults here without them

    from rocketkube.operator.kube.client import Kube

__all__ = [
    "DEFAULT_TIMER_INTERVAL",
    "MEMO_KEY",
    "TIME_FORMAT",
    "AddressOf",
    "Context",
    "Timing",
    "context_of",
    "in_cluster_address",
    "overridden_address",
    "utc_now",
]

DEFAULT_TIMER_INTERVAL: Final = 10.0
TIME_FORMAT: Final = "%Y-%m-%dT%H:%M:%SZ"
"""How Kubernetes writes a time in a status (RFC 3339, seconds, ``Z``)."""
MEMO_KEY: Final = "rocketkube"

AddressOf = Callable[[str, str, int], str]
"""(cluster, namespace, name server replicas) -> the ``a;b`` name server address the
operator's admin client uses for that cluster."""


def in_cluster_address(cluster: str, namespace: str, replicas: int) -> str:
    """The name servers' stable in-cluster DNS names: the operator runs in the cluster."""
    return names.namesrv_address(cluster, namespace, replicas)


def overridden_address(overrides: Mapping[str, str]) -> AddressOf:
    """:func:`in_cluster_address`, except for the clusters ``overrides`` names (cluster ->
    ``a;b`` name server address): an operator run outside the cluster, for development
    and benchmarks, reaches their name servers where they really listen."""
    table = dict(overrides)

    def address_of(cluster: str, namespace: str, replicas: int) -> str:
        found = table.get(cluster)
        return in_cluster_address(cluster, namespace, replicas) if found is None else found

    return address_of


def utc_now() -> str:
    """The time as Kubernetes writes it (RFC 3339, seconds, ``Z``)."""
    return dt.datetime.now(dt.UTC).strftime(TIME_FORMAT)


@dataclass(frozen=True)
class Timing:
    """How often the timers run and how long handlers wait before trying again."""

    timer_interval: float = DEFAULT_TIMER_INTERVAL
    """Seconds between the timers' passes over each resource."""
    retry_delay: float = 5.0
    """Seconds before retrying after a wait (a cluster not ready, a broker silent)."""
    conflict_delay: float = 1.0
    """Seconds before retrying after a 409: someone else wrote the object meanwhile."""
    backoff_limit: float = 60.0
    """The longest delay between retries of a failing API call."""
    admin_timeout: float = 3.0
    """Seconds each admin request to a name server or broker may take."""
    status_refresh: float = 60.0
    """Seconds before a Topic's or ConsumerGroup's ``lastChecked`` is written again while
    nothing else in its status changes."""

    def backoff(self, retry: int) -> float:
        """The delay before retry number ``retry`` (0, 1, ...) of a failing call."""
        return float(min(self.backoff_limit, self.retry_delay * 2 ** min(retry, 10)))


@dataclass
class Context:
    """One operator's shared parts."""

    kube: Kube
    login: Callable[[], Awaitable[kopf.ConnectionInfo]]
    """kopf's credentials (the same the Kubernetes client uses)."""
    metrics: metrics.Metrics = field(default_factory=metrics.Metrics)
    address_of: AddressOf = in_cluster_address
    timing: Timing = field(default_factory=Timing)
    now: Callable[[], str] = utc_now


def context_of(memo: Any) -> Context:
    """The context in kopf's ``memo`` (as :func:`rocketkube.operator.main` put it there)."""
    found = memo[MEMO_KEY]
    assert isinstance(found, Context)
    return found
