"""Pod templates: a container in, the template a StatefulSet runs out.

What goes in, later entries winning::

    labels        the user's (spec...template.labels), then the operator's (names.labels:
                  the selector's keys among them, so a user label never unselects a pod)
    annotations   the user's, then Prometheus' (metrics on and no PodMonitors served:
                  prometheus.io/scrape, port, path), then rocketkube.io/template-hash
    spec          the container, its volumes, terminationGracePeriodSeconds, then the
                  user's scheduling: affinity (by default: prefer spreading a group's
                  pods, or the name servers, over nodes), tolerations, nodeSelector,
                  priorityClassName, securityContext (by default: the image's non-root
                  user, with fsGroup so a fresh store claim is writable by it, and the
                  runtime's seccomp profile), topologySpreadConstraints

The template hash is a sha256 of canonical JSON (sorted keys, no spaces) of the template
and of the config file its pods mount, first 16 hex digits. A running pod whose hash
differs from its StatefulSet's runs something else (an image, resources, properties,
overrides): the operator rolls it. The config file takes part because a pod reads it only
when it starts; so does ``namesrvAddr`` in it, which a running broker cannot change:
scaling the name servers rolls the brokers; restarting one does not. So does the way
Prometheus finds the pods: the annotations go when PodMonitors become available (the
Prometheus operator installed), and the pods roll once to show what their template says.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from rocketkube.operator.api import models, names
from rocketkube.operator.specs import base

__all__ = ["HASH_LENGTH", "PodParts", "template", "template_hash"]

HASH_LENGTH: Final = 16


@dataclass(frozen=True)
class PodParts:
    """What differs between the name servers' pods and a broker group's."""

    component: str
    group: int | None
    container: base.Manifest
    volumes: list[base.Manifest]
    overrides: models.PodTemplateOverrides
    config: Mapping[str, str]
    """The ConfigMap's data the pods mount (part of the hash)."""
    http_port: int
    grace_seconds: int | None = None


def template(cluster: base.Cluster, parts: PodParts) -> base.Manifest:
    """The pod template, its hash annotation included."""
    overrides = parts.overrides
    selector = names.selector(cluster.name, parts.component, parts.group)
    labels = {**overrides.labels, **names.labels(cluster.name, parts.component, parts.group)}
    annotations = {**overrides.annotations, **_metrics_annotations(cluster, parts.http_port)}
    spec: base.Manifest = {"containers": [parts.container], "volumes": parts.volumes}
    if parts.grace_seconds is not None:
        spec["terminationGracePeriodSeconds"] = parts.grace_seconds
    spec["affinity"] = copy.deepcopy(overrides.affinity) or _spread(selector)
    spec["securityContext"] = copy.deepcopy(overrides.security_context) or _pod_security()
    spec.update(_scheduling(overrides))
    rendered: base.Manifest = {
        "metadata": {"labels": labels, "annotations": annotations},
        "spec": spec,
    }
    annotations[names.TEMPLATE_HASH_ANNOTATION] = template_hash(rendered, parts.config)
    return rendered


def template_hash(rendered: base.Manifest, config: Mapping[str, str]) -> str:
    """The hash of a pod template (less its own hash annotation) and its pods' config."""
    metadata = rendered.get("metadata", {})
    annotations = {
        key: value
        for key, value in metadata.get("annotations", {}).items()
        if key != names.TEMPLATE_HASH_ANNOTATION
    }
    unhashed = {**rendered, "metadata": {**metadata, "annotations": annotations}}
    body = {"template": unhashed, "config": dict(config)}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:HASH_LENGTH]


def _metrics_annotations(cluster: base.Cluster, port: int) -> dict[str, str]:
    if not cluster.scraped_by_annotations:
        return {}
    return {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(port),
        "prometheus.io/path": names.METRICS_PATH,
    }


def _spread(selector: Mapping[str, str]) -> base.Manifest:
    """Prefer nodes that hold no other pod of the same set: a master and its slave (or
    two name servers) on one node fail together."""
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": dict(selector)},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    }


def _pod_security() -> base.Manifest:
    """The image's user (never root); ``OnRootMismatch`` spares a large store a recursive
    change of ownership at every start."""
    return {
        "runAsNonRoot": True,
        "runAsUser": base.IMAGE_UID,
        "runAsGroup": base.IMAGE_UID,
        "fsGroup": base.IMAGE_UID,
        "fsGroupChangePolicy": "OnRootMismatch",
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _scheduling(overrides: models.PodTemplateOverrides) -> base.Manifest:
    """The user's scheduling fields that are set, copied."""
    fields: base.Manifest = {
        "tolerations": overrides.tolerations,
        "nodeSelector": overrides.node_selector,
        "priorityClassName": overrides.priority_class_name,
        "topologySpreadConstraints": overrides.topology_spread_constraints,
    }
    return {key: copy.deepcopy(value) for key, value in fields.items() if value}
