"""REST paths of the kinds the operator reads and writes.

A static table instead of API discovery: the operator knows every kind it touches, and a
table costs no round trip and no cache file. Discovery answers only whether an optional
kind (the Prometheus operator's PodMonitor) is served at all.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import quote

from rocketkube.operator.api import models

__all__ = ["PLURALS", "collection", "group_version", "item"]

PLURALS: Final[dict[tuple[str, str], str]] = {
    ("v1", "Pod"): "pods",
    ("v1", "Service"): "services",
    ("v1", "ConfigMap"): "configmaps",
    ("v1", "PersistentVolumeClaim"): "persistentvolumeclaims",
    ("v1", "Event"): "events",
    ("v1", "Namespace"): "namespaces",
    ("apps/v1", "StatefulSet"): "statefulsets",
    ("policy/v1", "PodDisruptionBudget"): "poddisruptionbudgets",
    (f"{models.GROUP}/{models.VERSION}", "BrokerCluster"): "brokerclusters",
    (f"{models.GROUP}/{models.VERSION}", "Topic"): "topics",
    (f"{models.GROUP}/{models.VERSION}", "ConsumerGroup"): "consumergroups",
    ("monitoring.coreos.com/v1", "PodMonitor"): "podmonitors",
}
_CLUSTER_SCOPED: Final = frozenset({("v1", "Namespace")})


def _prefix(api_version: str) -> str:
    return "/api/v1" if api_version == "v1" else f"/apis/{api_version}"


def group_version(api_version: str) -> str:
    """The discovery path of ``api_version``: the kinds it serves."""
    return _prefix(api_version)


def collection(api_version: str, kind: str, namespace: str | None) -> str:
    """The path listing (or creating) ``kind`` in ``namespace`` (all namespaces: None)."""
    try:
        plural = PLURALS[(api_version, kind)]
    except KeyError:
        raise ValueError(f"unknown kind {api_version} {kind}") from None
    if namespace is None or (api_version, kind) in _CLUSTER_SCOPED:
        return f"{_prefix(api_version)}/{plural}"
    return f"{_prefix(api_version)}/namespaces/{quote(namespace, safe='')}/{plural}"


def item(
    api_version: str, kind: str, namespace: str | None, name: str, subresource: str = ""
) -> str:
    """The path of one object (and of its ``status`` or ``scale`` subresource)."""
    path = f"{collection(api_version, kind, namespace)}/{quote(name, safe='')}"
    return f"{path}/{subresource}" if subresource else path
