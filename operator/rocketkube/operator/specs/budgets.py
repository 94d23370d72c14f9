"""PodDisruptionBudgets: a node drain takes one pod of a set at a time.

One for the name servers, one per broker group (so a drain never takes a master and its
slave together; another group's pods are another budget's). ``maxUnavailable: 1``, as
Strimzi's default: unlike ``minAvailable`` it stays right as replicas change.
"""

from __future__ import annotations

from rocketkube.operator.api import names
from rocketkube.operator.specs import base

__all__ = ["broker_budget", "namesrv_budget"]


def namesrv_budget(cluster: base.Cluster) -> base.Manifest:
    return _budget(cluster, names.namesrv(cluster.name), names.NAMESRV_COMPONENT, None)


def broker_budget(cluster: base.Cluster, group: int) -> base.Manifest:
    name = names.broker_group(cluster.name, group)
    return _budget(cluster, name, names.BROKER_COMPONENT, group)


def _budget(cluster: base.Cluster, name: str, component: str, group: int | None) -> base.Manifest:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": base.metadata(cluster, name, names.labels(cluster.name, component, group)),
        "spec": {
            "maxUnavailable": 1,
            "selector": {"matchLabels": names.selector(cluster.name, component, group)},
        },
    }
