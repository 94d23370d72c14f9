"""Every object the builders render is one the API server takes: Kubernetes 1.29's
schemas, strict (an unknown field anywhere is refused)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from rendering import find, render, validate

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = yaml.safe_load((ROOT / "examples" / "kubernetes" / "cluster.yaml").read_text())
EVERYTHING = {
    "labels": {"team": "payments"},
    "annotations": {"owner": "ops"},
    "affinity": {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"rocketkube.io/cluster": "demo"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    },
    "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
    "nodeSelector": {"disk": "ssd"},
    "priorityClassName": "messaging",
    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "fsGroup": 1000},
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"rocketkube.io/cluster": "demo"}},
        }
    ],
}
SPECS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "example": EXAMPLE["spec"],
    "everything": {
        "image": "registry.example/rocketkube:2",
        "imagePullPolicy": "Never",
        "nameServers": {
            "replicas": 3,
            "resources": {"requests": {"cpu": 1, "memory": "256Mi"}},
            "properties": {"orderMessageEnable": "true"},
            "template": EVERYTHING,
        },
        "brokers": {
            "groups": 3,
            "replicasPerGroup": 4,
            "replication": "SYNC",
            "flushDiskType": "SYNC_FLUSH",
            "storage": {"size": 21474836480, "storageClassName": "fast", "deleteClaim": True},
            "resources": {"limits": {"cpu": "2", "memory": "4Gi"}},
            "properties": {"slaveReadEnable": "true"},
            "template": EVERYTHING,
        },
        "metrics": {"enabled": True},
        "paused": True,
    },
    "metrics off, one pod a group": {
        "metrics": {"enabled": False},
        "brokers": {"replicasPerGroup": 1},
        "nameServers": {"replicas": 1},
    },
}


@pytest.mark.parametrize("spec", SPECS.values(), ids=list(SPECS))
def test_every_rendered_object_passes_the_api_servers_schema(spec: dict[str, Any]) -> None:
    objects = render(spec)
    assert len(objects) == 4 + 4 * spec.get("brokers", {}).get("groups", 1)
    for obj in objects:
        validate(obj)


def test_the_check_refuses_what_the_api_server_refuses() -> None:
    """The strict schemas bite: an unknown field, or a wrong type, is refused."""
    statefulset = find(render({}), "StatefulSet", "demo-broker-0")
    unknown = copy.deepcopy(statefulset)
    unknown["spec"]["template"]["spec"]["containers"][0]["probe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(unknown)
    mistyped = copy.deepcopy(statefulset)
    mistyped["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(mistyped)
