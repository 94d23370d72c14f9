"""The PodMonitor that has the Prometheus operator scrape a cluster's pods.

One per BrokerCluster with metrics on, when the API server serves
``monitoring.coreos.com/v1`` PodMonitors (otherwise the pod templates carry
``prometheus.io/*`` annotations: ``pods``). It selects every name-server and broker pod
of the cluster and scrapes the container port named ``metrics`` (the HTTP port:
name server 9877, broker 10914) at ``/metrics``, where both serve Prometheus' text
format. Each target is labelled with the pod's component and broker group, so queries
can tell brokers from name servers and one group from another.
"""

from __future__ import annotations

from typing import Final

from rocketkube.operator.api import names
from rocketkube.operator.specs import base, containers

__all__ = ["API_VERSION", "KIND", "pod_monitor"]

API_VERSION: Final = "monitoring.coreos.com/v1"
KIND: Final = "PodMonitor"


def pod_monitor(cluster: base.Cluster) -> base.Manifest:
    labels = names.labels(cluster.name, names.METRICS_COMPONENT)
    port = containers.http_port_name(cluster)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": base.metadata(cluster, names.pod_monitor(cluster.name), labels),
        "spec": {
            "selector": {
                "matchLabels": {names.INSTANCE_LABEL: cluster.name},
                "matchExpressions": [
                    {
                        "key": names.COMPONENT_LABEL,
                        "operator": "In",
                        "values": [names.NAMESRV_COMPONENT, names.BROKER_COMPONENT],
                    }
                ],
            },
            "podTargetLabels": [names.COMPONENT_LABEL, names.GROUP_LABEL],
            "podMetricsEndpoints": [{"port": port, "path": names.METRICS_PATH}],
        },
    }
