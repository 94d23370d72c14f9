"""The name server's and the broker's container: command, ports, probes, env, mounts.

Ports (the broker's derived from its listen port, as ``rocketkube broker`` does)::

    name server   remoting 9876    http 9877 (metrics, /healthz, /readyz)
    broker        remoting 10911   ha 10912 (replication)   http 10914

The HTTP port is named ``metrics`` when metrics are on (what a PodMonitor selects),
``http`` otherwise. Probes all use it: startup and liveness on ``/healthz``, readiness
on ``/readyz`` (a broker is ready once its store is recovered and it has registered).
A broker's startup probe waits up to ten minutes: recovering a large store takes time,
and a liveness kill in the middle would only start it again. A broker learns its pod's
name, namespace and IP from the downward API (``--identity-from-pod``).

Both run ``rocketkube`` as the container's first process (``command`` replaces the
image's entrypoint), which stops cleanly on SIGTERM by itself, on a read-only root
filesystem, unprivileged: a server writes only to its data volume.
"""

from __future__ import annotations

from typing import Final

from rocketkube.operator.api import models, names
from rocketkube.operator.specs import base, config

__all__ = [
    "BROKER_HA_PORT",
    "BROKER_HTTP_PORT",
    "CONFIG_VOLUME",
    "DATA_VOLUME",
    "broker_container",
    "http_port_name",
    "namesrv_container",
]

BROKER_HA_PORT: Final = names.BROKER_PORT + 1
BROKER_HTTP_PORT: Final = names.BROKER_PORT + names.HTTP_PORT_OFFSET
CONFIG_VOLUME: Final = "config"
DATA_VOLUME: Final = "data"

PROBE_PERIOD_SECONDS: Final = 5
NAMESRV_STARTUP_FAILURES: Final = 24
"""Two minutes for a name server to start."""
BROKER_STARTUP_FAILURES: Final = 120
"""Ten minutes for a broker to recover its store and start."""

_DOWNWARD: Final = (
    ("POD_NAME", "metadata.name"),
    ("POD_NAMESPACE", "metadata.namespace"),
    ("POD_IP", "status.podIP"),
)


def http_port_name(cluster: base.Cluster) -> str:
    return "metrics" if cluster.spec.metrics.enabled else "http"


def namesrv_container(cluster: base.Cluster) -> base.Manifest:
    spec = cluster.spec
    http = http_port_name(cluster)
    container: base.Manifest = {
        "name": names.NAMESRV_COMPONENT,
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy.value,
        "command": ["rocketkube"],
        "args": ["namesrv", "-c", f"{base.CONFIG_DIR}/{config.NAMESRV_CONF}"],
        "ports": [_port("remoting", names.NAMESRV_PORT), _port(http, names.NAMESRV_HTTP_PORT)],
        "volumeMounts": [_config_mount(), {"name": DATA_VOLUME, "mountPath": base.DATA_DIR}],
        **_probes(http, NAMESRV_STARTUP_FAILURES),
        "securityContext": _security(),
    }
    return _with_resources(container, spec.name_servers.resources)


def broker_container(cluster: base.Cluster) -> base.Manifest:
    spec = cluster.spec
    http = http_port_name(cluster)
    container: base.Manifest = {
        "name": names.BROKER_COMPONENT,
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy.value,
        "command": ["rocketkube"],
        "args": ["broker", "-c", f"{base.CONFIG_DIR}/{config.BROKER_CONF}", "--identity-from-pod"],
        "ports": [
            _port("remoting", names.BROKER_PORT),
            _port("ha", BROKER_HA_PORT),
            _port(http, BROKER_HTTP_PORT),
        ],
        "env": [
            {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}
            for name, path in _DOWNWARD
        ],
        "volumeMounts": [
            _config_mount(),
            {"name": names.STORE_VOLUME, "mountPath": base.DATA_DIR},
        ],
        **_probes(http, BROKER_STARTUP_FAILURES),
        "securityContext": _security(),
    }
    return _with_resources(container, spec.brokers.resources)


def _security() -> base.Manifest:
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def _port(name: str, number: int) -> base.Manifest:
    return {"name": name, "containerPort": number, "protocol": "TCP"}


def _config_mount() -> base.Manifest:
    return {"name": CONFIG_VOLUME, "mountPath": base.CONFIG_DIR, "readOnly": True}


def _probes(port: str, startup_failures: int) -> base.Manifest:
    return {
        "startupProbe": _probe("/healthz", port, startup_failures),
        "livenessProbe": _probe("/healthz", port, 3, period=10),
        "readinessProbe": _probe("/readyz", port, 3),
    }


def _probe(
    path: str, port: str, failures: int, period: int = PROBE_PERIOD_SECONDS
) -> base.Manifest:
    return {
        "httpGet": {"path": path, "port": port},
        "periodSeconds": period,
        "timeoutSeconds": 3,
        "failureThreshold": failures,
    }


def _with_resources(
    container: base.Manifest, resources: models.ResourceRequirements
) -> base.Manifest:
    rendered = {
        key: dict(value)
        for key, value in (("limits", resources.limits), ("requests", resources.requests))
        if value
    }
    return {**container, "resources": rendered} if rendered else container
