"""Scaling, the real operator under kopf against the emulated API server and real masters
of this process. Scale-in: the retiring group loses its write permission, the scale-down
is blocked (with the lag named) while a consumer group has messages left on it, and once
they are consumed its objects go; its volume claims stay (no ``deleteClaim``). An
operator stopped while a scale-in is blocked, or while a new group's pods start, and
another started in its place, carries on from there. Each test runs its own operators
and its own cluster."""

from __future__ import annotations

from typing import Any

from kube_api import KubeApiServer
from operator_harness import (
    RunningOperator,
    StartBroker,
    condition,
    operator_running,
    resource,
    statefulset_pods,
)
from waiting import wait_until

from rocketkube.broker.app import BrokerApp
from rocketkube.client.admin.client import AdminClient
from rocketkube.client.producer.producer import Producer
from rocketkube.common.message.model import Message
from rocketkube.common.protocol import permission
from rocketkube.namesrv.app import NamesrvApp
from rocketkube.operator.api import names

GROUP_OBJECTS = ("statefulsets", "services", "configmaps", "poddisruptionbudgets")


def claim(cluster: str, group: int) -> dict[str, Any]:
    """The store claim the group's StatefulSet controller would have made for pod 0."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": names.broker_claim(cluster, group, 0),
            "labels": names.labels(cluster, names.BROKER_COMPONENT, group),
        },
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


def cluster_condition(kube: KubeApiServer, name: str, type_: str) -> tuple[str, str, str]:
    return condition(kube.cluster, "brokerclusters", name, type_)


async def writable(namesrv: NamesrvApp, broker: str) -> bool:
    async with AdminClient(namesrv.address) as admin:
        route = await admin.topic_route(broker)
    return all(queue.perm & permission.PERM_WRITE for queue in route.queue_datas)


async def start_masters(
    name: str, groups: range, start_broker: StartBroker
) -> dict[int, BrokerApp]:
    return {
        group: await start_broker(names.broker_name(name, group), broker_cluster_name=name)
        for group in groups
    }


async def pods_ready(kube: KubeApiServer, name: str, groups: int) -> None:
    """The cluster's pods exist and are Ready, as its StatefulSets' controller and kubelet
    would have them once the operator created the sets; then the cluster is Ready."""
    cluster = kube.cluster
    statefulsets = [names.namesrv(name)] + [names.broker_group(name, g) for g in range(groups)]
    await wait_until(
        lambda: all(cluster.find_object("statefulsets", s) for s in statefulsets),
        "the StatefulSets",
    )
    for statefulset in statefulsets:
        statefulset_pods(cluster, statefulset)
    await wait_until(
        lambda: cluster_condition(kube, name, "Ready")[0] == "True", f"{name} Ready on {groups}"
    )


async def cluster_with_a_topic(
    kube: KubeApiServer, operator: RunningOperator, namesrv: NamesrvApp, name: str, groups: int
) -> None:
    """BrokerCluster ``name`` of one master per group, Topic Jobs (2 queues), Ready, and
    ConsumerGroup W."""
    operator.addresses[name] = namesrv.address
    cluster = kube.cluster
    spec = {"nameServers": {"replicas": 1}, "brokers": {"groups": groups, "replicasPerGroup": 1}}
    cluster.create_object(resource("BrokerCluster", name, **spec))
    cluster.create_object(resource("Topic", f"{name}-jobs", cluster=name, topicName="Jobs"))
    cluster.create_object(resource("ConsumerGroup", f"{name}-w", cluster=name, groupName="W"))
    await pods_ready(kube, name, groups)
    await wait_until(
        lambda: condition(cluster, "topics", f"{name}-jobs")[0] == "True", "the topic Ready"
    )


async def lagging_consumer(namesrv: NamesrvApp) -> None:
    """20 messages on Jobs that W has not read."""
    async with Producer("JobsProducer", namesrv.address) as producer:
        for i in range(20):
            await producer.send(Message("Jobs", b"job %d" % i))
    async with AdminClient(namesrv.address) as admin:
        await admin.reset_offset_by_timestamp("Jobs", "W", 0)


async def blocked_scale_in(kube: KubeApiServer, namesrv: NamesrvApp, name: str) -> None:
    """Scale ``name`` from two groups to one while W lags: blocked, the retiring group
    read-only."""
    kube.cluster.patch_object("brokerclusters", name, {"spec": {"brokers": {"groups": 1}}})
    await wait_until(
        lambda: cluster_condition(kube, name, "ScaleDownBlocked")[:2] == ("True", "ConsumerLag"),
        "the scale-down blocked by the lag",
    )
    blocked = cluster_condition(kube, name, "ScaleDownBlocked")[2]
    assert blocked.startswith(f"{name}-broker-1: waiting for consumers to drain it")
    assert "W has" in blocked
    assert "on Jobs" in blocked
    assert not await writable(namesrv, f"{name}-broker-1")
    assert await writable(namesrv, f"{name}-broker-0")
    assert kube.cluster.find_object("statefulsets", f"{name}-broker-1") is not None


async def drained_and_removed(kube: KubeApiServer, namesrv: NamesrvApp, name: str) -> None:
    """W reads everything; the retiring group goes, its claim stays."""
    cluster = kube.cluster
    async with AdminClient(namesrv.address) as admin:
        await admin.reset_offset_by_timestamp("Jobs", "W", -1)
    retired = f"{name}-broker-1"
    await wait_until(
        lambda: all(cluster.find_object(kind, retired) is None for kind in GROUP_OBJECTS),
        "the retired group's objects removed",
    )
    assert cluster.find_object("persistentvolumeclaims", names.broker_claim(name, 1, 0))
    await wait_until(
        lambda: cluster_condition(kube, name, "ScaleDownBlocked")[:2] == ("False", "NotBlocked"),
        "no longer blocked",
    )
    await wait_until(
        lambda: cluster_condition(kube, name, "Ready")[0] == "True", "Ready on one group"
    )


async def delete_everything(kube: KubeApiServer, name: str) -> None:
    """The Topic and ConsumerGroup (their finalizers released while the brokers still
    run), then the cluster."""
    cluster = kube.cluster
    for plural, resource_name in (("topics", f"{name}-jobs"), ("consumergroups", f"{name}-w")):
        cluster.delete_object(plural, resource_name)
    await wait_until(
        lambda: not cluster.list_objects("topics") and not cluster.list_objects("consumergroups"),
        "the finalizers released",
    )
    cluster.delete_object("brokerclusters", name)


async def test_scale_in_revokes_writes_waits_for_consumers_then_removes_the_group(
    kube: KubeApiServer, namesrv: NamesrvApp, start_broker: StartBroker
) -> None:
    await start_masters("si", range(2), start_broker)
    kube.cluster.create_object(claim("si", 1))
    async with operator_running(kube) as operator:
        await cluster_with_a_topic(kube, operator, namesrv, "si", 2)
        await lagging_consumer(namesrv)
        await blocked_scale_in(kube, namesrv, "si")
        await drained_and_removed(kube, namesrv, "si")
        await delete_everything(kube, "si")


async def test_an_operator_restarted_while_a_scale_in_is_blocked_carries_on(
    kube: KubeApiServer, namesrv: NamesrvApp, start_broker: StartBroker
) -> None:
    """The next operator neither gives the retiring group its writes back nor removes it
    early: it stays blocked until the consumer has caught up, then removes it."""
    await start_masters("sb", range(2), start_broker)
    kube.cluster.create_object(claim("sb", 1))
    async with operator_running(kube) as first:
        await cluster_with_a_topic(kube, first, namesrv, "sb", 2)
        await lagging_consumer(namesrv)
        await blocked_scale_in(kube, namesrv, "sb")

    async with operator_running(kube) as second:
        second.addresses["sb"] = namesrv.address
        passes = "rocketkube_operator_reconciles_total"
        await wait_until(
            lambda: second.sample(passes, kind="BrokerCluster", result="ok") >= 3,
            "a few passes of the new operator",
        )
        await blocked_scale_in(kube, namesrv, "sb")
        await drained_and_removed(kube, namesrv, "sb")
        await delete_everything(kube, "sb")


async def test_an_operator_restarted_while_a_new_group_starts_provisions_it(
    kube: KubeApiServer, namesrv: NamesrvApp, start_broker: StartBroker
) -> None:
    """Scale-out from one group to two: the first operator creates the new group's objects
    and stops before its pods run; the next one gives its master the topic and the consumer
    group, and the cluster is Ready on both."""
    masters = await start_masters("so", range(1), start_broker)
    async with operator_running(kube) as first:
        await cluster_with_a_topic(kube, first, namesrv, "so", 1)
        kube.cluster.patch_object("brokerclusters", "so", {"spec": {"brokers": {"groups": 2}}})
        await wait_until(
            lambda: kube.cluster.find_object("statefulsets", "so-broker-1") is not None,
            "the new group's StatefulSet",
        )
    masters |= await start_masters("so", range(1, 2), start_broker)
    added = masters[1].ctx
    assert added is not None
    assert added.topics.get("Jobs") is None

    async with operator_running(kube) as second:
        second.addresses["so"] = namesrv.address
        await pods_ready(kube, "so", 2)
        await wait_until(
            lambda: added.topics.get("Jobs") is not None and "W" in added.groups.table,
            "Jobs and W on the new group's master",
        )
        await wait_until(
            lambda: all(
                group.get("provisioned")
                for group in kube.cluster.get_object("brokerclusters", "so")["status"]["groups"]
            ),
            "both groups provisioned",
        )
        assert cluster_condition(kube, "so", "Ready")[0] == "True"
        await delete_everything(kube, "so")
