"""Each broker group's objects: exact names, ports, probes, env, config, storage."""

from __future__ import annotations

from typing import Any

import pytest
from rendering import cluster_of, find, render

from rocketkube.operator.specs import config

SPEC: dict[str, Any] = {
    "image": "rocketkube/rocketkube:1.2.3",
    "imagePullPolicy": "Always",
    "nameServers": {"replicas": 2},
    "brokers": {
        "groups": 2,
        "replicasPerGroup": 3,
        "replication": "SYNC",
        "flushDiskType": "SYNC_FLUSH",
        "storage": {"size": "20Gi", "storageClassName": "fast"},
        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
        "properties": {"fileReservedTime": "48", "autoCreateTopicEnable": "false"},
    },
}
OBJECTS = render(SPEC)


def selector(group: int) -> dict[str, str]:
    return {
        "app.kubernetes.io/instance": "demo",
        "app.kubernetes.io/component": "broker",
        "rocketkube.io/group": str(group),
    }


def labels(group: int) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "rocketkube",
        "app.kubernetes.io/managed-by": "rocketkube-operator",
        "rocketkube.io/cluster": "demo",
        **selector(group),
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


def test_a_cluster_is_its_name_servers_then_each_group_in_apply_order() -> None:
    assert [(o["kind"], o["metadata"]["name"]) for o in OBJECTS] == [
        ("ConfigMap", "demo-namesrv"),
        ("Service", "demo-namesrv"),
        ("StatefulSet", "demo-namesrv"),
        ("PodDisruptionBudget", "demo-namesrv"),
        ("ConfigMap", "demo-broker-0"),
        ("Service", "demo-broker-0"),
        ("StatefulSet", "demo-broker-0"),
        ("PodDisruptionBudget", "demo-broker-0"),
        ("ConfigMap", "demo-broker-1"),
        ("Service", "demo-broker-1"),
        ("StatefulSet", "demo-broker-1"),
        ("PodDisruptionBudget", "demo-broker-1"),
    ]
    assert {o["metadata"]["namespace"] for o in OBJECTS} == {"prod"}


def test_broker_conf_names_the_group_the_name_servers_and_the_master_role() -> None:
    config_map = find(OBJECTS, "ConfigMap", "demo-broker-1")
    assert config_map["metadata"]["labels"] == labels(1)
    assert config_map["data"] == {
        "broker.conf": "brokerClusterName=demo\n"
        "brokerName=demo-broker-1\n"
        "namesrvAddr=demo-namesrv-0.demo-namesrv.prod.svc:9876;"
        "demo-namesrv-1.demo-namesrv.prod.svc:9876\n"
        "listenPort=10911\n"
        "storePathRootDir=/var/lib/rocketkube/store\n"
        "flushDiskType=SYNC_FLUSH\n"
        "brokerRole=SYNC_MASTER\n"
        "autoCreateTopicEnable=false\n"
        "fileReservedTime=48\n"
    }


def test_async_replication_makes_an_async_master() -> None:
    cluster = cluster_of({"brokers": {"replication": "ASYNC"}})
    properties = config.broker_properties(cluster, 0)
    assert (properties["brokerRole"], properties["flushDiskType"]) == (
        "ASYNC_MASTER",
        "ASYNC_FLUSH",
    )


def test_derived_properties_win_over_the_users() -> None:
    """The CRD refuses these; a resource built past it still cannot rename a broker."""
    cluster = cluster_of({"brokers": {"properties": {"brokerName": "x", "listenPort": "1"}}})
    properties = config.broker_properties(cluster, 0)
    assert (properties["brokerName"], properties["listenPort"]) == ("demo-broker-0", "10911")


def test_the_group_statefulset_is_rolled_by_the_operator_only() -> None:
    statefulset = find(OBJECTS, "StatefulSet", "demo-broker-1")
    assert statefulset["metadata"] == {
        "name": "demo-broker-1",
        "namespace": "prod",
        "labels": labels(1),
    }
    spec = statefulset["spec"]
    assert {k: v for k, v in spec.items() if k not in ("template", "volumeClaimTemplates")} == {
        "serviceName": "demo-broker-1",
        "replicas": 3,
        "podManagementPolicy": "Parallel",
        "updateStrategy": {"type": "OnDelete"},
        "selector": {"matchLabels": selector(1)},
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
    }
    assert spec["template"]["metadata"]["labels"] == labels(1)


def test_each_pod_claims_its_store_from_the_storage_spec() -> None:
    spec = find(OBJECTS, "StatefulSet", "demo-broker-0")["spec"]
    assert spec["volumeClaimTemplates"] == [
        {
            "metadata": {"name": "store", "labels": labels(0)},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "20Gi"}},
                "storageClassName": "fast",
            },
        }
    ]
    default = find(render({}), "StatefulSet", "demo-broker-0")["spec"]["volumeClaimTemplates"]
    assert default[0]["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "10Gi"}},
    }


@pytest.mark.parametrize(("delete_claim", "when_deleted"), [(False, "Retain"), (True, "Delete")])
def test_delete_claim_is_the_claims_retention_when_the_set_is_deleted(
    delete_claim: bool, when_deleted: str
) -> None:
    """The StatefulSet controller removes the claims with their set (scale-in or the
    cluster deleted) only with ``deleteClaim``; fewer replicas never remove a claim."""
    storage = {"storage": {"deleteClaim": delete_claim}}
    for statefulset in render({"brokers": {"groups": 2, **storage}}):
        if statefulset["kind"] != "StatefulSet":
            continue
        policy = statefulset["spec"].get("persistentVolumeClaimRetentionPolicy")
        if statefulset["metadata"]["name"] == "demo-namesrv":  # no claims
            assert policy is None
        else:
            assert policy == {"whenDeleted": when_deleted, "whenScaled": "Retain"}


def test_the_broker_container_takes_its_identity_from_the_pod() -> None:
    pod = find(OBJECTS, "StatefulSet", "demo-broker-0")["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 60
    assert pod["volumes"] == [{"name": "config", "configMap": {"name": "demo-broker-0"}}]
    assert pod["containers"] == [
        {
            "name": "broker",
            "image": "rocketkube/rocketkube:1.2.3",
            "imagePullPolicy": "Always",
            "command": ["rocketkube"],
            "args": ["broker", "-c", "/etc/rocketkube/broker.conf", "--identity-from-pod"],
            "ports": [
                {"name": "remoting", "containerPort": 10911, "protocol": "TCP"},
                {"name": "ha", "containerPort": 10912, "protocol": "TCP"},
                {"name": "metrics", "containerPort": 10914, "protocol": "TCP"},
            ],
            "env": [
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {
                    "name": "POD_NAMESPACE",
                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
                },
                {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            ],
            "volumeMounts": [
                {"name": "config", "mountPath": "/etc/rocketkube", "readOnly": True},
                {"name": "store", "mountPath": "/var/lib/rocketkube"},
            ],
            **probe("startupProbe", "/healthz", 120, 5),
            **probe("livenessProbe", "/healthz", 3, 10),
            **probe("readinessProbe", "/readyz", 3, 5),
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"]},
            },
            "resources": {
                "limits": {"memory": "2Gi"},
                "requests": {"cpu": "500m", "memory": "1Gi"},
            },
        }
    ]


def test_no_resources_render_no_resources_field() -> None:
    pod = find(render({}), "StatefulSet", "demo-broker-0")["spec"]["template"]["spec"]
    assert "resources" not in pod["containers"][0]


def test_the_group_service_and_budget_select_the_groups_pods() -> None:
    service = find(OBJECTS, "Service", "demo-broker-0")
    assert service["metadata"]["labels"] == labels(0)
    assert service["spec"] == {
        "clusterIP": "None",
        "selector": selector(0),
        "ports": [
            {"name": "remoting", "port": 10911, "targetPort": "remoting", "protocol": "TCP"},
            {"name": "ha", "port": 10912, "targetPort": "ha", "protocol": "TCP"},
            {"name": "metrics", "port": 10914, "targetPort": "metrics", "protocol": "TCP"},
        ],
    }
    budget = find(OBJECTS, "PodDisruptionBudget", "demo-broker-0")
    assert budget["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": selector(0)}}


def pod_labels(name: str) -> dict[str, str]:
    labels: dict[str, str] = find(OBJECTS, "StatefulSet", name)["spec"]["template"]["metadata"][
        "labels"
    ]
    return labels


@pytest.mark.parametrize("name", ["demo-namesrv", "demo-broker-0", "demo-broker-1"])
def test_every_selector_picks_its_own_pods_and_no_others(name: str) -> None:
    sets = ["demo-namesrv", "demo-broker-0", "demo-broker-1"]
    selectors = [
        find(OBJECTS, "StatefulSet", name)["spec"]["selector"]["matchLabels"],
        find(OBJECTS, "Service", name)["spec"]["selector"],
        find(OBJECTS, "PodDisruptionBudget", name)["spec"]["selector"]["matchLabels"],
    ]
    for chosen in selectors:
        picked = [s for s in sets if chosen.items() <= pod_labels(s).items()]
        assert picked == [name]
