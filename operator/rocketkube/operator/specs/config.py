"""``namesrv.conf`` and each group's ``broker.conf``, and the ConfigMaps that hold them.

Java properties under RocketMQ's own names, as ``rocketkube namesrv -c`` and
``rocketkube broker -c`` read them::

    namesrv.conf   listenPort, kvConfigPath (on the pod's data volume),
                   then spec.nameServers.properties
    broker.conf    brokerClusterName, brokerName, namesrvAddr (stable DNS names),
                   listenPort, storePathRootDir (on the store volume), flushDiskType,
                   brokerRole (the master's: ASYNC_MASTER or SYNC_MASTER),
                   then spec.brokers.properties

What the operator derives comes first and wins over a user property of the same name
(the CRD refuses those for brokers). brokerId, brokerIP1 and a slave's role are not in
the file: one file serves every pod of a group, and the broker takes them from its pod
(``rocketkube broker --identity-from-pod``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from rocketkube.common.properties_file import format_properties
from rocketkube.operator.api import models, names
from rocketkube.operator.specs import base

__all__ = [
    "BROKER_CONF",
    "NAMESRV_CONF",
    "broker_config_map",
    "broker_properties",
    "namesrv_config_map",
    "namesrv_properties",
]

NAMESRV_CONF: Final = "namesrv.conf"
BROKER_CONF: Final = "broker.conf"
STORE_DIR: Final = f"{base.DATA_DIR}/store"
KV_CONFIG_PATH: Final = f"{base.DATA_DIR}/namesrv/kvConfig.json"

_MASTER_ROLE: Final = {
    models.Replication.ASYNC: "ASYNC_MASTER",
    models.Replication.SYNC: "SYNC_MASTER",
}
_KEY: Final = re.compile(r"^[A-Za-z0-9_.-]+$")


def namesrv_properties(cluster: base.Cluster) -> dict[str, str]:
    derived = {"listenPort": str(names.NAMESRV_PORT), "kvConfigPath": KV_CONFIG_PATH}
    return _merge(derived, cluster.spec.name_servers.properties, "nameServers")


def broker_properties(cluster: base.Cluster, group: int) -> dict[str, str]:
    brokers = cluster.spec.brokers
    replicas = cluster.spec.name_servers.replicas
    derived = {
        "brokerClusterName": names.broker_cluster_name(cluster.name),
        "brokerName": names.broker_name(cluster.name, group),
        "namesrvAddr": names.namesrv_address(cluster.name, cluster.namespace, replicas),
        "listenPort": str(names.BROKER_PORT),
        "storePathRootDir": STORE_DIR,
        "flushDiskType": brokers.flush_disk_type.value,
        "brokerRole": _MASTER_ROLE[brokers.replication],
    }
    return _merge(derived, brokers.properties, "brokers")


def namesrv_config_map(cluster: base.Cluster) -> base.Manifest:
    labels = names.labels(cluster.name, names.NAMESRV_COMPONENT)
    text = format_properties(dict(namesrv_properties(cluster)))
    return _config_map(cluster, names.namesrv(cluster.name), labels, NAMESRV_CONF, text)


def broker_config_map(cluster: base.Cluster, group: int) -> base.Manifest:
    labels = names.labels(cluster.name, names.BROKER_COMPONENT, group)
    text = format_properties(dict(broker_properties(cluster, group)))
    return _config_map(cluster, names.broker_group(cluster.name, group), labels, BROKER_CONF, text)


def _config_map(
    cluster: base.Cluster, name: str, labels: Mapping[str, str], key: str, text: str
) -> base.Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": base.metadata(cluster, name, labels),
        "data": {key: text},
    }


def _merge(derived: dict[str, str], user: Mapping[str, str], field: str) -> dict[str, str]:
    """``derived`` in its order, then the user's properties by name, less the derived."""
    for key, value in user.items():
        _check(key, value, field)
    extra = {key: user[key] for key in sorted(user) if key not in derived}
    return {**derived, **extra}


def _check(key: str, value: str, field: str) -> None:
    """A key or value that would break the file's lines (and so smuggle in another
    property) is refused: a properties file has no escapes here."""
    if not _KEY.match(key):
        raise base.InvalidSpec(f"spec.{field}.properties: {key!r} is not a property name")
    if "\n" in value or "\r" in value or value.endswith("\\"):
        raise base.InvalidSpec(
            f"spec.{field}.properties.{key}: a value cannot hold a line break or end in '\\'"
        )
