"""Scale-in, the real operator under kopf against the emulated API server and two real
masters of this process: the retiring group loses its write permission, the scale-down
is blocked (with the lag named) while a consumer group has messages left on it, and once
they are consumed its objects go; its volume claims stay (no ``deleteClaim``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from kube_api import KubeApiServer, running_kube_api
from operator_harness import RunningOperator, conditions, running_operator, statefulset_pods
from waiting import wait_until

from rocketkube.broker.app import BrokerApp
from rocketkube.client.admin import AdminClient
from rocketkube.client.producer import Producer
from rocketkube.common.message.model import Message
from rocketkube.common.protocol import permission
from rocketkube.namesrv.app import NamesrvApp
from rocketkube.operator.api import names

StartBroker = Callable[..., Awaitable[BrokerApp]]
CLUSTER = "si"
API = "rocketkube.io/v1alpha1"
GROUP_OBJECTS = ("statefulsets", "services", "configmaps", "poddisruptionbudgets")


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiServer]:
    with running_kube_api(tmp_path_factory.mktemp("kube") / "kubeconfig") as server:
        yield server


@pytest.fixture(scope="module")
def operator(kube: KubeApiServer) -> Iterator[RunningOperator]:
    with running_operator(kube) as running:
        yield running


def resource(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name}, "spec": spec}


def claim(group: int) -> dict[str, Any]:
    """The store claim the group's StatefulSet controller would have made for pod 0."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": names.broker_claim(CLUSTER, group, 0),
            "labels": names.labels(CLUSTER, names.BROKER_COMPONENT, group),
        },
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


def cluster_condition(kube: KubeApiServer, type_: str) -> tuple[str, str, str]:
    found = kube.cluster.find_object("brokerclusters", CLUSTER)
    return conditions(found).get(type_, ("", "", ""))


async def writable(namesrv: NamesrvApp, broker: str) -> bool:
    async with AdminClient(namesrv.address) as admin:
        route = await admin.topic_route(broker)
    return all(queue.perm & permission.PERM_WRITE for queue in route.queue_datas)


async def test_scale_in_revokes_writes_waits_for_consumers_then_removes_the_group(
    kube: KubeApiServer,
    operator: RunningOperator,
    namesrv: NamesrvApp,
    start_broker: StartBroker,
) -> None:
    operator.addresses[CLUSTER] = namesrv.address
    for group in range(2):
        await start_broker(names.broker_name(CLUSTER, group), broker_cluster_name=CLUSTER)
    cluster = kube.cluster
    spec = {"nameServers": {"replicas": 1}, "brokers": {"groups": 2, "replicasPerGroup": 1}}
    cluster.create_object(resource("BrokerCluster", CLUSTER, **spec))
    cluster.create_object(resource("Topic", "jobs", cluster=CLUSTER, topicName="Jobs", queues=2))
    cluster.create_object(resource("ConsumerGroup", "workers", cluster=CLUSTER, groupName="W"))
    cluster.create_object(claim(1))
    statefulsets = [names.namesrv(CLUSTER)] + [names.broker_group(CLUSTER, g) for g in range(2)]
    await wait_until(
        lambda: all(cluster.find_object("statefulsets", s) for s in statefulsets),
        "the StatefulSets",
    )
    for statefulset in statefulsets:
        statefulset_pods(cluster, statefulset)
    await wait_until(lambda: cluster_condition(kube, "Ready")[0] == "True", "the cluster Ready")
    await wait_until(
        lambda: conditions(cluster.find_object("topics", "jobs")).get("Ready", ("",))[0] == "True",
        "the topic Ready",
    )
    async with Producer("JobsProducer", namesrv.address) as producer:
        for i in range(20):
            await producer.send(Message("Jobs", b"job %d" % i))
    async with AdminClient(namesrv.address) as admin:  # W has read nothing yet
        await admin.reset_offset_by_timestamp("Jobs", "W", 0)

    cluster.patch_object("brokerclusters", CLUSTER, {"spec": {"brokers": {"groups": 1}}})
    await wait_until(
        lambda: cluster_condition(kube, "ScaleDownBlocked")[:2] == ("True", "ConsumerLag"),
        "the scale-down blocked by the lag",
    )
    blocked = cluster_condition(kube, "ScaleDownBlocked")[2]
    assert blocked.startswith("si-broker-1: waiting for consumers to drain it")
    assert "W has" in blocked
    assert "on Jobs" in blocked
    assert not await writable(namesrv, "si-broker-1")
    assert await writable(namesrv, "si-broker-0")
    assert cluster.find_object("statefulsets", "si-broker-1") is not None

    async with AdminClient(namesrv.address) as admin:  # W has read everything
        await admin.reset_offset_by_timestamp("Jobs", "W", -1)
    await wait_until(
        lambda: all(cluster.find_object(kind, "si-broker-1") is None for kind in GROUP_OBJECTS),
        "the retired group's objects removed",
    )
    assert cluster.find_object("persistentvolumeclaims", names.broker_claim(CLUSTER, 1, 0))
    await wait_until(
        lambda: cluster_condition(kube, "ScaleDownBlocked")[:2] == ("False", "NotBlocked"),
        "no longer blocked",
    )
    await wait_until(lambda: cluster_condition(kube, "Ready")[0] == "True", "Ready on one group")
    for plural, name in (("topics", "jobs"), ("consumergroups", "workers")):
        cluster.delete_object(plural, name)
    await wait_until(
        lambda: not cluster.list_objects("topics") and not cluster.list_objects("consumergroups"),
        "the finalizers released while the brokers still run",
    )
    cluster.delete_object("brokerclusters", CLUSTER)
