"""Every object of a BrokerCluster, in the order to apply them: a set's ConfigMap and
Service before its StatefulSet (its pods mount the one and are named through the other),
its PodDisruptionBudget after; the name servers before the broker groups; the PodMonitor
last, when there is one (metrics on, PodMonitors served)."""

from __future__ import annotations

from rocketkube.operator.specs import base, budgets, config, monitoring, services, statefulsets

__all__ = ["group_objects", "namesrv_objects", "objects"]


def namesrv_objects(cluster: base.Cluster) -> list[base.Manifest]:
    return [
        config.namesrv_config_map(cluster),
        services.namesrv_service(cluster),
        statefulsets.namesrv_statefulset(cluster),
        budgets.namesrv_budget(cluster),
    ]


def group_objects(cluster: base.Cluster, group: int) -> list[base.Manifest]:
    """Broker group ``group``'s objects (also a group that scale-in is removing)."""
    return [
        config.broker_config_map(cluster, group),
        services.broker_service(cluster, group),
        statefulsets.broker_statefulset(cluster, group),
        budgets.broker_budget(cluster, group),
    ]


def objects(cluster: base.Cluster) -> list[base.Manifest]:
    out = namesrv_objects(cluster)
    for group in range(cluster.spec.brokers.groups):
        out += group_objects(cluster, group)
    if cluster.scraped_by_pod_monitor:
        out.append(monitoring.pod_monitor(cluster))
    return out
