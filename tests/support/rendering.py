"""Rendering a BrokerCluster for the specs tests, and validating what comes out.

``validate`` checks an object against Kubernetes 1.29's OpenAPI schemas in strict mode
(unknown fields refused), in process: the schemas are imported once per test process.
"""

from __future__ import annotations

from typing import Any

import kubernetes_validate

from rocketkube.operator.api import models
from rocketkube.operator.specs import base, cluster

KUBERNETES_VERSION = "1.29"


def cluster_of(spec: dict[str, Any], name: str = "demo", namespace: str = "prod") -> base.Cluster:
    """The cluster a BrokerCluster with ``spec`` (its wire form, camelCase) describes."""
    resource = models.BrokerCluster.model_validate({"spec": spec})
    return base.Cluster.of(resource, name, namespace)


def render(
    spec: dict[str, Any], name: str = "demo", namespace: str = "prod"
) -> list[base.Manifest]:
    return cluster.objects(cluster_of(spec, name, namespace))


def find(objects: list[base.Manifest], kind: str, name: str) -> base.Manifest:
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def validate(obj: base.Manifest) -> None:
    """Raises ``kubernetes_validate.ValidationError`` for an object the API server refuses."""
    kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
