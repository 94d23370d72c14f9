"""The chart as a Helm release on the emulated API server, through Helm's own release
functions (helm-python-sdk's ``Config.install/upgrade/uninstall``): what it creates, the
operator it deploys running as a pod and reconciling the example BrokerCluster, an upgrade
to two replicas with their peering, and an uninstall that stops the pods and leaves the
CRDs (and so the users' resources) in place.

The kubelet harness (``kubelet``) plays the Deployment controller and the kubelet: the
Deployment's pods run their container's command, args and env exactly as rendered, each
in a network namespace of its own, probed at the template's ``/healthz``, and reach the
API server as pods do, through the ``KUBERNETES_SERVICE_*`` variables and their service
account's token and CA (``kubelet_apiserver``: TLS on the bridge in front of the
emulator): no kubeconfig. The harness runs no StatefulSet here: the example cluster's
name servers and brokers stay podless, so the operator reports it not Ready, saying why.
RBAC is not enforced by the emulator: the rules are checked by the render tests. Running
pods needs root (network namespaces); without it those tests are skipped, saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import helm_python as helm
import kubelet_net as net
import pytest
import yaml
from e2e_cluster import Scene
from helm_chart import ROOT, chart_copy, monitoring_crds
from kube_api import KubeApiServer, running_kube_api
from kubelet import KubeletOptions, RunningKubelet, Unavailable, running_kubelet
from kubelet_apiserver import MOUNT_PATH, ApiServer
from kubelet_deployments import HASH_LABEL
from operator_harness import conditions

# The tests share one release, in order: on one worker (their group), and with fixtures that
# live for the worker's session, since a worker may run other modules' tests between two of
# these, which would end module-scoped fixtures (a fresh API server without the release).
pytestmark = pytest.mark.xdist_group("chart-release")

WATCHED = "rocketmq"
HOME = "rocketkube-system"
RELEASE = "rk"
DEPLOYMENT = "rk-rocketkube"
DASHBOARDS = {"operator.json": '{"title": "Operator", "panels": []}'}
RULES = "groups:\n  - name: rocketkube\n    rules:\n      - alert: Down\n        expr: up == 0\n"


@pytest.fixture(scope="session")
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


@pytest.fixture(scope="session")
def harness(
    kube: KubeApiServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningKubelet]:
    """The kubelet harness running Deployments' pods (no StatefulSet's), with the API
    server reachable from them; probes as the template times them."""
    options = KubeletOptions(
        workdir=tmp_path_factory.mktemp("kubelet"),
        api_server=ApiServer(kube.url, kube.token),
        workloads=frozenset({"deployments"}),
        teardown_grace=5.0,
    )
    with contextlib.ExitStack() as stack:
        try:
            running = stack.enter_context(running_kubelet(kube.cluster, options))
        except Unavailable as error:
            pytest.skip(str(error))
        yield running


@pytest.fixture(scope="session")
def scene(kube: KubeApiServer, harness: RunningKubelet) -> Scene:
    """Waits that fail showing the operator's pods, their logs and the harness's errors."""
    return Scene(kube.cluster, harness, HOME, harness.kubelet.options.workdir)


async def settle(scene: Scene, condition: Callable[[], object], what: str) -> None:
    """Wait for ``condition`` (a cold start of the operator on a loaded machine can take
    half a minute; the wait ends as soon as it holds)."""
    async with scene.step(what):
        await scene.until(condition, what, timeout=90)


@pytest.fixture(scope="session")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return chart_copy(tmp_path_factory.mktemp("chart"), dashboards=DASHBOARDS, rules=RULES)


@pytest.fixture(scope="session")
def values() -> dict[str, Any]:
    """Watch one namespace; a timer every second; every monitoring object."""
    return {
        "watchNamespaces": [WATCHED],
        "timerInterval": 1,
        "metrics": {
            "serviceMonitor": {"enabled": True},
            "podMonitor": {"enabled": True},
            "prometheusRule": {"enabled": True},
        },
    }


@pytest.fixture(scope="session")
def config(kube: KubeApiServer) -> Iterator[helm.Config]:
    with helm.Config(kubeconfig_path=kube.kubeconfig, namespace=HOME) as cfg:
        yield cfg


@pytest.fixture(scope="session")
def installed(config: helm.Config, chart: Path, values: dict[str, Any]) -> dict[str, Any]:
    return config.install(chart, RELEASE, values, namespace=HOME)


@pytest.fixture(scope="session")
def example(kube: KubeApiServer) -> dict[str, Any]:
    """``examples/kubernetes/cluster.yaml`` applied in the watched namespace."""
    obj = yaml.safe_load((ROOT / "examples/kubernetes/cluster.yaml").read_text())
    obj["metadata"]["namespace"] = WATCHED
    return kube.cluster.create_object(obj)


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
    deployment = kube.cluster.get_object("deployments", DEPLOYMENT, HOME)
    containers: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    (container,) = containers
    return container


def port_of(container: dict[str, Any], name: str) -> int:
    return next(int(p["containerPort"]) for p in container["ports"] if p["name"] == name)


def operator_pods(kube: KubeApiServer) -> dict[str, dict[str, Any]]:
    """The Deployment's pods not being deleted, by name."""
    pods = kube.cluster.list_objects("pods", HOME)
    return {p["metadata"]["name"]: p for p in pods if not p["metadata"].get("deletionTimestamp")}


def rolled_out(kube: KubeApiServer, replicas: int) -> bool:
    """The Deployment's latest spec observed and all its ``replicas`` pods of it available,
    none other left."""
    deployment = kube.cluster.get_object("deployments", DEPLOYMENT, HOME)
    status = deployment.get("status") or {}
    counts = [status.get(k) for k in ("replicas", "updatedReplicas", "readyReplicas",
                                      "availableReplicas")]  # fmt: skip
    return (
        status.get("observedGeneration") == deployment["metadata"]["generation"]
        and counts == [replicas] * 4
        and len(operator_pods(kube)) == replicas
    )


def process_of(harness: RunningKubelet, pod: str) -> tuple[list[str], dict[str, str]]:
    """The pod's container process: its argv and environment."""
    pid = harness.pid(pod, HOME)
    assert pid is not None
    proc = Path(f"/proc/{pid}")
    argv = proc.joinpath("cmdline").read_bytes().decode().split("\0")[:-1]
    pairs = proc.joinpath("environ").read_bytes().decode().split("\0")[:-1]
    return argv, dict(pair.split("=", 1) for pair in pairs)


def cluster_reconciled(kube: KubeApiServer) -> bool:
    demo = kube.cluster.find_object("brokerclusters", "demo", WATCHED)
    statefulsets = names(kube, "statefulsets", WATCHED)
    status = (demo or {}).get("status") or {}
    return (
        {"demo-namesrv", "demo-broker-0", "demo-broker-1"} <= statefulsets
        and status.get("observedGeneration") == 1
        and "Ready" in conditions(demo)
    )


async def test_the_deployment_runs_the_operator_as_a_pod(
    kube: KubeApiServer, installed: dict[str, Any], harness: RunningKubelet, scene: Scene
) -> None:
    await settle(scene, lambda: rolled_out(kube, 1), "the Deployment's pod available")
    ((name, pod),) = operator_pods(kube).items()
    deployment = kube.cluster.get_object("deployments", DEPLOYMENT, HOME)
    pod_hash = pod["metadata"]["labels"][HASH_LABEL]
    assert re.fullmatch(rf"{DEPLOYMENT}-{pod_hash}-[a-z0-9]{{5}}", name)
    (owner,) = pod["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("Deployment", deployment["metadata"]["uid"])
    available = conditions(kube.cluster.get_object("deployments", DEPLOYMENT, HOME))
    assert available["Available"][:2] == ("True", "MinimumReplicasAvailable")
    container = container_of(kube)
    argv, env = process_of(harness, name)
    assert Path(argv[-1 - len(container["args"])]).name == "rocketkube"  # the command
    assert argv[-len(container["args"]) :] == container["args"]
    assert env["TMPDIR"] == "/tmp"
    # the service account's credentials and the Service's address, not a kubeconfig
    assert env["KUBERNETES_SERVICE_HOST"] == harness.host_ip
    assert "KUBECONFIG" not in env
    assert not any("kubeconfig" in a for a in argv)
    pid = str(harness.pid(name, HOME))
    mounted = await net.run("nsenter", "-t", pid, "-m", "cat", f"{MOUNT_PATH}/namespace")
    assert mounted == HOME


async def test_the_operator_pod_reconciles_the_example_cluster(
    kube: KubeApiServer, scene: Scene, example: dict[str, Any]
) -> None:
    await settle(scene, lambda: rolled_out(kube, 1), "the Deployment's pod available")
    await settle(scene, lambda: cluster_reconciled(kube), "the example cluster reconciled")
    demo = kube.cluster.get_object("brokerclusters", "demo", WATCHED)
    ready, reason, _ = conditions(demo)["Ready"]
    assert (ready, bool(reason)) == ("False", True)  # no broker pods run: not ready, and why
    (pod,) = operator_pods(kube).values()
    port = port_of(container_of(kube), "metrics")
    url = f"http://{pod['status']['podIP']}:{port}/metrics"
    status, text = await scene.value(lambda: fetch(url), "the operator's metrics")
    assert status == 200
    assert "rocketkube_operator_reconcile_seconds" in text


def peers(kube: KubeApiServer) -> set[str]:
    """The host names of the operators in the release's peering object (kopf's ids are
    ``user@host/started/random``; a pod's host name is its name)."""
    peering = kube.cluster.find_object("kopfpeerings", "rocketkube", WATCHED) or {}
    return {key.partition("@")[2].partition("/")[0] for key in peering.get("status") or {}}


async def test_an_upgrade_to_two_replicas_runs_them_with_their_peering(
    kube: KubeApiServer,
    config: helm.Config,
    chart: Path,
    values: dict[str, Any],
    scene: Scene,
) -> None:
    await settle(scene, lambda: rolled_out(kube, 1), "the Deployment's pod available")
    before = set(operator_pods(kube))
    upgraded = await asyncio.to_thread(
        config.upgrade, chart, RELEASE, {**values, "replicas": 2}, namespace=HOME
    )
    assert (upgraded["status"], upgraded["revision"]) == ("deployed", 2)
    assert {"--peering=rocketkube", "--priority=random"} <= set(container_of(kube)["args"])
    assert names(kube, "kopfpeerings", WATCHED) == {"rocketkube"}
    await settle(scene, lambda: rolled_out(kube, 2), "two pods of the new template available")
    running = set(operator_pods(kube))
    assert not running & before  # the template changed: the first pod was replaced
    await settle(scene, lambda: peers(kube) == running, "both replicas in the peering")
    assert [r["revision"] for r in config.history(RELEASE)] == [1, 2]


async def test_uninstall_stops_the_pods_and_keeps_the_crds_and_resources(
    kube: KubeApiServer,
    config: helm.Config,
    harness: RunningKubelet,
    scene: Scene,
    example: dict[str, Any],
) -> None:
    await asyncio.to_thread(config.uninstall, RELEASE)
    for plural in ("deployments", "services", "serviceaccounts", "configmaps", "secrets",
                   "servicemonitors", "podmonitors", "prometheusrules"):  # fmt: skip
        assert names(kube, plural) == set(), plural
    assert names(kube, "roles", WATCHED) == set()
    assert names(kube, "kopfpeerings", WATCHED) == set()
    assert "rk-rocketkube" not in names(kube, "clusterroles", None)
    await settle(scene, lambda: not names(kube, "pods"), "the operator's pods stopped and gone")
    assert harness.errors == []
    assert "brokerclusters.rocketkube.io" in names(kube, "customresourcedefinitions", None)
    assert names(kube, "brokerclusters", WATCHED) == {"demo"}
    assert config.list() == []
