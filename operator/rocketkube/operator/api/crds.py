"""The CustomResourceDefinitions of the operator's kinds, generated from :mod:`.models`.

``crds/*.yaml`` are this module's output (``make crds``); a test fails when they differ
from what the models give. Each CRD serves one version (``v1alpha1``), namespaced, with
the ``status`` subresource, short names and the printer columns ``kubectl get`` shows.
``status`` keeps unknown fields, so kopf can store its progress there.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Final

import yaml
from pydantic import BaseModel

from rocketkube.operator.api import models, schema

__all__ = ["KINDS", "CrdKind", "crd", "render_all", "write_all"]


@dataclasses.dataclass(frozen=True)
class CrdKind:
    """One custom resource kind and how the API server shows it."""

    model: type[BaseModel]
    kind: str
    plural: str
    short_names: tuple[str, ...]
    columns: tuple[dict[str, Any], ...]

    @property
    def name(self) -> str:
        """The CRD's name, ``<plural>.<group>``."""
        return f"{self.plural}.{models.GROUP}"


def _ready(path: str = '.status.conditions[?(@.type=="Ready")].status') -> dict[str, Any]:
    return {"name": "Ready", "type": "string", "jsonPath": path}


_AGE: Final = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}

KINDS: Final = (
    CrdKind(
        models.BrokerCluster,
        "BrokerCluster",
        "brokerclusters",
        ("rkc", "rocketmq"),
        (
            {"name": "Groups", "type": "integer", "jsonPath": ".spec.brokers.groups"},
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.brokers.replicasPerGroup"},
            {"name": "Ready Groups", "type": "string", "jsonPath": ".status.readyGroups"},
            _ready(),
            {"name": "Image", "type": "string", "jsonPath": ".status.image", "priority": 1},
            {
                "name": "Name Servers",
                "type": "string",
                "jsonPath": ".status.nameServerAddress",
                "priority": 1,
            },
            _AGE,
        ),
    ),
    CrdKind(
        models.Topic,
        "Topic",
        "topics",
        ("rkt",),
        (
            {"name": "Cluster", "type": "string", "jsonPath": ".spec.cluster"},
            {"name": "Topic", "type": "string", "jsonPath": ".status.topicName"},
            {"name": "Queues", "type": "integer", "jsonPath": ".spec.queues"},
            _ready(),
            _AGE,
        ),
    ),
    CrdKind(
        models.ConsumerGroup,
        "ConsumerGroup",
        "consumergroups",
        ("rkg",),
        (
            {"name": "Cluster", "type": "string", "jsonPath": ".spec.cluster"},
            {"name": "Group", "type": "string", "jsonPath": ".status.groupName"},
            {"name": "Lag", "type": "integer", "jsonPath": ".status.totalLag"},
            _ready(),
            _AGE,
        ),
    ),
)


def _root_schema(kind: CrdKind) -> dict[str, Any]:
    """The version's ``openAPIV3Schema``: spec from the model, status open to kopf."""
    full = schema.structural(kind.model.model_json_schema(by_alias=True))
    spec = full["properties"]["spec"]
    status = full["properties"]["status"]
    status["type"] = "object"
    status["x-kubernetes-preserve-unknown-fields"] = True
    status.pop("nullable", None)
    root: dict[str, Any] = {
        "type": "object",
        "description": full.get("description", f"A {kind.kind}."),
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
    }
    if "spec" in full.get("required", ()):
        root["required"] = ["spec"]
    else:
        spec.setdefault("default", {})
    validations = full.get("x-kubernetes-validations")
    if validations:
        root["x-kubernetes-validations"] = validations
    return root


def crd(kind: CrdKind) -> dict[str, Any]:
    """The ``apiextensions.k8s.io/v1`` CustomResourceDefinition of ``kind``."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": kind.name, "labels": {"app.kubernetes.io/part-of": "rocketkube"}},
        "spec": {
            "group": models.GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind.kind,
                "listKind": f"{kind.kind}List",
                "plural": kind.plural,
                "singular": kind.kind.lower(),
                "shortNames": list(kind.short_names),
                "categories": ["rocketkube"],
            },
            "versions": [
                {
                    "name": models.VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": list(kind.columns),
                    "schema": {"openAPIV3Schema": _root_schema(kind)},
                }
            ],
        },
    }


_HEADER: Final = "# Generated from rocketkube.operator.api.models by `make crds`: do not edit.\n"


def render_all() -> dict[str, str]:
    """File name -> YAML text of each CRD."""
    return {
        f"{kind.plural}.yaml": _HEADER + yaml.safe_dump(crd(kind), sort_keys=False, width=100)
        for kind in KINDS
    }


def write_all(directory: Path) -> list[Path]:
    """Write every CRD into ``directory``; the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render_all().items():
        path = directory / name
        path.write_text(text)
        written.append(path)
    return written


if __name__ == "__main__":  # make crds
    import sys

    for written in write_all(Path(sys.argv[1] if len(sys.argv) > 1 else "crds")):
        print(written)
