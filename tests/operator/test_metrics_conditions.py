"""The operator's metrics: every kind's series exist at 0 before the first event, and each
watched object's conditions are a gauge that follows the object (changed, then gone)."""

from __future__ import annotations

from rocketkube.operator.metrics import Metrics, Result

BLOCKED = {"type": "ScaleDownBlocked", "status": "True", "reason": "ConsumerLag"}
READY = {"type": "Ready", "status": "False", "reason": "PodsNotReady"}


def condition(metrics: Metrics, type_: str, reason: str) -> float | None:
    labels = {"kind": "BrokerCluster", "resource_namespace": "shop", "resource_name": "demo",
              "type": type_, "reason": reason}  # fmt: skip
    return metrics.registry.get_sample_value("rocketkube_operator_condition", labels)


def test_series_exist_at_zero_before_anything_happens() -> None:
    metrics = Metrics()
    sample = metrics.registry.get_sample_value
    for kind in ("BrokerCluster", "Topic", "ConsumerGroup"):
        for result in Result:
            labels = {"kind": kind, "result": result.value}
            assert sample("rocketkube_operator_reconciles_total", labels) == 0
        assert sample("rocketkube_operator_reconcile_seconds_count", {"kind": kind}) == 0
        assert sample("rocketkube_operator_managed_objects", {"kind": kind}) == 0
    for kind in ("Topic", "ConsumerGroup"):
        assert sample("rocketkube_operator_drift_repairs_total", {"kind": kind}) == 0


def test_conditions_follow_the_watched_object() -> None:
    metrics = Metrics()
    metrics.track("BrokerCluster", "shop", "demo", True, [BLOCKED, READY])
    assert condition(metrics, "ScaleDownBlocked", "ConsumerLag") == 1
    assert condition(metrics, "Ready", "PodsNotReady") == 0

    unblocked = {**BLOCKED, "status": "False", "reason": "NotBlocked"}
    metrics.track("BrokerCluster", "shop", "demo", True, [unblocked])
    assert condition(metrics, "ScaleDownBlocked", "ConsumerLag") is None  # no stale series
    assert condition(metrics, "ScaleDownBlocked", "NotBlocked") == 0
    assert condition(metrics, "Ready", "PodsNotReady") is None

    metrics.track("BrokerCluster", "shop", "demo", False)
    assert condition(metrics, "ScaleDownBlocked", "NotBlocked") is None
