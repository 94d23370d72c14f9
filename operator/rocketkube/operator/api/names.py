"""Every name the operator derives, in one place (cloudnative-pg's ``specs`` naming rule).

For a BrokerCluster ``c`` in namespace ``ns`` with ``G`` broker groups::

    name servers   StatefulSet + headless Service   c-namesrv        pods c-namesrv-<i>
    broker group g StatefulSet + headless Service   c-broker-<g>     pods c-broker-<g>-<o>
                   ConfigMap (broker.conf)          c-broker-<g>
                   PodDisruptionBudget              c-broker-<g>
                   volume claim of pod o            store-c-broker-<g>-<o>
    name servers   PodDisruptionBudget, ConfigMap   c-namesrv
    every pod      PodMonitor (when served)         c-metrics
    brokerClusterName                               c
    brokerName of group g                           c-broker-<g>
    brokerId of pod ordinal o                       o (0 is the master)
    name server address clients use
        c-namesrv-0.c-namesrv.ns.svc:9876;c-namesrv-1.c-namesrv.ns.svc:9876;...

Stable DNS names, never pod IPs: a name server that restarts with a new IP changes
nothing a broker or a client holds.
"""

from __future__ import annotations

from typing import Final

from rocketkube.common.names import BrokerName, ClusterName

__all__ = [
    "BROKER_COMPONENT",
    "BROKER_PORT",
    "COMPONENT_LABEL",
    "GROUP_LABEL",
    "HTTP_PORT_OFFSET",
    "INSTANCE_LABEL",
    "METRICS_COMPONENT",
    "METRICS_PATH",
    "NAMESRV_COMPONENT",
    "NAMESRV_HTTP_PORT",
    "NAMESRV_PORT",
    "STORE_VOLUME",
    "TEMPLATE_HASH_ANNOTATION",
    "broker_claim",
    "broker_cluster_name",
    "broker_group",
    "broker_name",
    "broker_pod",
    "labels",
    "namesrv",
    "namesrv_address",
    "namesrv_pod",
    "pod_monitor",
    "selector",
]

NAMESRV_PORT: Final = 9876
NAMESRV_HTTP_PORT: Final = 9877
BROKER_PORT: Final = 10911
HTTP_PORT_OFFSET: Final = 3
"""A broker's HTTP port (metrics, health) is its listen port + 3, as ``rocketkube broker``."""

PART_OF: Final = "rocketkube"
MANAGED_BY: Final = "rocketkube-operator"
CLUSTER_LABEL: Final = "rocketkube.io/cluster"
INSTANCE_LABEL: Final = "app.kubernetes.io/instance"
"""Every object and pod of a cluster carries its name under this label."""
COMPONENT_LABEL: Final = "app.kubernetes.io/component"
GROUP_LABEL: Final = "rocketkube.io/group"
NAMESRV_COMPONENT: Final = "namesrv"
BROKER_COMPONENT: Final = "broker"
METRICS_COMPONENT: Final = "metrics"
"""The component label of a cluster's PodMonitor (it selects every pod of the cluster)."""
METRICS_PATH: Final = "/metrics"
"""Where a name server's and a broker's HTTP port serve their Prometheus metrics."""
TEMPLATE_HASH_ANNOTATION: Final = "rocketkube.io/template-hash"
"""On a StatefulSet's pod template, so on its pods: the hash of what the pod runs."""
STORE_VOLUME: Final = "store"
"""A broker's volume claim template (its store)."""


def namesrv(cluster: str) -> str:
    """The name servers' StatefulSet, headless Service, ConfigMap and PDB."""
    return f"{cluster}-namesrv"


def namesrv_pod(cluster: str, ordinal: int) -> str:
    return f"{namesrv(cluster)}-{ordinal}"


def namesrv_address(cluster: str, namespace: str, replicas: int) -> str:
    """The ``a;b;c`` name server address brokers and clients use: each pod's stable DNS
    name through the headless Service."""
    service = namesrv(cluster)
    return ";".join(
        f"{namesrv_pod(cluster, i)}.{service}.{namespace}.svc:{NAMESRV_PORT}"
        for i in range(replicas)
    )


def pod_monitor(cluster: str) -> str:
    """The PodMonitor that has Prometheus scrape every pod of ``cluster``."""
    return f"{cluster}-metrics"


def broker_cluster_name(cluster: str) -> ClusterName:
    """The ``brokerClusterName`` every broker of ``cluster`` registers under."""
    return ClusterName(cluster)


def broker_group(cluster: str, group: int) -> str:
    """Broker group ``group``'s StatefulSet, headless Service, ConfigMap and PDB."""
    return f"{cluster}-broker-{group}"


def broker_name(cluster: str, group: int) -> BrokerName:
    """The group's ``brokerName``, as the name servers route it."""
    return BrokerName(broker_group(cluster, group))


def broker_pod(cluster: str, group: int, ordinal: int) -> str:
    """Pod ``ordinal`` of a group: brokerId ``ordinal``, the master at 0."""
    return f"{broker_group(cluster, group)}-{ordinal}"


def broker_claim(cluster: str, group: int, ordinal: int) -> str:
    """The volume claim a group's StatefulSet makes for pod ``ordinal``'s store."""
    return f"{STORE_VOLUME}-{broker_pod(cluster, group, ordinal)}"


def selector(cluster: str, component: str, group: int | None = None) -> dict[str, str]:
    """The labels that select one component's pods (a group's, for brokers)."""
    out = {INSTANCE_LABEL: cluster, COMPONENT_LABEL: component}
    if group is not None:
        out[GROUP_LABEL] = str(group)
    return out


def labels(cluster: str, component: str, group: int | None = None) -> dict[str, str]:
    """Every label the operator puts on an object of ``cluster``."""
    return {
        "app.kubernetes.io/name": PART_OF,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        CLUSTER_LABEL: cluster,
        **selector(cluster, component, group),
    }
