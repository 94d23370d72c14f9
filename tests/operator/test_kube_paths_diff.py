"""REST paths of the operator's kinds and the 'live object holds the desired one' test."""

from __future__ import annotations

import pytest

from rocketkube.operator.kube import diff, paths


def test_paths_of_core_group_and_custom_kinds() -> None:
    assert paths.collection("v1", "Pod", "ns") == "/api/v1/namespaces/ns/pods"
    assert paths.collection("v1", "Pod", None) == "/api/v1/pods"
    assert paths.item("apps/v1", "StatefulSet", "ns", "demo-broker-0") == (
        "/apis/apps/v1/namespaces/ns/statefulsets/demo-broker-0"
    )
    assert paths.item("rocketkube.io/v1alpha1", "Topic", "ns", "orders", "status") == (
        "/apis/rocketkube.io/v1alpha1/namespaces/ns/topics/orders/status"
    )
    assert paths.item("v1", "Namespace", "ignored", "prod") == "/api/v1/namespaces/prod"
    with pytest.raises(ValueError, match="unknown kind"):
        paths.collection("v1", "Secret", "ns")


def test_a_live_object_holds_what_is_desired_whatever_the_server_added() -> None:
    desired = {"spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "b"}]}}}}
    live = {
        "status": {"readyReplicas": 1},
        "spec": {
            "replicas": 2,
            "revisionHistoryLimit": 10,
            "template": {"spec": {"containers": [{"name": "b", "imagePullPolicy": "Always"}]}},
        },
    }
    assert diff.holds(live, desired)


@pytest.mark.parametrize(
    "live",
    [
        {"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "b"}]}}}},
        {"spec": {"replicas": 2, "template": {"spec": {"containers": []}}}},
        {"spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "b"}] * 2}}}},
        {"spec": {"replicas": "2", "template": {"spec": {"containers": [{"name": "b"}]}}}},
        {"spec": {"template": {"spec": {"containers": [{"name": "b"}]}}}},
    ],
)
def test_any_stated_value_missing_or_different_is_a_difference(live: object) -> None:
    desired = {"spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "b"}]}}}}
    assert not diff.holds(live, desired)
