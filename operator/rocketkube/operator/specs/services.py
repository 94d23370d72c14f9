"""Headless Services: the name servers' and one per broker group.

A headless Service gives each pod of its StatefulSet a stable DNS name
(``<pod>.<service>.<namespace>.svc``). The name servers' publishes pods before they are
ready: brokers starting beside them must resolve the addresses in their ``namesrvAddr``
to register at all. A group's Service is also what clients in the cluster find the
group by; RocketMQ clients then follow the name servers' routes to each broker.
"""

from __future__ import annotations

from collections.abc import Sequence

from rocketkube.operator.api import names
from rocketkube.operator.specs import base, containers

__all__ = ["broker_service", "namesrv_service"]


def namesrv_service(cluster: base.Cluster) -> base.Manifest:
    ports = [
        ("remoting", names.NAMESRV_PORT),
        (containers.http_port_name(cluster), names.NAMESRV_HTTP_PORT),
    ]
    service = _headless(cluster, names.namesrv(cluster.name), names.NAMESRV_COMPONENT, None, ports)
    service["spec"]["publishNotReadyAddresses"] = True
    return service


def broker_service(cluster: base.Cluster, group: int) -> base.Manifest:
    ports = [
        ("remoting", names.BROKER_PORT),
        ("ha", containers.BROKER_HA_PORT),
        (containers.http_port_name(cluster), containers.BROKER_HTTP_PORT),
    ]
    name = names.broker_group(cluster.name, group)
    return _headless(cluster, name, names.BROKER_COMPONENT, group, ports)


def _headless(
    cluster: base.Cluster,
    name: str,
    component: str,
    group: int | None,
    ports: Sequence[tuple[str, int]],
) -> base.Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": base.metadata(cluster, name, names.labels(cluster.name, component, group)),
        "spec": {
            "clusterIP": "None",
            "selector": names.selector(cluster.name, component, group),
            "ports": [
                {"name": port_name, "port": number, "targetPort": port_name, "protocol": "TCP"}
                for port_name, number in ports
            ],
        },
    }
