"""Derived names and condition bookkeeping: pure functions, exact values."""

from __future__ import annotations

from rocketkube.operator.api import conditions, names
from rocketkube.operator.api.conditions import ConditionType, Reason


def test_the_name_server_address_is_stable_dns_names() -> None:
    assert names.namesrv_address("demo", "prod", 2) == (
        "demo-namesrv-0.demo-namesrv.prod.svc:9876;demo-namesrv-1.demo-namesrv.prod.svc:9876"
    )


def test_group_objects_broker_names_and_pods() -> None:
    assert names.broker_group("demo", 1) == "demo-broker-1"
    assert names.broker_name("demo", 1) == "demo-broker-1"
    assert names.broker_pod("demo", 1, 0) == "demo-broker-1-0"
    assert names.namesrv_pod("demo", 2) == "demo-namesrv-2"


def test_labels_hold_the_selector() -> None:
    selector = names.selector("demo", "broker", 3)
    labels = names.labels("demo", "broker", 3)
    assert selector.items() <= labels.items()
    assert labels["rocketkube.io/group"] == "3"
    assert labels["app.kubernetes.io/managed-by"] == "rocketkube-operator"
    assert "rocketkube.io/group" not in names.selector("demo", "namesrv")


def test_a_condition_moves_its_transition_time_only_when_its_status_changes() -> None:
    first = conditions.set_condition(
        [], ConditionType.READY, False, Reason.PODS_NOT_READY, "0/2 groups", now="t1",
        generation=1,
    )  # fmt: skip
    assert [(c.type, c.status, c.last_transition_time) for c in first] == [("Ready", "False", "t1")]
    same = conditions.set_condition(
        first, ConditionType.READY, False, Reason.PODS_NOT_READY, "1/2 groups", now="t2",
        generation=2,
    )  # fmt: skip
    assert (same[0].message, same[0].last_transition_time, same[0].observed_generation) == (
        "1/2 groups",
        "t1",
        2,
    )
    ready = conditions.set_condition(
        same, ConditionType.READY, True, Reason.RECONCILED, "", now="t3", generation=2
    )
    assert (ready[0].status, ready[0].reason, ready[0].last_transition_time) == (
        "True",
        "Reconciled",
        "t3",
    )
    both = conditions.set_condition(
        ready, ConditionType.DEGRADED, None, Reason.ADMIN_UNREACHABLE, "", now="t4",
        generation=2,
    )  # fmt: skip
    assert [(c.type, c.status) for c in both] == [("Ready", "True"), ("Degraded", "Unknown")]


def test_the_cluster_name_and_a_pods_store_claim() -> None:
    assert names.broker_cluster_name("demo") == "demo"
    assert names.broker_claim("demo", 1, 0) == "store-demo-broker-1-0"
