"""The rolling update, the real operator under kopf against the emulated API server: a
spec change and then a ``rocketkube.io/restart`` annotation each roll every broker pod
one at a time, slaves before their master, group by group, each once the previous pod's
replacement is Ready; an operator stopped mid-roll and another started in its place
carries on from where the first was.

The test plays the StatefulSet controller and the kubelet: it recreates each deleted pod
from its StatefulSet's current template, not Ready at first, and marks it Ready once the
operator has reported waiting for it. Replication lag comes from real masters and slaves
of this process (two groups, a master and a slave each), through the admin API. Each
test runs its own operators (two in turn for the restart).
"""

from __future__ import annotations

from typing import Any

from kube_api import KubeApiServer
from operator_harness import (
    RunningOperator,
    StartBroker,
    condition,
    create_pod,
    mark_ready,
    operator_running,
    pod_from_template,
    resource,
    statefulset_pods,
)
from waiting import wait_until

from rocketkube.namesrv.app import NamesrvApp
from rocketkube.operator.api import names

CLUSTER = "rl"
ORDER = ["rl-broker-0-1", "rl-broker-0-0", "rl-broker-1-1", "rl-broker-1-0"]
"""Group by group, in each the slave before its master."""
ROLLS = "rocketkube_operator_roll_restarts_total"


def broker_pods(kube: KubeApiServer) -> dict[str, dict[str, Any]]:
    selector = ",".join(f"{k}={v}" for k, v in names.selector(CLUSTER, "broker").items())
    return {
        pod["metadata"]["name"]: pod
        for pod in kube.cluster.list_objects("pods", "default", selector)
    }


def progressing(kube: KubeApiServer) -> tuple[str, str, str]:
    return condition(kube.cluster, "brokerclusters", CLUSTER, "Progressing")


async def progress_says(kube: KubeApiServer, text: str) -> None:
    await wait_until(lambda: text in progressing(kube)[2], f"Progressing saying {text!r}")


async def ready_cluster(
    kube: KubeApiServer, operator: RunningOperator, namesrv: NamesrvApp, start_broker: StartBroker
) -> None:
    """Two groups of a master and a slave, brokers of this process, their pods Ready."""
    operator.addresses[CLUSTER] = namesrv.address
    for group in range(2):
        broker = names.broker_name(CLUSTER, group)
        await start_broker(broker, broker_cluster_name=CLUSTER)
        await start_broker(broker, broker_cluster_name=CLUSTER, broker_id=1, broker_role="SLAVE")
    cluster = kube.cluster
    spec = {"nameServers": {"replicas": 1}, "brokers": {"groups": 2, "replicasPerGroup": 2}}
    cluster.create_object(resource("BrokerCluster", CLUSTER, **spec))
    statefulsets = [names.namesrv(CLUSTER)] + [names.broker_group(CLUSTER, g) for g in range(2)]
    await wait_until(
        lambda: all(cluster.find_object("statefulsets", s) for s in statefulsets),
        "the StatefulSets",
    )
    for statefulset in statefulsets:
        statefulset_pods(cluster, statefulset)
    await wait_until(
        lambda: condition(cluster, "brokerclusters", CLUSTER)[0] == "True", "the cluster Ready"
    )


async def next_deleted(kube: KubeApiServer) -> str:
    """The pod the operator deletes next (only ever one away at once)."""
    await wait_until(lambda: len(broker_pods(kube)) < len(ORDER), "the next pod deleted")
    gone = sorted(set(ORDER) - set(broker_pods(kube)))
    assert len(gone) == 1, f"more than one pod away at once: {gone}"
    return gone[0]


def recreate(kube: KubeApiServer, pod: str, *, ready: bool) -> None:
    """The StatefulSet controller's part: ``pod`` again, from its set's current template."""
    statefulset, ordinal = pod.rsplit("-", 1)
    template = kube.cluster.get_object("statefulsets", statefulset)
    create_pod(kube.cluster, pod_from_template(template, int(ordinal), ready=ready))


async def restart_step(kube: KubeApiServer, step: int) -> str:
    """Play step ``step`` (from 1) of a roll: the pod the operator deleted comes back, not
    Ready until the operator waits for it; the pod."""
    pod = await next_deleted(kube)
    recreate(kube, pod, ready=False)
    # the roll waits for it; after the last one, only the pod itself is not Ready
    said = f"waiting for {pod} to be Ready" if step < len(ORDER) else f"{pod} not Ready"
    await progress_says(kube, said)
    assert len(broker_pods(kube)) == len(ORDER)
    mark_ready(kube.cluster, pod)
    return pod


async def roll_one_at_a_time(kube: KubeApiServer) -> list[str]:
    """Play the StatefulSet controller and kubelet through a roll; the pods the operator
    deleted, in order."""
    return [await restart_step(kube, step) for step in range(1, len(ORDER) + 1)]


async def delete_cluster(kube: KubeApiServer) -> None:
    kube.cluster.delete_object("brokerclusters", CLUSTER)
    await wait_until(lambda: not broker_pods(kube), "the cluster's pods gone with it")


async def test_rolls_restart_one_pod_at_a_time_slaves_first(
    kube: KubeApiServer, namesrv: NamesrvApp, start_broker: StartBroker
) -> None:
    cluster = kube.cluster
    async with operator_running(kube) as operator:
        await ready_cluster(kube, operator, namesrv, start_broker)
        old = {name: pod["metadata"]["annotations"] for name, pod in broker_pods(kube).items()}

        image = {"spec": {"image": "rocketkube/rocketkube:9"}}
        cluster.patch_object("brokerclusters", CLUSTER, image)
        assert await roll_one_at_a_time(kube) == ORDER
        await wait_until(lambda: progressing(kube)[:2] == ("False", "Idle"), "the roll done")
        hash_key = names.TEMPLATE_HASH_ANNOTATION
        for name, pod in broker_pods(kube).items():
            assert pod["metadata"]["annotations"][hash_key] != old[name][hash_key]
            assert pod["spec"]["containers"][0]["image"] == "rocketkube/rocketkube:9"
        assert operator.sample(ROLLS) == len(ORDER)

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
        assert operator.sample(ROLLS) == 2 * len(ORDER)
        await delete_cluster(kube)


async def test_an_operator_restarted_mid_roll_carries_on_where_it_was(
    kube: KubeApiServer, namesrv: NamesrvApp, start_broker: StartBroker
) -> None:
    """Two pods rolled, the third deleted: the operator stops; the third comes back and is
    Ready while none runs; the next operator restarts the fourth, and only it."""
    cluster = kube.cluster
    async with operator_running(kube) as first:
        await ready_cluster(kube, first, namesrv, start_broker)
        cluster.patch_object("brokerclusters", CLUSTER, {"spec": {"image": "rocketkube/x:2"}})
        rolled = [await restart_step(kube, step) for step in (1, 2)]
        rolled.append(await next_deleted(kube))
    assert rolled == ORDER[:3]
    assert first.sample(ROLLS) == 3
    recreate(kube, ORDER[2], ready=True)
    uids = {name: pod["metadata"]["uid"] for name, pod in broker_pods(kube).items()}

    async with operator_running(kube) as second:
        second.addresses[CLUSTER] = namesrv.address
        assert await restart_step(kube, 4) == ORDER[3]
        await wait_until(lambda: progressing(kube)[:2] == ("False", "Idle"), "the roll done")
        assert second.sample(ROLLS) == 1
        now = broker_pods(kube)
        assert {name: now[name]["metadata"]["uid"] for name in ORDER[:3]} == {
            name: uids[name] for name in ORDER[:3]
        }
        images = {pod["spec"]["containers"][0]["image"] for pod in now.values()}
        assert images == {"rocketkube/x:2"}
        await delete_cluster(kube)
