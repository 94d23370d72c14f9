"""The user's pod template overrides, merged in; metrics annotations on and off."""

from __future__ import annotations

from typing import Any

import pytest
from rendering import find, render

AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
            ]
        }
    }
}
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "mq", "effect": "NoSchedule"}
SPREAD = {
    "maxSkew": 1,
    "topologyKey": "topology.kubernetes.io/zone",
    "whenUnsatisfiable": "ScheduleAnyway",
    "labelSelector": {"matchLabels": {"rocketkube.io/cluster": "demo"}},
}
TEMPLATE = {
    "labels": {
        "team": "payments",
        "app.kubernetes.io/component": "mine",  # a selector key: the operator's wins
        "rocketkube.io/group": "9",
        "app.kubernetes.io/managed-by": "me",
    },
    "annotations": {"owner": "ops", "rocketkube.io/template-hash": "forged"},
    "affinity": AFFINITY,
    "tolerations": [TOLERATION],
    "nodeSelector": {"disk": "ssd"},
    "priorityClassName": "messaging",
    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "fsGroup": 1000},
    "topologySpreadConstraints": [SPREAD],
}


def template(spec: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = find(render(spec), "StatefulSet", name)["spec"]["template"]
    return found


@pytest.mark.parametrize(
    ("section", "name", "component", "group"),
    [
        ("brokers", "demo-broker-0", "broker", {"rocketkube.io/group": "0"}),
        # not a key of the name servers' selector: the user's label stays
        ("nameServers", "demo-namesrv", "namesrv", {"rocketkube.io/group": "9"}),
    ],
)
def test_overrides_are_merged_and_the_operators_labels_win(
    section: str, name: str, component: str, group: dict[str, str]
) -> None:
    rendered = template({section: {"template": TEMPLATE}}, name)
    assert rendered["metadata"]["labels"] == {
        "team": "payments",
        "app.kubernetes.io/name": "rocketkube",
        "app.kubernetes.io/managed-by": "rocketkube-operator",
        "rocketkube.io/cluster": "demo",
        "app.kubernetes.io/instance": "demo",
        "app.kubernetes.io/component": component,
        **group,
    }
    annotations = rendered["metadata"]["annotations"]
    assert annotations["owner"] == "ops"
    assert annotations["rocketkube.io/template-hash"] != "forged"
    pod = rendered["spec"]
    assert pod["affinity"] == AFFINITY
    assert pod["tolerations"] == [TOLERATION]
    assert pod["nodeSelector"] == {"disk": "ssd"}
    assert pod["priorityClassName"] == "messaging"
    assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 1000, "fsGroup": 1000}
    assert pod["topologySpreadConstraints"] == [SPREAD]


def test_overrides_of_one_section_leave_the_other_alone() -> None:
    pod = template({"brokers": {"template": TEMPLATE}}, "demo-namesrv")["spec"]
    assert not {"tolerations", "nodeSelector", "priorityClassName"} & set(pod)
    assert pod["securityContext"]["runAsUser"] == 10001
    assert (
        "team"
        not in template({"brokers": {"template": TEMPLATE}}, "demo-namesrv")["metadata"]["labels"]
    )


def test_without_affinity_a_groups_pods_prefer_different_nodes() -> None:
    pod = template({"brokers": {"groups": 2}}, "demo-broker-1")["spec"]
    assert pod["affinity"] == {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {
                            "matchLabels": {
                                "app.kubernetes.io/instance": "demo",
                                "app.kubernetes.io/component": "broker",
                                "rocketkube.io/group": "1",
                            }
                        },
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    }


@pytest.mark.parametrize("name", ["demo-namesrv", "demo-broker-0"])
def test_without_a_security_context_pods_run_as_the_images_user(name: str) -> None:
    """The image's user 10001 (Dockerfile), never root; fsGroup makes a fresh claim its own;
    the root filesystem read-only: what Pod Security's ``restricted`` level asks."""
    pod = template({}, name)["spec"]
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 10001,
        "runAsGroup": 10001,
        "fsGroup": 10001,
        "fsGroupChangePolicy": "OnRootMismatch",
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    (container,) = pod["containers"]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def test_rendered_overrides_are_copies() -> None:
    """A caller that edits a rendered object (kopf.adopt does) edits no spec."""
    spec = {"brokers": {"template": TEMPLATE}}
    objects = render(spec)
    find(objects, "StatefulSet", "demo-broker-0")["spec"]["template"]["spec"]["affinity"][
        "nodeAffinity"
    ] = {}
    again = template(spec, "demo-broker-0")["spec"]["affinity"]
    assert again == AFFINITY


@pytest.mark.parametrize(("name", "port"), [("demo-namesrv", "9877"), ("demo-broker-0", "10914")])
def test_metrics_on_names_the_port_and_asks_prometheus_to_scrape(name: str, port: str) -> None:
    rendered = template({"metrics": {"enabled": True}}, name)
    annotations = rendered["metadata"]["annotations"]
    assert {k: v for k, v in annotations.items() if k.startswith("prometheus.io/")} == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": port,
        "prometheus.io/path": "/metrics",
    }
    (container,) = rendered["spec"]["containers"]
    assert [p["name"] for p in container["ports"]][-1] == "metrics"


@pytest.mark.parametrize("name", ["demo-namesrv", "demo-broker-0"])
def test_metrics_off_renders_no_scrape_annotations(name: str) -> None:
    objects = render({"metrics": {"enabled": False}})
    rendered = find(objects, "StatefulSet", name)["spec"]["template"]
    assert list(rendered["metadata"]["annotations"]) == ["rocketkube.io/template-hash"]
    (container,) = rendered["spec"]["containers"]
    assert container["ports"][-1]["name"] == "http"
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert find(objects, "Service", name)["spec"]["ports"][-1]["name"] == "http"
