"""The chart as a Helm release on the emulated API server, through Helm's own release
functions (helm-python-sdk's ``Config.install/upgrade/uninstall``): what it creates, the
operator it deploys reconciling the example BrokerCluster, an upgrade to standbys, and an
uninstall that leaves the CRDs (and so the users' resources) in place.

Nothing runs a Deployment's pods here (the kubelet harness runs StatefulSets' pods, in
network namespaces that do not reach this API server on 127.0.0.1). The operator runs as
the Deployment's container would: its command and args exactly as installed, its env, plus
``--kubeconfig`` in place of the pod's service account. RBAC is not enforced by the
emulator: the rules are checked by the render tests.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import helm_python as helm
import pytest
import yaml
from helm_chart import ROOT, chart_copy, monitoring_crds
from kube_api import KubeApiServer, running_kube_api
from operator_harness import UNREACHABLE, conditions
from waiting import wait_for_value, wait_until

pytestmark = pytest.mark.xdist_group("chart-release")  # the tests share one release, in order

WATCHED = "rocketmq"
HOME = "rocketkube-system"
RELEASE = "rk"
DASHBOARDS = {"operator.json": '{"title": "Operator", "panels": []}'}
RULES = "groups:\n  - name: rocketkube\n    rules:\n      - alert: Down\n        expr: up == 0\n"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiServer]:
    """The emulated API server with the namespaces and prometheus-operator's CRDs."""
    with running_kube_api(tmp_path_factory.mktemp("kube") / "kubeconfig") as server:
        for name in (HOME, WATCHED):
            server.cluster.create_object(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            )
        for crd in monitoring_crds():
            server.cluster.create_object(crd)
        yield server


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return chart_copy(tmp_path_factory.mktemp("chart"), dashboards=DASHBOARDS, rules=RULES)


@pytest.fixture(scope="module")
def values() -> dict[str, Any]:
    """Watch one namespace; every monitoring object; the operator's ports free here and
    the example cluster's name servers pointed at an address that refuses at once."""
    return {
        "watchNamespaces": [WATCHED],
        "timerInterval": 1,
        "ports": {"health": free_port(), "metrics": free_port()},
        "extraArgs": [f"--namesrv-override=demo={UNREACHABLE}"],
        "metrics": {
            "serviceMonitor": {"enabled": True},
            "podMonitor": {"enabled": True},
            "prometheusRule": {"enabled": True},
        },
    }


@pytest.fixture(scope="module")
def config(kube: KubeApiServer) -> Iterator[helm.Config]:
    with helm.Config(kubeconfig_path=kube.kubeconfig, namespace=HOME) as cfg:
        yield cfg


@pytest.fixture(scope="module")
def installed(config: helm.Config, chart: Path, values: dict[str, Any]) -> dict[str, Any]:
    return config.install(chart, RELEASE, values, namespace=HOME)


def names(kube: KubeApiServer, plural: str, namespace: str | None = HOME) -> set[str]:
    return {o["metadata"]["name"] for o in kube.cluster.list_objects(plural, namespace)}


def test_install_creates_every_object_of_the_chart(
    kube: KubeApiServer, config: helm.Config, installed: dict[str, Any]
) -> None:
    assert installed["status"] == "deployed"
    assert installed["revision"] == 1
    assert "kubectl -n rocketmq apply -f examples/kubernetes/" in installed["notes"]
    for crd in ("brokerclusters.rocketkube.io", "topics.rocketkube.io",
                "consumergroups.rocketkube.io", "kopfpeerings.kopf.dev"):  # fmt: skip
        assert crd in names(kube, "customresourcedefinitions", None)
    assert names(kube, "deployments") == {"rk-rocketkube"}
    assert names(kube, "serviceaccounts") == {"rk-rocketkube"}
    assert names(kube, "services") == {"rk-rocketkube-metrics"}
    assert names(kube, "roles", WATCHED) == {"rk-rocketkube"}
    assert names(kube, "rolebindings", WATCHED) == {"rk-rocketkube"}
    assert "rk-rocketkube" in names(kube, "clusterroles", None)
    assert names(kube, "configmaps") == {"rk-rocketkube-dashboard-operator"}
    for plural in ("servicemonitors", "podmonitors", "prometheusrules"):
        assert names(kube, plural) == {"rk-rocketkube"}
    rule = kube.cluster.get_object("prometheusrules", "rk-rocketkube", HOME)
    assert rule["spec"]["groups"] == yaml.safe_load(RULES)["groups"]
    stored = kube.cluster.list_objects("secrets", HOME)
    assert [s["metadata"]["labels"]["owner"] for s in stored] == ["helm"]
    assert [r["name"] for r in config.list()] == [RELEASE]


async def fetch(url: str) -> tuple[int, str] | None:
    """An HTTP GET's status and text; None while nothing listens."""
    try:
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return response.status, await response.text()
    except aiohttp.ClientConnectionError:
        return None


def container_of(kube: KubeApiServer) -> dict[str, Any]:
    deployment = kube.cluster.get_object("deployments", "rk-rocketkube", HOME)
    containers: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    (container,) = containers
    return container


def command_of(container: dict[str, Any], kube: KubeApiServer) -> list[str]:
    """The container's command and args, ``rocketkube`` being this checkout's, with
    ``--kubeconfig`` standing in for the pod's service account."""
    command, *rest = container["command"]
    assert command == "rocketkube"
    binary = str(Path(sysconfig.get_path("scripts")) / "rocketkube")
    return [binary, *rest, *container["args"], f"--kubeconfig={kube.kubeconfig}"]


def cluster_reconciled(kube: KubeApiServer) -> bool:
    demo = kube.cluster.find_object("brokerclusters", "demo", WATCHED)
    statefulsets = names(kube, "statefulsets", WATCHED)
    status = (demo or {}).get("status") or {}
    return (
        {"demo-namesrv", "demo-broker-0", "demo-broker-1"} <= statefulsets
        and status.get("observedGeneration") == 1
        and "Ready" in conditions(demo)
    )


async def test_the_deployed_operator_reconciles_the_example_cluster(
    kube: KubeApiServer, installed: dict[str, Any], values: dict[str, Any], tmp_path: Path
) -> None:
    container = container_of(kube)
    env = {**os.environ, **{e["name"]: e["value"] for e in container["env"]}}
    log_path = tmp_path / "operator.log"
    with log_path.open("w") as log:
        process = await asyncio.create_subprocess_exec(
            *command_of(container, kube), env=env, stdout=log, stderr=log
        )
        try:
            health = f"http://127.0.0.1:{values['ports']['health']}/healthz"
            answer = await wait_for_value(lambda: fetch(health), "the liveness probe")
            assert answer[0] == 200
            example = yaml.safe_load((ROOT / "examples/kubernetes/cluster.yaml").read_text())
            example["metadata"]["namespace"] = WATCHED
            kube.cluster.create_object(example)
            await wait_until(lambda: cluster_reconciled(kube), "the example cluster reconciled")
            metrics = await fetch(f"http://127.0.0.1:{values['ports']['metrics']}/metrics")
            assert metrics is not None
            assert "rocketkube_operator_reconcile_seconds" in metrics[1]
        finally:
            process.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(process.wait(), 60)
    assert code == 0, log_path.read_text()
    demo = kube.cluster.get_object("brokerclusters", "demo", WATCHED)
    ready, reason, _ = conditions(demo)["Ready"]
    assert (ready, bool(reason)) == ("False", True)  # no pods run: not ready, and why


def test_an_upgrade_adds_standbys_with_their_peering(
    kube: KubeApiServer, config: helm.Config, chart: Path, values: dict[str, Any]
) -> None:
    upgraded = config.upgrade(chart, RELEASE, {**values, "replicas": 2}, namespace=HOME)
    assert (upgraded["status"], upgraded["revision"]) == ("deployed", 2)
    deployment = kube.cluster.get_object("deployments", "rk-rocketkube", HOME)
    assert deployment["spec"]["replicas"] == 2
    assert {"--peering=rocketkube", "--priority=random"} <= set(container_of(kube)["args"])
    assert names(kube, "kopfpeerings", WATCHED) == {"rocketkube"}
    assert [r["revision"] for r in config.history(RELEASE)] == [1, 2]


def test_uninstall_removes_the_release_but_keeps_the_crds(
    kube: KubeApiServer, config: helm.Config
) -> None:
    config.uninstall(RELEASE)
    for plural in ("deployments", "services", "serviceaccounts", "configmaps", "secrets",
                   "servicemonitors", "podmonitors", "prometheusrules"):  # fmt: skip
        assert names(kube, plural) == set(), plural
    assert names(kube, "roles", WATCHED) == set()
    assert names(kube, "kopfpeerings", WATCHED) == set()
    assert "rk-rocketkube" not in names(kube, "clusterroles", None)
    assert "brokerclusters.rocketkube.io" in names(kube, "customresourcedefinitions", None)
    assert names(kube, "brokerclusters", WATCHED) == {"demo"}
    assert config.list() == []
