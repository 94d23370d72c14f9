"""The name servers' objects: exact names, ports, probes, config, selectors."""

from __future__ import annotations

import pytest
from rendering import cluster_of, find, render

from rocketkube.operator.specs import base, config

SPEC = {
    "image": "rocketkube/rocketkube:1.2.3",
    "nameServers": {
        "replicas": 3,
        "resources": {"requests": {"cpu": "100m"}, "limits": {"memory": "512Mi"}},
        "properties": {"orderMessageEnable": "true", "clusterTest": "false"},
    },
}
OBJECTS = render(SPEC)
SELECTOR = {"app.kubernetes.io/instance": "demo", "app.kubernetes.io/component": "namesrv"}
LABELS = {
    "app.kubernetes.io/name": "rocketkube",
    "app.kubernetes.io/managed-by": "rocketkube-operator",
    "rocketkube.io/cluster": "demo",
    **SELECTOR,
}


def probe(kind: str, path: str, failures: int, period: int) -> dict[str, object]:
    return {
        kind: {
            "httpGet": {"path": path, "port": "metrics"},
            "periodSeconds": period,
            "timeoutSeconds": 3,
            "failureThreshold": failures,
        }
    }


def test_the_config_file_holds_the_port_the_kv_path_then_the_users_properties() -> None:
    config_map = find(OBJECTS, "ConfigMap", "demo-namesrv")
    assert config_map["metadata"] == {"name": "demo-namesrv", "namespace": "prod", "labels": LABELS}
    assert config_map["data"] == {
        "namesrv.conf": "listenPort=9876\n"
        "kvConfigPath=/var/lib/rocketkube/namesrv/kvConfig.json\n"
        "clusterTest=false\n"
        "orderMessageEnable=true\n"
    }


def test_the_statefulset_runs_the_name_server_from_its_config() -> None:
    statefulset = find(OBJECTS, "StatefulSet", "demo-namesrv")
    assert statefulset["metadata"]["labels"] == LABELS
    spec = statefulset["spec"]
    assert {k: spec[k] for k in ("serviceName", "replicas", "podManagementPolicy")} == {
        "serviceName": "demo-namesrv",
        "replicas": 3,
        "podManagementPolicy": "Parallel",
    }
    assert spec["updateStrategy"] == {"type": "RollingUpdate"}
    assert spec["selector"] == {"matchLabels": SELECTOR}
    assert spec["template"]["metadata"]["labels"] == LABELS
    pod = spec["template"]["spec"]
    assert pod["volumes"] == [
        {"name": "config", "configMap": {"name": "demo-namesrv"}},
        {"name": "data", "emptyDir": {}},
    ]
    assert pod["containers"] == [
        {
            "name": "namesrv",
            "image": "rocketkube/rocketkube:1.2.3",
            "imagePullPolicy": "IfNotPresent",
            "command": ["rocketkube"],
            "args": ["namesrv", "-c", "/etc/rocketkube/namesrv.conf"],
            "ports": [
                {"name": "remoting", "containerPort": 9876, "protocol": "TCP"},
                {"name": "metrics", "containerPort": 9877, "protocol": "TCP"},
            ],
            "volumeMounts": [
                {"name": "config", "mountPath": "/etc/rocketkube", "readOnly": True},
                {"name": "data", "mountPath": "/var/lib/rocketkube"},
            ],
            **probe("startupProbe", "/healthz", 24, 5),
            **probe("livenessProbe", "/healthz", 3, 10),
            **probe("readinessProbe", "/readyz", 3, 5),
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"]},
            },
            "resources": {"limits": {"memory": "512Mi"}, "requests": {"cpu": "100m"}},
        }
    ]
    assert "terminationGracePeriodSeconds" not in pod


def test_the_headless_service_publishes_pods_before_they_are_ready() -> None:
    service = find(OBJECTS, "Service", "demo-namesrv")
    assert service["metadata"]["labels"] == LABELS
    assert service["spec"] == {
        "clusterIP": "None",
        "selector": SELECTOR,
        "ports": [
            {"name": "remoting", "port": 9876, "targetPort": "remoting", "protocol": "TCP"},
            {"name": "metrics", "port": 9877, "targetPort": "metrics", "protocol": "TCP"},
        ],
        "publishNotReadyAddresses": True,
    }


def test_the_budget_lets_one_name_server_go_at_a_time() -> None:
    budget = find(OBJECTS, "PodDisruptionBudget", "demo-namesrv")
    assert budget["apiVersion"] == "policy/v1"
    assert budget["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": SELECTOR}}


def test_the_operators_properties_win_over_the_users() -> None:
    cluster = cluster_of({"nameServers": {"properties": {"listenPort": "1", "kvConfigPath": "/x"}}})
    assert config.namesrv_properties(cluster) == {
        "listenPort": "9876",
        "kvConfigPath": "/var/lib/rocketkube/namesrv/kvConfig.json",
    }


@pytest.mark.parametrize(
    ("properties", "needle"),
    [
        ({"a": "1\nlistenPort=1"}, r"spec.nameServers.properties.a: a value cannot hold a line"),
        ({"a": "1\r"}, "a value cannot hold a line break"),
        ({"a": "C:\\"}, r"or end in '\\'"),
        ({"a=b": "1"}, "spec.nameServers.properties: 'a=b' is not a property name"),
        ({"": "1"}, "'' is not a property name"),
    ],
)
def test_a_property_that_would_break_the_file_is_refused(
    properties: dict[str, str], needle: str
) -> None:
    cluster = cluster_of({"nameServers": {"properties": properties}})
    with pytest.raises(base.InvalidSpec, match=needle):
        config.namesrv_config_map(cluster)
