"""How Prometheus finds a cluster's pods: a PodMonitor when the API server serves
PodMonitors, else ``prometheus.io/*`` annotations on the pod templates; nothing with
metrics off."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from rendering import cluster_of, find

from rocketkube.operator.specs import base, cluster

SCRAPE = ("prometheus.io/scrape", "prometheus.io/port", "prometheus.io/path")


def objects(metrics: bool, pod_monitors: bool) -> list[base.Manifest]:
    spec = {"metrics": {"enabled": metrics}, "brokers": {"groups": 2}}
    served = dataclasses.replace(cluster_of(spec), pod_monitors=pod_monitors)
    return cluster.objects(served)


def scrape_annotations(rendered: list[base.Manifest]) -> dict[str, list[str]]:
    return {
        obj["metadata"]["name"]: sorted(
            key for key in obj["spec"]["template"]["metadata"]["annotations"] if key in SCRAPE
        )
        for obj in rendered
        if obj["kind"] == "StatefulSet"
    }


def pod_monitors(rendered: list[base.Manifest]) -> list[base.Manifest]:
    return [obj for obj in rendered if obj["kind"] == "PodMonitor"]


def test_a_pod_monitor_scrapes_every_pod_of_the_cluster_when_served() -> None:
    rendered = objects(metrics=True, pod_monitors=True)
    assert pod_monitors(rendered) == [
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PodMonitor",
            "metadata": {
                "name": "demo-metrics",
                "namespace": "prod",
                "labels": {
                    "app.kubernetes.io/name": "rocketkube",
                    "app.kubernetes.io/managed-by": "rocketkube-operator",
                    "rocketkube.io/cluster": "demo",
                    "app.kubernetes.io/instance": "demo",
                    "app.kubernetes.io/component": "metrics",
                },
            },
            "spec": {
                "selector": {
                    "matchLabels": {"app.kubernetes.io/instance": "demo"},
                    "matchExpressions": [
                        {
                            "key": "app.kubernetes.io/component",
                            "operator": "In",
                            "values": ["namesrv", "broker"],
                        }
                    ],
                },
                "podTargetLabels": ["app.kubernetes.io/component", "rocketkube.io/group"],
                "podMetricsEndpoints": [{"port": "metrics", "path": "/metrics"}],
            },
        }
    ]
    assert rendered[-1]["kind"] == "PodMonitor"  # applied last
    assert all(found == [] for found in scrape_annotations(rendered).values())


def test_without_pod_monitors_the_templates_ask_to_be_scraped() -> None:
    rendered = objects(metrics=True, pod_monitors=False)
    assert pod_monitors(rendered) == []
    assert scrape_annotations(rendered) == dict.fromkeys(
        ["demo-namesrv", "demo-broker-0", "demo-broker-1"], sorted(SCRAPE)
    )


@pytest.mark.parametrize("served", [True, False])
def test_metrics_off_asks_for_no_scraping_at_all(served: bool) -> None:
    rendered = objects(metrics=False, pod_monitors=served)
    assert pod_monitors(rendered) == []
    assert all(found == [] for found in scrape_annotations(rendered).values())


def test_the_selected_labels_and_port_are_what_the_pods_carry() -> None:
    rendered = objects(metrics=True, pod_monitors=True)
    (monitor,) = pod_monitors(rendered)
    selector: dict[str, Any] = monitor["spec"]["selector"]
    (expression,) = selector["matchExpressions"]
    for name in ("demo-namesrv", "demo-broker-0", "demo-broker-1"):
        template = find(rendered, "StatefulSet", name)["spec"]["template"]
        labels = template["metadata"]["labels"]
        assert selector["matchLabels"].items() <= labels.items()
        assert labels[expression["key"]] in expression["values"]
        ports = {p["name"]: p["containerPort"] for p in template["spec"]["containers"][0]["ports"]}
        assert "metrics" in ports


def test_switching_to_a_pod_monitor_changes_the_template_hash() -> None:
    """The pods roll once to lose the annotations they no longer need."""

    def hashes(served: bool) -> dict[str, str]:
        return {
            obj["metadata"]["name"]: obj["spec"]["template"]["metadata"]["annotations"][
                "rocketkube.io/template-hash"
            ]
            for obj in objects(metrics=True, pod_monitors=served)
            if obj["kind"] == "StatefulSet"
        }

    before, after = hashes(False), hashes(True)
    assert all(before[name] != after[name] for name in before)
