"""The name servers' StatefulSet and one StatefulSet per broker group.

Both start their pods in parallel (``podManagementPolicy: Parallel``): name servers need
no order, and a group's slave waits for its master by itself. Name servers roll as
Kubernetes rolls them (brokers and clients hold their DNS names, so a restarted name
server changes nothing they hold). A broker group rolls only when the operator deletes
a pod (``updateStrategy: OnDelete``): it restarts slaves before their master, one pod at
a time, each once the previous is ready and caught up, which no StatefulSet strategy
does. A broker gets 60 s to stop: time to flush and close its store cleanly.

A group's pods claim their store from ``spec.brokers.storage`` (one ReadWriteOnce claim
each, ``store-<pod>``). Whether the claims go with their StatefulSet is ``deleteClaim``,
as Kubernetes' own ``persistentVolumeClaimRetentionPolicy`` (beta and on by default
since 1.27, GA in 1.32): ``whenDeleted: Delete`` with it, ``Retain`` without, so the
StatefulSet controller removes them when the set goes, whether scale-in removes the group
or the whole cluster is deleted; ``whenScaled`` is always ``Retain`` (a slave removed by
fewer ``replicasPerGroup`` keeps its store, to come back to).
"""

from __future__ import annotations

from typing import Final

from rocketkube.operator.api import models, names
from rocketkube.operator.specs import base, config, containers, pods

__all__ = ["BROKER_GRACE_SECONDS", "broker_statefulset", "namesrv_statefulset"]

BROKER_GRACE_SECONDS: Final = 60


def namesrv_statefulset(cluster: base.Cluster) -> base.Manifest:
    name = names.namesrv(cluster.name)
    parts = pods.PodParts(
        component=names.NAMESRV_COMPONENT,
        group=None,
        container=containers.namesrv_container(cluster),
        volumes=[_config_volume(name), {"name": containers.DATA_VOLUME, "emptyDir": {}}],
        overrides=cluster.spec.name_servers.template,
        config=config.namesrv_config_map(cluster)["data"],
        http_port=names.NAMESRV_HTTP_PORT,
    )
    spec = _spec(cluster, name, cluster.spec.name_servers.replicas, parts)
    spec["updateStrategy"] = {"type": "RollingUpdate"}
    return _statefulset(cluster, name, parts, spec)


def broker_statefulset(cluster: base.Cluster, group: int) -> base.Manifest:
    name = names.broker_group(cluster.name, group)
    brokers = cluster.spec.brokers
    parts = pods.PodParts(
        component=names.BROKER_COMPONENT,
        group=group,
        container=containers.broker_container(cluster),
        volumes=[_config_volume(name)],
        overrides=brokers.template,
        config=config.broker_config_map(cluster, group)["data"],
        http_port=containers.BROKER_HTTP_PORT,
        grace_seconds=BROKER_GRACE_SECONDS,
    )
    spec = _spec(cluster, name, brokers.replicas_per_group, parts)
    spec["updateStrategy"] = {"type": "OnDelete"}
    spec["volumeClaimTemplates"] = [_store_claim(cluster, group)]
    spec["persistentVolumeClaimRetentionPolicy"] = _retention(brokers.storage)
    return _statefulset(cluster, name, parts, spec)


def _spec(
    cluster: base.Cluster, service: str, replicas: int, parts: pods.PodParts
) -> base.Manifest:
    return {
        "serviceName": service,
        "replicas": replicas,
        "podManagementPolicy": "Parallel",
        "selector": {"matchLabels": names.selector(cluster.name, parts.component, parts.group)},
        "template": pods.template(cluster, parts),
    }


def _statefulset(
    cluster: base.Cluster, name: str, parts: pods.PodParts, spec: base.Manifest
) -> base.Manifest:
    labels = names.labels(cluster.name, parts.component, parts.group)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": base.metadata(cluster, name, labels),
        "spec": spec,
    }


def _config_volume(config_map: str) -> base.Manifest:
    return {"name": containers.CONFIG_VOLUME, "configMap": {"name": config_map}}


def _retention(storage: models.StorageSpec) -> base.Manifest:
    return {"whenDeleted": "Delete" if storage.delete_claim else "Retain", "whenScaled": "Retain"}


def _store_claim(cluster: base.Cluster, group: int) -> base.Manifest:
    storage = cluster.spec.brokers.storage
    spec: base.Manifest = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": storage.size}},
    }
    if storage.storage_class_name is not None:
        spec["storageClassName"] = storage.storage_class_name
    return {
        "metadata": {
            "name": names.STORE_VOLUME,
            "labels": names.labels(cluster.name, names.BROKER_COMPONENT, group),
        },
        "spec": spec,
    }
