"""The Helm chart rendered by Helm's own engine: what it installs, for default and other
values; every built-in object valid for the oldest supported Kubernetes, the monitoring
objects for prometheus-operator's CRDs; the chart's metadata and CRDs in step with the
package."""

from __future__ import annotations

import importlib.metadata
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml
from helm_chart import (
    CHART,
    ROOT,
    chart_copy,
    find,
    notes,
    render,
    validate_builtin,
    validate_monitoring,
)

MONITORING = ("ServiceMonitor", "PodMonitor", "PrometheusRule")
CUSTOM = ("KopfPeering", "ClusterKopfPeering", *MONITORING)
EVERYTHING_ON: dict[str, Any] = {
    "metrics": {
        "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
        "podMonitor": {"enabled": True, "interval": "1m", "scrapeTimeout": "20s"},
        "prometheusRule": {"enabled": True, "labels": {"release": "prom"}},
    }
}
VALUES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "namespaced standbys": {
        "replicas": 3,
        "watchNamespaces": ["team-a", "team-b"],
        "logLevel": "DEBUG",
        "timerInterval": 2.5,
        "image": {"repository": "registry.example/rocketkube", "tag": "9.9.9"},
        "imagePullSecrets": [{"name": "registry"}],
        "extraArgs": ["--namesrv-override", "demo=10.0.0.1:9876"],
        "serviceAccount": {"name": "rk-operator", "annotations": {"iam": "role"}},
        "podLabels": {"team": "messaging"},
        "podAnnotations": {"owner": "ops"},
        "priorityClassName": "system-cluster-critical",
        "nodeSelector": {"disk": "ssd"},
        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "x"}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            }
        },
        "metrics": {"service": {"type": "NodePort", "port": 9100}},
        **EVERYTHING_ON,
        "dashboards": {"label": "dashboards", "labelValue": "rocketmq", "namespace": "grafana"},
    },
    "cluster-wide standbys": {"replicas": 2, **EVERYTHING_ON},
    "no rbac, existing account": {
        "rbac": {"create": False},
        "serviceAccount": {"create": False, "name": "existing"},
        "dashboards": {"enabled": False},
    },
}
DASHBOARD = json.dumps({"title": "Cluster overview", "panels": [], "schemaVersion": 39})
RULES = """\
groups:
  - name: rocketkube.brokers
    rules:
      - alert: RocketkubeBrokerDown
        expr: up{job="rocketkube-broker"} == 0
        for: 5m
        labels: {severity: critical}
        annotations: {summary: "A broker is down"}
  - name: rocketkube.operator
    interval: 1m
    rules:
      - record: rocketkube:reconcile_errors:rate5m
        expr: sum(rate(rocketkube_operator_reconcile_errors_total[5m]))
"""


def operator_args(objects: list[dict[str, Any]]) -> list[str]:
    (deployment,) = find(objects, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args: list[str] = container["args"]
    return args


def rules_of(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [rule for role in find(objects, kind) for rule in role["rules"]]


def test_version_and_app_version_are_the_packages() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert chart["version"] == chart["appVersion"] == project["version"]
    assert chart["appVersion"] == importlib.metadata.version("rocketkube")


def test_the_charts_crds_are_the_repositorys() -> None:
    for crd in sorted((ROOT / "crds").glob("*.yaml")):
        assert (CHART / "crds" / crd.name).read_bytes() == crd.read_bytes(), crd.name
    shipped = {p.name for p in (CHART / "crds").glob("*.yaml")}
    assert shipped == {p.name for p in (ROOT / "crds").glob("*.yaml")} | {"kopf-peerings.yaml"}


@pytest.mark.parametrize("values", VALUES.values(), ids=list(VALUES))
def test_lint_finds_nothing_to_warn_about(values: dict[str, Any]) -> None:
    report = helm.lint(CHART, values, strict=True, namespace="ops", kube_version="1.29.0")
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] > 1] == []


@pytest.mark.parametrize("values", VALUES.values(), ids=list(VALUES))
def test_every_object_is_valid_for_the_oldest_kubernetes(values: dict[str, Any]) -> None:
    objects = render(values)
    kinds = {o["kind"] for o in objects}
    assert {"Deployment", "Service"} <= kinds
    for obj in objects:
        if obj["kind"] in MONITORING:
            validate_monitoring(obj)
        elif obj["kind"] not in CUSTOM:
            validate_builtin(obj)


def test_the_default_operator_watches_every_namespace_with_a_cluster_role() -> None:
    objects = render()
    assert operator_args(objects) == [
        "operator",
        "--all-namespaces",
        "--liveness-port=8080",
        "--metrics-port=9090",
        "--log-level=INFO",
        "--timer-interval=10",
    ]
    assert {o["kind"] for o in objects} == {
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Service", "Deployment",
        "ConfigMap",  # the shipped dashboards
    }  # fmt: skip
    resources = {r for rule in rules_of(objects, "ClusterRole") for r in rule["resources"]}
    assert {"brokerclusters", "statefulsets", "podmonitors", "namespaces"} <= resources
    assert "clusterkopfpeerings" not in resources
    (binding,) = find(objects, "ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "rk-rocketkube", "namespace": "ops"}
    ]


def test_the_pod_runs_restricted_as_uid_10001_with_probes_on_healthz() -> None:
    (deployment,) = find(render(), "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    assert container["image"] == "rocketkube/rocketkube:0.1.0"
    assert container["command"] == ["rocketkube"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert {"name": "health", "containerPort": 8080, "protocol": "TCP"} in container["ports"]
    assert container["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]
    assert pod["volumes"][0]["emptyDir"] == {"sizeLimit": "64Mi"}


def test_watched_namespaces_get_roles_and_standbys_a_peering_each() -> None:
    objects = render(VALUES["namespaced standbys"])
    args = operator_args(objects)
    assert args[1:3] == ["--namespace=team-a", "--namespace=team-b"]
    assert "--all-namespaces" not in args
    assert {"--peering=rocketkube", "--priority=random", "--log-level=DEBUG"} <= set(args)
    assert args[-2:] == ["--namesrv-override", "demo=10.0.0.1:9876"]
    roles = find(objects, "Role")
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["team-a", "team-b"]
    assert sorted(b["metadata"]["namespace"] for b in find(objects, "RoleBinding")) == [
        "team-a",
        "team-b",
    ]
    in_roles = {r for rule in roles[0]["rules"] for r in rule["resources"]}
    assert {"brokerclusters", "pods", "events", "kopfpeerings"} <= in_roles
    cluster_wide = {r for rule in rules_of(objects, "ClusterRole") for r in rule["resources"]}
    assert cluster_wide == {"customresourcedefinitions", "namespaces"}
    peerings = find(objects, "KopfPeering", "rocketkube")
    assert sorted(p["metadata"]["namespace"] for p in peerings) == ["team-a", "team-b"]
    assert find(objects, "ClusterKopfPeering") == []
    (deployment,) = find(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "rk-operator"


def test_cluster_wide_standbys_share_a_cluster_peering() -> None:
    objects = render(VALUES["cluster-wide standbys"])
    assert [p["metadata"]["name"] for p in find(objects, "ClusterKopfPeering")] == ["rocketkube"]
    resources = {r for rule in rules_of(objects, "ClusterRole") for r in rule["resources"]}
    assert "clusterkopfpeerings" in resources
    assert "--priority=random" in operator_args(objects)


def test_without_rbac_the_existing_account_is_used() -> None:
    objects = render(VALUES["no rbac, existing account"])
    assert {o["kind"] for o in objects} == {"Service", "Deployment"}
    (deployment,) = find(objects, "Deployment")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "existing"


def test_monitors_select_the_operators_pods_on_its_metrics_port() -> None:
    objects = render(VALUES["cluster-wide standbys"])
    (deployment,) = find(objects, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    (service,) = find(objects, "Service")
    assert service["spec"]["selector"].items() <= pod_labels.items()
    for kind in ("ServiceMonitor", "PodMonitor"):
        (monitor,) = find(objects, kind)
        assert monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    (service_monitor,) = find(objects, "ServiceMonitor")
    assert service_monitor["metadata"]["labels"]["release"] == "prom"
    assert service_monitor["spec"]["endpoints"][0]["port"] == "metrics"
    assert (
        service["spec"]["selector"].items()
        <= service_monitor["spec"]["selector"]["matchLabels"].items() | pod_labels.items()
    )


def test_without_dashboards_or_rules_files_nothing_of_them_is_rendered(tmp_path: Path) -> None:
    copied = chart_copy(tmp_path)
    objects = render(EVERYTHING_ON, chart=copied)
    assert find(objects, "PrometheusRule") == []
    assert find(objects, "ConfigMap") == []


def test_every_dashboard_file_becomes_a_configmap_for_grafanas_sidecar(tmp_path: Path) -> None:
    boards = {"cluster-overview.json": DASHBOARD, "Consumer_Groups.json": '{"title": "CG"}'}
    copied = chart_copy(tmp_path, dashboards=boards)
    for values, label, value, namespace in [
        ({}, "grafana_dashboard", "1", "ops"),
        (VALUES["namespaced standbys"], "dashboards", "rocketmq", "grafana"),
    ]:
        maps = find(render(values, chart=copied), "ConfigMap")
        assert {m["metadata"]["name"] for m in maps} == {
            "rk-rocketkube-dashboard-cluster-overview",
            "rk-rocketkube-dashboard-consumer-groups",
        }
        data = {key: text for m in maps for key, text in m["data"].items()}
        assert data == boards
        for configmap in maps:
            assert configmap["metadata"]["labels"][label] == value
            assert configmap["metadata"]["namespace"] == namespace
            validate_builtin(configmap)
    assert find(render({"dashboards": {"enabled": False}}, chart=copied), "ConfigMap") == []


def test_the_prometheus_rule_carries_the_rules_files_groups(tmp_path: Path) -> None:
    copied = chart_copy(tmp_path, rules=RULES)
    (rule,) = find(render(EVERYTHING_ON, chart=copied), "PrometheusRule")
    assert rule["spec"]["groups"] == yaml.safe_load(RULES)["groups"]
    assert rule["metadata"]["labels"]["release"] == "prom"
    validate_monitoring(rule)
    assert find(render({}, chart=copied), "PrometheusRule") == []


def test_the_chart_ships_the_repositorys_dashboards_and_alert_rules() -> None:
    objects = render(EVERYTHING_ON)
    shipped = {p.name: json.loads(p.read_text()) for p in (CHART / "dashboards").glob("*.json")}
    assert len(shipped) == 5
    maps = find(objects, "ConfigMap")
    assert {key: json.loads(text) for m in maps for key, text in m["data"].items()} == shipped
    (rule,) = find(objects, "PrometheusRule")
    rules_file = (CHART / "alerts" / "rocketkube.rules.yaml").read_text(encoding="utf-8")
    assert rule["spec"]["groups"] == yaml.safe_load(rules_file)["groups"]
    validate_monitoring(rule)


def test_runbook_links_take_the_base_url_given() -> None:
    base = "https://git.example.com/rocketkube/blob/v0.1.0/"
    values = {"metrics": {"prometheusRule": {"enabled": True, "runbookBaseUrl": base}}}
    (rule,) = find(render(values), "PrometheusRule")
    urls = [r["annotations"]["runbook_url"] for g in rule["spec"]["groups"] for r in g["rules"]]
    assert len(urls) == 8
    assert all(url.startswith(base + "docs/runbooks.md#") for url in urls)
    (plain,) = find(render(EVERYTHING_ON), "PrometheusRule")
    assert all(
        r["annotations"]["runbook_url"].startswith("docs/runbooks.md#")
        for g in plain["spec"]["groups"]
        for r in g["rules"]
    )


def test_a_broken_rules_file_fails_the_render(tmp_path: Path) -> None:
    copied = chart_copy(tmp_path, rules="groups: [unclosed\n")
    with pytest.raises(helm.HelmError, match=re.escape("alerts/rocketkube.rules.yaml")):
        render(EVERYTHING_ON, chart=copied)


def test_notes_say_what_to_apply_next() -> None:
    text = notes({"watchNamespaces": ["team-a"], "replicas": 2})
    assert "kubectl -n team-a apply -f examples/kubernetes/" in text
    assert "rollout status deployment/rk-rocketkube" in text
    assert "2 replicas" in text


BAD_VALUES: dict[str, tuple[dict[str, Any], str]] = {
    "unknown key": ({"replica": 2}, "additional properties 'replica'"),
    "negative replicas": ({"replicas": -1}, "/replicas"),
    "replicas as text": ({"replicas": "two"}, "/replicas"),
    "log level": ({"logLevel": "LOUD"}, "/logLevel"),
    "pull policy": ({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
    "empty repository": ({"image": {"repository": ""}}, "/image/repository"),
    "namespace name": ({"watchNamespaces": ["Team_A"]}, "/watchNamespaces/0"),
    "repeated namespace": ({"watchNamespaces": ["a", "a"]}, "/watchNamespaces"),
    "port": ({"ports": {"metrics": 70000}}, "/ports/metrics"),
    "timer": ({"timerInterval": 0}, "/timerInterval"),
    "interval": (
        {"metrics": {"serviceMonitor": {"interval": "30 seconds"}}},
        "/metrics/serviceMonitor/interval",
    ),
    "service type": ({"metrics": {"service": {"type": "ExternalName"}}}, "/metrics/service/type"),
    "label value": ({"podLabels": {"team": 7}}, "/podLabels/team"),
    "pull secret": ({"imagePullSecrets": ["registry"]}, "/imagePullSecrets/0"),
}


@pytest.mark.parametrize(("values", "where"), BAD_VALUES.values(), ids=list(BAD_VALUES))
def test_bad_values_are_refused_by_the_schema(values: dict[str, Any], where: str) -> None:
    with helm.Chart.load(CHART) as chart:
        with pytest.raises(helm.HelmError, match=re.escape(where)):
            chart.validate_schema(values)
        with pytest.raises(helm.HelmError, match=re.escape(where)):
            chart.render(values=values, name="rk", namespace="ops")


def test_the_default_values_pass_the_schema() -> None:
    with helm.Chart.load(CHART) as chart:
        chart.validate_schema({})
        assert chart.schema is not None
