"""The cluster being rendered, and what every object's metadata holds.

A builder takes a :class:`Cluster` (the resource's name, namespace and spec, as a kopf
handler receives them) and returns plain dicts; a spec the CRD's schema let through but
that cannot be rendered raises :class:`InvalidSpec`, which a handler turns into the
``InvalidSpec`` reason on the resource's ``Degraded`` condition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from rocketkube.operator.api import models

__all__ = [
    "CONFIG_DIR",
    "DATA_DIR",
    "IMAGE_UID",
    "Cluster",
    "InvalidSpec",
    "Manifest",
    "metadata",
]

Manifest = dict[str, Any]
"""A Kubernetes object (or part of one) as the API takes it: camelCase keys, JSON values."""

CONFIG_DIR: Final = "/etc/rocketkube"
"""Where a pod's ConfigMap (its ``namesrv.conf`` or ``broker.conf``) is mounted."""
DATA_DIR: Final = "/var/lib/rocketkube"
"""Where a pod keeps its data: a broker's store volume, a name server's KV config (the
image's ``HOME``, so what a server writes by default lands there too)."""
IMAGE_UID: Final = 10001
"""The user and group the rocketkube image runs as (its ``Dockerfile``): a pod runs as it,
and owns its volumes through ``fsGroup``."""


class InvalidSpec(ValueError):
    """The spec passed the CRD's schema but cannot be rendered; the message says why."""


@dataclass(frozen=True)
class Cluster:
    """A BrokerCluster: its ``metadata.name``, ``metadata.namespace`` and spec; and what
    the API server it runs on offers, where that changes what is rendered."""

    name: str
    namespace: str
    spec: models.BrokerClusterSpec
    pod_monitors: bool = False
    """The API server serves ``monitoring.coreos.com/v1`` PodMonitors (the Prometheus
    operator's): with metrics on, a PodMonitor has the pods scraped, not annotations."""

    @classmethod
    def of(
        cls,
        resource: models.BrokerCluster,
        name: str,
        namespace: str,
        *,
        pod_monitors: bool = False,
    ) -> Cluster:
        return cls(name=name, namespace=namespace, spec=resource.spec, pod_monitors=pod_monitors)

    @property
    def scraped_by_pod_monitor(self) -> bool:
        return self.spec.metrics.enabled and self.pod_monitors

    @property
    def scraped_by_annotations(self) -> bool:
        return self.spec.metrics.enabled and not self.pod_monitors


def metadata(cluster: Cluster, name: str, labels: Mapping[str, str]) -> Manifest:
    """An object's ``metadata``: in the cluster's namespace, labelled."""
    return {"name": name, "namespace": cluster.namespace, "labels": dict(labels)}
