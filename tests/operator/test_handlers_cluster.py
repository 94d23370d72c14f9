"""The BrokerCluster handlers, the real operator under kopf against the emulated API server
driven by the real kubectl: the example applied renders every object, owned by the
cluster; status and printer columns; spec changes and scaling reach the StatefulSets;
bad specs are refused by the schema or reported; a paused cluster is left alone; a
deleted cluster's claims stay unless ``deleteClaim``; Prometheus finds the pods through
a PodMonitor once PodMonitors are served, else through annotations.

No brokers run here (nothing plays kubelet): the clusters' pods never exist, so they
stay not Ready, and their admin API is unreachable.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kube_api import KubeApiServer
from operator_harness import Kubectl, RunningOperator, conditions, events_of, resource
from waiting import wait_until

from rocketkube.operator.api import names

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl")

EXAMPLE = Path(__file__).parents[2] / "examples" / "kubernetes" / "cluster.yaml"
GROUP_OBJECTS = ("statefulsets", "services", "configmaps", "poddisruptionbudgets")


def cluster_yaml(name: str, **spec: Any) -> str:
    nodes = {"nameServers": {"replicas": 1}, "brokers": {"groups": 1}}
    return yaml.safe_dump(resource("BrokerCluster", name, **{**nodes, **spec}))


def apply(kubectl: Kubectl, manifest: str) -> None:
    done = kubectl("apply", "-f", "-", stdin=manifest)
    assert done.returncode == 0, done.stderr


async def delete(kube: KubeApiServer, kubectl: Kubectl, name: str) -> None:
    """Delete the cluster; its objects go with it (owner references)."""
    assert kubectl("delete", "brokercluster", name).returncode == 0
    cluster = kube.cluster
    await wait_until(
        lambda: all(
            cluster.find_object(kind, names.namesrv(name)) is None for kind in GROUP_OBJECTS
        ),
        f"{name}'s objects gone with it",
    )


def status_of(kube: KubeApiServer, name: str) -> dict[str, Any]:
    found = kube.cluster.find_object("brokerclusters", name)
    return dict((found or {}).get("status") or {})


def reconciled(kube: KubeApiServer, name: str) -> bool:
    """The status reflects the cluster's current generation."""
    found = kube.cluster.find_object("brokerclusters", name) or {}
    status = found.get("status") or {}
    return bool(status.get("observedGeneration") == found["metadata"]["generation"])


def template_hash(kube: KubeApiServer, statefulset: str) -> str:
    obj = kube.cluster.get_object("statefulsets", statefulset)
    return str(obj["spec"]["template"]["metadata"]["annotations"][names.TEMPLATE_HASH_ANNOTATION])


async def test_the_example_renders_every_object_owned_by_the_cluster(
    kube: KubeApiServer, operator: RunningOperator, kubectl: Kubectl
) -> None:
    apply(kubectl, EXAMPLE.read_text())
    cluster = kube.cluster
    wanted = [(kind, names.namesrv("demo")) for kind in GROUP_OBJECTS] + [
        (kind, names.broker_group("demo", group)) for kind in GROUP_OBJECTS for group in (0, 1)
    ]
    await wait_until(
        lambda: all(cluster.find_object(kind, name) for kind, name in wanted),
        "the example's StatefulSets, Services, ConfigMaps and PDBs",
    )
    uid = cluster.get_object("brokerclusters", "demo")["metadata"]["uid"]
    for kind, name in wanted:
        owners = cluster.get_object(kind, name)["metadata"]["ownerReferences"]
        assert [(o["kind"], o["name"], o["uid"], o["controller"]) for o in owners] == [
            ("BrokerCluster", "demo", uid, True)
        ], (kind, name)

    await wait_until(lambda: reconciled(kube, "demo"), "observedGeneration")
    status = status_of(kube, "demo")
    found = conditions(cluster.get_object("brokerclusters", "demo"))
    assert set(found) == {"Ready", "Progressing", "Degraded", "ScaleDownBlocked"}
    assert found["Ready"][:2] == ("False", "PodsNotReady")
    assert "0/2 broker groups ready" in found["Ready"][2]
    assert found["Progressing"][:2] == ("True", "Creating")
    assert found["Degraded"][:2] == ("False", "Healthy")
    assert status["nameServerAddress"] == names.namesrv_address("demo", "default", 2)
    assert status["readyGroups"] == "0/2"
    assert [group["brokerName"] for group in status["groups"]] == ["demo-broker-0", "demo-broker-1"]
    await wait_until(
        lambda: (
            ("Normal", "Applied") in {e[:2] for e in events_of(cluster, "BrokerCluster", "demo")}
        ),
        "the Applied Event",
    )

    shown = kubectl("get", "brokerclusters")
    assert shown.returncode == 0, shown.stderr
    header, row = shown.stdout.splitlines()[:2]
    assert header.split() == ["NAME", "GROUPS", "REPLICAS", "READY", "GROUPS", "READY", "AGE"]
    assert row.split()[:5] == ["demo", "2", "2", "0/2", "False"]
    wide = kubectl("get", "rkc", "demo", "-o", "wide")
    assert "rocketkube/rocketkube:0.1.0" in wide.stdout
    await delete(kube, kubectl, "demo")


async def test_a_spec_change_updates_the_statefulsets(
    kube: KubeApiServer, operator: RunningOperator, kubectl: Kubectl
) -> None:
    apply(kubectl, cluster_yaml("edited"))
    await wait_until(lambda: reconciled(kube, "edited"), "the cluster reconciled")
    before = template_hash(kube, "edited-broker-0")

    apply(kubectl, cluster_yaml("edited", image="rocketkube/rocketkube:0.2.0"))
    await wait_until(
        lambda: template_hash(kube, "edited-broker-0") != before, "the broker template rehashed"
    )
    statefulset = kube.cluster.get_object("statefulsets", "edited-broker-0")
    assert statefulset["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "rocketkube/rocketkube:0.2.0"
    )
    await wait_until(lambda: reconciled(kube, "edited"), "the new generation reconciled")
    assert status_of(kube, "edited")["image"] == "rocketkube/rocketkube:0.2.0"
    await delete(kube, kubectl, "edited")


async def test_scaling_out_creates_the_new_groups_objects(
    kube: KubeApiServer, operator: RunningOperator, kubectl: Kubectl
) -> None:
    apply(kubectl, cluster_yaml("grown", brokers={"groups": 2}))
    await wait_until(lambda: reconciled(kube, "grown"), "the cluster reconciled")
    assert kube.cluster.find_object("statefulsets", "grown-broker-2") is None

    apply(kubectl, cluster_yaml("grown", brokers={"groups": 3}))
    cluster = kube.cluster
    await wait_until(
        lambda: all(cluster.find_object(kind, "grown-broker-2") for kind in GROUP_OBJECTS),
        "the third group's objects",
    )
    await wait_until(lambda: reconciled(kube, "grown"), "the new generation reconciled")
    assert status_of(kube, "grown")["readyGroups"] == "0/3"
    await delete(kube, kubectl, "grown")


def test_a_spec_the_schema_refuses_never_reaches_the_operator(
    kube: KubeApiServer, operator: RunningOperator, kubectl: Kubectl
) -> None:
    refused = kubectl("apply", "-f", "-", stdin=cluster_yaml("bad", brokers={"groups": 0}))
    assert refused.returncode != 0
    assert "spec.brokers.groups" in refused.stderr
    derived = kubectl(
        "apply", "-f", "-",
        stdin=cluster_yaml("bad", brokers={"properties": {"brokerName": "mine"}}),
    )  # fmt: skip
    assert derived.returncode != 0
    assert "cannot set what the operator derives" in derived.stderr
    assert kube.cluster.find_object("brokerclusters", "bad") is None


async def test_an_invalid_spec_is_reported_not_retried(
    kube: KubeApiServer, operator: RunningOperator, kubectl: Kubectl
) -> None:
    apply(kubectl, cluster_yaml("odd", brokers={"properties": {"bad key": "1"}}))
    cluster = kube.cluster

    def degraded() -> tuple[str, str, str] | None:
        return conditions(cluster.find_object("brokerclusters", "odd")).get("Degraded")

    await wait_until(lambda: degraded() is not None, "the Degraded condition")
    status, reason, message = degraded() or ("", "", "")
    assert (status, reason) == ("True", "InvalidSpec")
    assert "'bad key' is not a property name" in message

    def warnings() -> list[tuple[str, str, str]]:
        return [e for e in events_of(cluster, "BrokerCluster", "odd") if e[1] == "InvalidSpec"]

    await wait_until(warnings, "the InvalidSpec Event")  # posted by kopf in the background
    assert warnings()[0][0] == "Warning"
    assert cluster.find_object("statefulsets", "odd-namesrv") is None
    assert (
        operator.sample(
            "rocketkube_operator_reconciles_total", kind="BrokerCluster", result="invalid"
        )
        >= 1
    )

    apply(kubectl, cluster_yaml("odd", brokers={"properties": {"good.key": "1"}}))
    await wait_until(lambda: reconciled(kube, "odd"), "the fixed spec reconciled")
    assert (degraded() or ("",))[0] == "False"
    assert cluster.find_object("statefulsets", "odd-namesrv") is not None
    await delete(kube, kubectl, "odd")


async def test_a_paused_cluster_is_reported_and_left_alone(
    kube: KubeApiServer, operator: RunningOperator, kubectl: Kubectl
) -> None:
    apply(kubectl, cluster_yaml("held", paused=True))
    cluster = kube.cluster

    def progressing() -> tuple[str, str, str] | None:
        return conditions(cluster.find_object("brokerclusters", "held")).get("Progressing")

    await wait_until(lambda: progressing() is not None, "the Progressing condition")
    assert (progressing() or ("",))[:2] == ("False", "Paused")
    assert cluster.find_object("statefulsets", "held-namesrv") is None
    assert operator.sample("rocketkube_operator_managed_objects", kind="BrokerCluster") >= 1

    apply(kubectl, cluster_yaml("held", paused=False))
    await wait_until(
        lambda: cluster.find_object("statefulsets", "held-namesrv") is not None,
        "the objects once unpaused",
    )
    await delete(kube, kubectl, "held")


@dataclass
class Silent:
    """A server that takes connections and never answers: every admin request to it waits
    its whole timeout."""

    address: str = ""
    accepted: int = 0


@contextlib.asynccontextmanager
async def silent_server() -> AsyncIterator[Silent]:
    silent = Silent()
    writers: list[asyncio.StreamWriter] = []

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        silent.accepted += 1
        writers.append(writer)
        while await reader.read(4096):
            pass

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    silent.address = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        yield silent
    finally:
        server.close()
        for writer in writers:
            writer.close()
        await server.wait_closed()


async def test_a_cluster_deleted_during_a_timer_pass_goes_once_the_pass_ends(
    kube: KubeApiServer, operator: RunningOperator, kubectl: Kubectl
) -> None:
    """kopf lets a timer's pass end before the object goes, then looks again only after
    ``cancellation_polling`` seconds (a minute by default): the operator asks for less.
    Here each pass waits seconds on name servers that never answer, and the deletion
    comes while the timer's pass waits on them."""
    cluster = kube.cluster
    async with silent_server() as silent:
        operator.addresses["slow"] = silent.address
        apply(kubectl, cluster_yaml("slow"))
        await wait_until(lambda: handled(kube, "slow"), "the creation handled")
        accepted = silent.accepted
        await wait_until(lambda: silent.accepted > accepted, "a timer pass waiting on them")
        assert kubectl("delete", "brokercluster", "slow", "--wait=false").returncode == 0
        await wait_until(
            lambda: cluster.find_object("brokerclusters", "slow") is None, "the cluster gone"
        )


def handled(kube: KubeApiServer, name: str) -> bool:
    """kopf has handled the object's creation (and records what it handled)."""
    found = kube.cluster.find_object("brokerclusters", name) or {}
    annotations = found.get("metadata", {}).get("annotations") or {}
    return "rocketkube.io/last-handled-configuration" in annotations


def claim(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


@pytest.mark.parametrize(("delete_claim", "kept"), [(False, True), (True, False)])
async def test_a_deleted_clusters_claims_stay_unless_delete_claim(
    kube: KubeApiServer, operator: RunningOperator, kubectl: Kubectl, delete_claim: bool, kept: bool
) -> None:
    """The broker StatefulSets' claim retention policy says it; the StatefulSet controller
    (here the emulated API server) removes the claims with their sets, or keeps them."""
    name = "kept" if kept else "dropped"
    storage = {"storage": {"deleteClaim": delete_claim}}
    apply(kubectl, cluster_yaml(name, brokers={"groups": 2, **storage}))
    cluster = kube.cluster
    sets = [names.broker_group(name, group) for group in range(2)]
    await wait_until(
        lambda: all(cluster.find_object("statefulsets", s) for s in sets), "the StatefulSets"
    )
    claims = [names.broker_claim(name, group, pod) for group in range(2) for pod in range(2)]
    for claim_name in claims:  # as the StatefulSet controller makes them for the pods
        cluster.create_object(claim(claim_name))

    await delete(kube, kubectl, name)
    await wait_until(
        lambda: all(cluster.find_object("statefulsets", s) is None for s in sets),
        "the broker StatefulSets gone with the cluster",
    )
    left = [c for c in claims if cluster.find_object("persistentvolumeclaims", c) is not None]
    assert left == (claims if kept else [])
    for claim_name in left:
        cluster.delete_object("persistentvolumeclaims", claim_name)


POD_MONITOR_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "podmonitors.monitoring.coreos.com"},
    "spec": {
        "group": "monitoring.coreos.com",
        "scope": "Namespaced",
        "names": {
            "plural": "podmonitors",
            "singular": "podmonitor",
            "kind": "PodMonitor",
            "listKind": "PodMonitorList",
            "shortNames": ["pmon"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["selector"],
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    }
                },
            }
        ],
    },
}
"""The Prometheus operator's PodMonitor CRD as far as serving the kind goes (the real one's
names and version; its spec schema left open): what a cluster with the Prometheus
operator installed serves."""


def scrape_annotations(kube: KubeApiServer, statefulset: str) -> set[str]:
    found = kube.cluster.get_object("statefulsets", statefulset)
    annotations = found["spec"]["template"]["metadata"]["annotations"]
    return {key for key in annotations if key.startswith("prometheus.io/")}


async def test_a_cluster_is_scraped_through_a_pod_monitor_once_they_are_served(
    kube: KubeApiServer, operator: RunningOperator, kubectl: Kubectl
) -> None:
    """Annotations while no PodMonitors are served; a PodMonitor owned by the cluster once
    the CRD is installed (the annotations then go); none once metrics are off."""
    apply(kubectl, cluster_yaml("seen"))
    await wait_until(lambda: reconciled(kube, "seen"), "the cluster reconciled")
    sets = ["seen-namesrv", "seen-broker-0"]
    for statefulset in sets:
        assert scrape_annotations(kube, statefulset) == {
            "prometheus.io/scrape", "prometheus.io/port", "prometheus.io/path"
        }  # fmt: skip

    cluster = kube.cluster
    cluster.create_object(POD_MONITOR_CRD)
    try:
        await wait_until(
            lambda: cluster.find_object("podmonitors", "seen-metrics") is not None,
            "the PodMonitor",
        )
        monitor = cluster.get_object("podmonitors", "seen-metrics")
        uid = cluster.get_object("brokerclusters", "seen")["metadata"]["uid"]
        assert [o["uid"] for o in monitor["metadata"]["ownerReferences"]] == [uid]
        assert monitor["spec"]["podMetricsEndpoints"] == [{"port": "metrics", "path": "/metrics"}]
        await wait_until(
            lambda: all(not scrape_annotations(kube, s) for s in sets),
            "the templates without scrape annotations",
        )

        apply(kubectl, cluster_yaml("seen", metrics={"enabled": False}))
        await wait_until(
            lambda: cluster.find_object("podmonitors", "seen-metrics") is None,
            "the PodMonitor deleted with metrics off",
        )
        await delete(kube, kubectl, "seen")
    finally:
        cluster.delete_object("customresourcedefinitions", POD_MONITOR_CRD["metadata"]["name"])
