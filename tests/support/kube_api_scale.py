"""The ``scale`` subresource: an ``autoscaling/v1`` Scale read from, and written into, the
paths a kind declares (a StatefulSet's ``.spec.replicas``, a CRD's ``specReplicasPath``
...). For built-in kinds without a label selector path, the selector is the object's
``spec.selector.matchLabels`` as a string, as a StatefulSet's Scale shows it.
"""

from __future__ import annotations

import copy
from typing import Any

from kube_api_errors import Cause, invalid, not_found
from kube_api_resources import ResourceType
from kube_api_table import jsonpath

__all__ = ["scale_of", "with_scale"]


def scale_of(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """The ``autoscaling/v1`` Scale of ``obj``."""
    scale = rt.scale
    if scale is None:
        raise not_found(f"{rt.plural}/scale", rt.group, obj["metadata"]["name"])
    spec = jsonpath(obj, scale.spec_replicas_path)
    status = jsonpath(obj, scale.status_replicas_path)
    selector = jsonpath(obj, scale.label_selector_path) if scale.label_selector_path else []
    if not selector and rt.builtin:
        labels = (obj.get("spec", {}).get("selector") or {}).get("matchLabels") or {}
        selector = [",".join(f"{k}={v}" for k, v in sorted(labels.items()))]
    metadata = {
        k: obj["metadata"][k]
        for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if k in obj["metadata"]
    }
    status_body: dict[str, Any] = {"replicas": status[0] if status else 0}
    if selector and selector[0]:
        status_body["selector"] = selector[0]
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": spec[0] if spec else 0},
        "status": status_body,
    }


def with_scale(rt: ResourceType, old: dict[str, Any], scale: dict[str, Any]) -> dict[str, Any]:
    """``old`` with the replicas of a written Scale (and its resourceVersion, to check)."""
    if rt.scale is None:
        raise not_found(f"{rt.plural}/scale", rt.group, old["metadata"]["name"])
    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or replicas < 0:
        cause_message = f"Invalid value: {replicas!r}: must be greater than or equal to 0"
        raise invalid(
            "Scale",
            "autoscaling",
            old["metadata"]["name"],
            [Cause("FieldValueInvalid", cause_message, "spec.replicas")],
        )
    body = copy.deepcopy(old)
    target = body
    steps = rt.scale.spec_replicas_path.strip(".").split(".")
    for step in steps[:-1]:
        target = target.setdefault(step, {})
    target[steps[-1]] = replicas
    body["metadata"]["resourceVersion"] = (scale.get("metadata") or {}).get("resourceVersion")
    return body
