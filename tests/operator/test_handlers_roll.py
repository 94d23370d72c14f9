"""The rolling update, the real operator under kopf against the emulated API server: a
spec change and then a ``rocketkube.io/restart`` annotation each roll every broker pod
one at a time, slaves before their master, group by group, each once the previous pod's
replacement is Ready.

The test plays the StatefulSet controller and the kubelet: it recreates each deleted pod
from its StatefulSet's current template, not Ready at first, and marks it Ready once the
operator has reported waiting for it. Replication lag comes from real masters and slaves
of this process (two groups, a master and a slave each), through the admin API.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from kube_api import KubeApiServer, running_kube_api
from operator_harness import (
    RunningOperator,
    conditions,
    create_pod,
    mark_ready,
    pod_from_template,
    running_operator,
    statefulset_pods,
)
from waiting import wait_until

from rocketkube.broker.app import BrokerApp
from rocketkube.namesrv.app import NamesrvApp
from rocketkube.operator.api import names

StartBroker = Callable[..., Awaitable[BrokerApp]]
CLUSTER = "rl"
ORDER = ["rl-broker-0-1", "rl-broker-0-0", "rl-broker-1-1", "rl-broker-1-0"]
"""Group by group, in each the slave before its master."""


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiServer]:
    with running_kube_api(tmp_path_factory.mktemp("kube") / "kubeconfig") as server:
        yield server


@pytest.fixture(scope="module")
def operator(kube: KubeApiServer) -> Iterator[RunningOperator]:
    with running_operator(kube) as running:
        yield running


def cluster_body(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "rocketkube.io/v1alpha1",
        "kind": "BrokerCluster",
        "metadata": {"name": CLUSTER},
        "spec": {
            "nameServers": {"replicas": 1},
            "brokers": {"groups": 2, "replicasPerGroup": 2},
            **spec,
        },
    }


def broker_pods(kube: KubeApiServer) -> dict[str, dict[str, Any]]:
    selector = ",".join(f"{k}={v}" for k, v in names.selector(CLUSTER, "broker").items())
    return {
        pod["metadata"]["name"]: pod
        for pod in kube.cluster.list_objects("pods", "default", selector)
    }


def progressing(kube: KubeApiServer) -> tuple[str, str, str]:
    found = kube.cluster.find_object("brokerclusters", CLUSTER)
    return conditions(found).get("Progressing", ("", "", ""))


def statefulset_of(pod: str) -> str:
    return pod.rsplit("-", 1)[0]


async def progress_says(kube: KubeApiServer, text: str) -> None:
    await wait_until(lambda: text in progressing(kube)[2], f"Progressing saying {text!r}")


async def roll_one_at_a_time(kube: KubeApiServer) -> list[str]:
    """Play the StatefulSet controller and kubelet through a roll; the pods the operator
    deleted, in order."""
    cluster = kube.cluster
    deleted: list[str] = []
    for step, _ in enumerate(ORDER, 1):
        await wait_until(lambda: len(broker_pods(kube)) < len(ORDER), "the next pod deleted")
        gone = sorted(set(ORDER) - set(broker_pods(kube)))
        assert len(gone) == 1, f"more than one pod away at once: {gone}"
        pod = gone[0]
        deleted.append(pod)
        statefulset = cluster.get_object("statefulsets", statefulset_of(pod))
        create_pod(cluster, pod_from_template(statefulset, int(pod.rsplit("-", 1)[1]), ready=False))
        # the roll waits for it; after the last one, only the pod itself is not Ready
        said = f"waiting for {pod} to be Ready" if step < len(ORDER) else f"{pod} not Ready"
        await progress_says(kube, said)
        assert len(broker_pods(kube)) == len(ORDER)
        mark_ready(cluster, pod)
    return deleted


async def test_rolls_restart_one_pod_at_a_time_slaves_first(
    kube: KubeApiServer,
    operator: RunningOperator,
    namesrv: NamesrvApp,
    start_broker: StartBroker,
) -> None:
    operator.addresses[CLUSTER] = namesrv.address
    for group in range(2):
        broker = names.broker_name(CLUSTER, group)
        await start_broker(broker, broker_cluster_name=CLUSTER)
        await start_broker(broker, broker_cluster_name=CLUSTER, broker_id=1, broker_role="SLAVE")
    cluster = kube.cluster
    cluster.create_object(cluster_body())
    statefulsets = [names.namesrv(CLUSTER)] + [names.broker_group(CLUSTER, g) for g in range(2)]
    await wait_until(
        lambda: all(cluster.find_object("statefulsets", s) for s in statefulsets),
        "the StatefulSets",
    )
    for statefulset in statefulsets:
        statefulset_pods(cluster, statefulset)
    await wait_until(
        lambda: (
            conditions(cluster.find_object("brokerclusters", CLUSTER)).get("Ready", ("",))[0]
            == "True"
        ),
        "the cluster Ready",
    )
    old = {name: pod["metadata"]["annotations"] for name, pod in broker_pods(kube).items()}

    cluster.patch_object("brokerclusters", CLUSTER, {"spec": {"image": "rocketkube/rocketkube:9"}})
    assert await roll_one_at_a_time(kube) == ORDER
    await wait_until(lambda: progressing(kube)[:2] == ("False", "Idle"), "the roll done")
    hash_key = names.TEMPLATE_HASH_ANNOTATION
    for name, pod in broker_pods(kube).items():
        assert pod["metadata"]["annotations"][hash_key] != old[name][hash_key]
        assert pod["spec"]["containers"][0]["image"] == "rocketkube/rocketkube:9"
    assert operator.sample("rocketkube_operator_roll_restarts_total") == len(ORDER)

    restart = {"metadata": {"annotations": {"rocketkube.io/restart": "first"}}}
    cluster.patch_object("brokerclusters", CLUSTER, restart)
    assert await roll_one_at_a_time(kube) == ORDER
    await wait_until(
        lambda: (
            (cluster.get_object("brokerclusters", CLUSTER).get("status") or {}).get(
                "restartHandled"
            )
            == "first"
        ),
        "the restart recorded as handled",
    )
    for pod in broker_pods(kube).values():
        assert pod["metadata"]["annotations"]["rocketkube.io/restart"] == "first"
    assert operator.sample("rocketkube_operator_roll_restarts_total") == 2 * len(ORDER)
    cluster.delete_object("brokerclusters", CLUSTER)
