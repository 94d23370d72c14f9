"""The operator's end-to-end scenario (issue 25): the real operator, the real kubectl and
real brokers in pods, one cluster's life from ``kubectl apply`` to ``kubectl delete``.

One of each for the module: the emulated API server (``kube_api``); the kubelet harness
(``kubelet``), which runs every pod the operator's StatefulSets make as a real
``rocketkube`` process in a network namespace of its own on a bridge; and the operator
under kopf in a thread (``operator_harness``). The test's applications (the SDK's
producer and push consumer) and the operator run on the host, outside the pods, and
reach the pods' IPs over the bridge; nothing leaves the bridge and the namespaces the run
made. The names of what the scenario applies, the :class:`Play` every step gets and the
probes the steps wait on are in ``tests/support/e2e_play.py``.

How the host finds the name servers: the cluster's ``status.nameServerAddress`` holds
the name server pods' DNS names, which only the pods' hosts files resolve. The operator
runs on the host with an address function that resolves them through the harness's view
of cluster DNS (``e2e_cluster.resolve``: the records the hosts files are written from)
at every pass; the applications resolve them the same way when they start, and the
producer of step 6 again whenever the answer changes (the name servers roll too), as a
client in the cluster resolving the names anew on reconnecting would.

The steps, each with its conditions asserted; a step that fails shows the resources'
conditions, the pods, the latest Events and the tail of every pod's log:

1. ``kubectl apply`` the CRDs, then the README's examples (2 name servers, 2 broker
   groups of a master and a slave, a Topic of 8 queues, a ConsumerGroup) with small
   store files: all three Ready for their generation.
2. 10,000 messages sent, all received by a push consumer of the group; its lag 0.
3. The Topic grown to 16 queues: routed with 16 on each group.
4. Scaled out to 3 groups: the new group's pods run and hold the topic and the group.
5. A master's process SIGKILLed: sends go to the other groups, a consumer reads what the
   killed group holds from its slave; the master comes back, catches up, Ready again.
   The test holds the killed master's store lock (the flock of its ``lock`` file, taken
   as the process dies) so its restarts fail until the consumer is done: "meanwhile" is
   then a fact, not a race against the restart.
6. A new image tag: the operator rolls the broker pods one at a time, slaves before their
   master, while a producer keeps sending (SYNC sends, a failed one retried); every
   acknowledged message is consumed afterwards (duplicates allowed: at-least-once).
7. Scaled in to 2 groups while the group has messages left on group 2: ScaleDownBlocked
   names the lag; once consumed, the group is removed and its volume claims kept.
8. The Topic deleted (gone from brokers and routes), then the cluster (its objects
   collected, its pods stopped).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import yaml
from e2e_clients import SteadyProducer, consume, send_all
from e2e_cluster import PodHistory, Scene, pod_ready, resolve
from e2e_play import (
    CLUSTER,
    GROUP,
    GROUP_KINDS,
    GROUP_OBJECT,
    LIGHT,
    NAMESPACE,
    NAMESRV_PODS,
    NEW_IMAGE,
    ROLL_ORDER,
    TOPIC,
    TOPIC_OBJECT,
    Play,
    broker,
    caught_up,
    group_pods,
    killed_and_held,
    master_of,
    queues_shown,
    rolled,
    routes,
    run,
    slave_ready_to_serve,
    topic_gone,
    writable,
)
from kube_api import KubeApiServer, running_kube_api
from kubelet import KubeletOptions, RunningKubelet, Unavailable, running_kubelet
from kubelet_container import Backoff
from operator_harness import Kubectl, RunningOperator, running_operator

from rocketkube.operator.api import names

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl"),
]

CHECKOUT = Path(__file__).resolve().parents[2]
EXAMPLES = CHECKOUT / "examples" / "kubernetes"


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiServer]:
    with running_kube_api(tmp_path_factory.mktemp("kube") / "kubeconfig") as server:
        yield server


@pytest.fixture(scope="module")
def kubectl(kube: KubeApiServer, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    """The real kubectl, once it applied the CRDs and the namespace."""
    tool = Kubectl(kube, tmp_path_factory.mktemp("kubectl"))
    run(tool, "apply", "-f", str(CHECKOUT / "crds"))
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    run(tool, "apply", "-f", "-", stdin=json.dumps(namespace))
    return tool


@pytest.fixture(scope="module")
def harness(
    kube: KubeApiServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningKubelet]:
    """Probes every half second at most, short back-offs: a few seconds a step."""
    options = KubeletOptions(
        workdir=tmp_path_factory.mktemp("kubelet"), probe_period_cap=0.5,
        backoff=Backoff(base=0.5, limit=2.0), teardown_grace=5.0,
    )  # fmt: skip
    with contextlib.ExitStack() as stack:
        try:
            running = stack.enter_context(running_kubelet(kube.cluster, options))
        except Unavailable as error:
            pytest.skip(str(error))
        yield running


@pytest.fixture(scope="module")
def operator(
    kube: KubeApiServer, kubectl: Kubectl, harness: RunningKubelet
) -> Iterator[RunningOperator]:
    """The operator, finding name servers by their DNS names through the harness's DNS."""

    def address_of(cluster: str, namespace: str, replicas: int) -> str:
        return resolve(kube.cluster, names.namesrv_address(cluster, namespace, replicas))

    with running_operator(kube, with_crds=False, resolve=address_of) as running:
        yield running


async def test_a_cluster_from_apply_to_delete(
    kube: KubeApiServer,
    kubectl: Kubectl,
    harness: RunningKubelet,
    operator: RunningOperator,
    tmp_path: Path,
) -> None:
    workdir = harness.kubelet.options.workdir
    play = Play(Scene(kube.cluster, harness, NAMESPACE, workdir), kubectl, tmp_path)
    steps: list[tuple[str, Callable[[Play], Awaitable[None]]]] = [
        ("1 apply the CRDs and the examples", apply_examples),
        ("2 send and receive 10,000 messages", send_and_receive),
        ("3 grow the topic to 16 queues", grow_topic),
        ("4 scale out to 3 groups", scale_out),
        ("5 SIGKILL a master", kill_a_master),
        ("6 roll to a new image", roll_new_image),
        ("7 scale in to 2 groups", scale_in),
        ("8 delete the topic and the cluster", delete_all),
    ]
    with play.scene.logging():
        for title, step in steps:
            started = time.monotonic()
            async with play.scene.step(title):
                await step(play)
            print(f"step {title}: {time.monotonic() - started:.1f} s")


# -- 1 -------------------------------------------------------------------------------------


async def apply_examples(play: Play) -> None:
    mark = play.scene.log.mark()
    cluster = yaml.safe_load((EXAMPLES / "cluster.yaml").read_text(encoding="utf-8"))
    cluster["spec"]["brokers"]["properties"].update(LIGHT)
    play.kubectl_ok("apply", "-f", "-", stdin=yaml.safe_dump(cluster))
    play.kubectl_ok(
        "apply", "-f", str(EXAMPLES / "topic.yaml"), "-f", str(EXAMPLES / "consumer-group.yaml")
    )
    await play.settled("brokerclusters", CLUSTER, timeout=90)
    for kind, name in (("topics", TOPIC_OBJECT), ("consumergroups", GROUP_OBJECT)):
        await play.settled(kind, name)
    status = play.status("brokerclusters", CLUSTER)
    assert status["readyGroups"] == "2/2"
    assert status["nameServerAddress"] == names.namesrv_address(CLUSTER, NAMESPACE, 2)
    shown = [
        (g["brokerName"], [(p["name"], p["role"], p["ready"]) for p in g["pods"]])
        for g in status["groups"]
    ]
    roles = [("MASTER", True), ("SLAVE", True)]
    assert shown == [
        (broker(g), [(pod, *role) for pod, role in zip(group_pods(g), roles, strict=True)])
        for g in range(2)
    ]
    assert [play.cluster(t) for t in ("Progressing", "Degraded", "ScaleDownBlocked")] == [
        ("False", "Idle"), ("False", "Healthy"), ("False", "NotBlocked")
    ]  # fmt: skip
    phases = {name: pod["status"]["phase"] for name, pod in play.scene.pods().items()}
    assert phases == dict.fromkeys([*NAMESRV_PODS, *group_pods(0), *group_pods(1)], "Running")
    assert queues_shown(play) == {broker(g): (8, 8) for g in range(2)}
    assert play.status("consumergroups", GROUP_OBJECT)["brokers"] == [broker(0), broker(1)]
    listed = play.kubectl_ok("get", "brokerclusters,topics,consumergroups")
    assert re.search(rf"{CLUSTER}\s+2\s+2\s+2/2\s+True", listed), listed
    assert ("True", "Creating") in play.seen(mark, "Progressing")
    waited = play.seen(mark, "Ready", "topics", TOPIC_OBJECT)
    assert waited[0] == ("False", "ClusterNotReady"), waited


# -- 2 -------------------------------------------------------------------------------------


async def send_and_receive(play: Play) -> None:
    keys = [f"first-{n}" for n in range(10_000)]
    results = await send_all(play.namesrv(), "E2EFirst", TOPIC, keys)
    assert {r.queue.broker_name for r in results.values()} == {broker(0), broker(1)}
    assert {r.queue.queue_id for r in results.values()} == set(range(8))
    received = await consume(play.namesrv(), GROUP, TOPIC, keys, play.offsets)
    assert received.times.keys() == set(keys)
    await play.scene.until(
        lambda: play.status("consumergroups", GROUP_OBJECT).get("totalLag") == 0,
        "the ConsumerGroup's lag 0",
    )
    print(f"10,000 messages: {received.duplicates} received twice")


# -- 3 -------------------------------------------------------------------------------------


async def grow_topic(play: Play) -> None:
    mark = play.scene.log.mark()
    play.patch("topic", TOPIC_OBJECT, {"queues": 16})
    await play.settled("topics", TOPIC_OBJECT)
    assert play.status("topics", TOPIC_OBJECT)["queues"] == 16
    assert queues_shown(play) == {broker(g): (16, 16) for g in range(2)}
    assert await routes(play) == {broker(g): (16, 16) for g in range(2)}
    assert ("True", "Updating") in play.seen(mark, "Progressing", "topics", TOPIC_OBJECT)


# -- 4 -------------------------------------------------------------------------------------


async def scale_out(play: Play) -> None:
    scene = play.scene
    mark = scene.log.mark()
    play.patch("brokercluster", CLUSTER, {"brokers": {"groups": 3}})
    await scene.until(
        lambda: (
            scene.settled("brokerclusters", CLUSTER)
            and play.status("brokerclusters", CLUSTER)["readyGroups"] == "3/3"
        ),
        "Ready on 3 groups",
        timeout=90,
    )
    pods = scene.pods()
    assert [pods[name]["status"]["phase"] for name in group_pods(2)] == ["Running"] * 2
    await scene.until(lambda: len(queues_shown(play)) == 3, "the Topic showing the new group")
    await play.settled("topics", TOPIC_OBJECT)
    assert queues_shown(play) == {broker(g): (16, 16) for g in range(3)}
    assert await routes(play) == {broker(g): (16, 16) for g in range(3)}
    async with play.admin() as admin:
        assert GROUP in await admin.subscription_groups(await master_of(admin, 2))
    assert ("True", "ScalingOut") in play.seen(mark, "Progressing")
    await play.event("BrokerCluster", CLUSTER, "Provisioned", count=3)
    # a planned scale-out is no fault of the topic or the group
    for kind, name in (("topics", TOPIC_OBJECT), ("consumergroups", GROUP_OBJECT)):
        degraded = scene.log.since(mark, kind, name, "Degraded")
        assert not [seen for seen in degraded if seen.status == "True"], degraded


# -- 5 -------------------------------------------------------------------------------------


async def kill_a_master(play: Play) -> None:
    scene = play.scene
    master, slave = group_pods(0)
    before = await send_all(play.namesrv(), "E2EBefore", TOPIC, [f"kill-{n}" for n in range(300)])
    on_killed = {k for k, r in before.items() if r.queue.broker_name == broker(0)}
    assert on_killed
    await scene.value(
        lambda: slave_ready_to_serve(play, 0),
        "the slave holding every message, the topic and the group",
    )
    uid = scene.pods()[master]["metadata"]["uid"]
    async with killed_and_held(play, master):
        await scene.until(
            lambda: (
                play.cluster("Ready") == ("False", "PodsNotReady")
                and master in scene.condition("brokerclusters", CLUSTER, "Ready")[2]
            ),
            "the cluster not Ready, naming the killed master",
        )
        keys = [f"down-{n}" for n in range(300)]
        during = await send_all(play.namesrv(), "E2EDuring", TOPIC, keys)
        assert broker(0) not in {r.queue.broker_name for r in during.values()}
        received = await consume(play.namesrv(), GROUP, TOPIC, [*before, *during], play.offsets)
        assert {key for key, got in received.brokers.items() if broker(0) in got} >= on_killed
        # read while its master was down, so from its slave
        assert not pod_ready(scene.pods()[master])
        assert pod_ready(scene.pods()[slave])

    def back() -> bool:
        found = scene.pods().get(master)
        if found is None or found["metadata"]["uid"] != uid:
            return False
        (container,) = found["status"]["containerStatuses"]
        return bool(container["ready"]) and container["restartCount"] >= 1

    await scene.until(back, "the master restarted in its pod, Ready")
    await scene.value(lambda: caught_up(play, 0), "the slave caught up")
    await play.settled("brokerclusters", CLUSTER)
    assert play.cluster("Degraded") == ("False", "Healthy")
    assert play.status("brokerclusters", CLUSTER)["readyGroups"] == "3/3"


# -- 6 -------------------------------------------------------------------------------------


async def roll_new_image(play: Play) -> None:
    scene = play.scene
    mark = scene.log.mark()
    history, changes, stop_log = PodHistory.recording(scene.cluster, NAMESPACE, ROLL_ORDER)
    producer = SteadyProducer(play.namesrv, "E2ERoll", TOPIC, "roll")
    stop = asyncio.Event()
    sending = asyncio.create_task(producer.run(stop))
    try:
        began = time.monotonic()
        play.patch("brokercluster", CLUSTER, {"image": NEW_IMAGE})
        await scene.until(lambda: rolled(play), "every pod rolled to the new image", 180)
        ended = time.monotonic()
    finally:
        stop.set()
        stop_log()
        await sending
    deletions = history.replay(changes)
    assert [d.pod for d in deletions] == ROLL_ORDER
    assert [d for d in deletions if d.away] == [], "a pod deleted while another was away"
    during = [at for at in producer.acked_at if began < at < ended]
    assert during, f"nothing acknowledged during the roll: {producer.failures[-5:]}"
    assert ("True", "Rolling") in play.seen(mark, "Progressing")
    assert ("False", "PodsNotReady") in play.seen(mark, "Ready")
    await play.event("BrokerCluster", CLUSTER, "PodRestarted", count=len(ROLL_ORDER))
    received = await consume(play.namesrv(), GROUP, TOPIC, producer.acked, play.offsets)
    print(
        f"roll: {len(producer.acked)} acknowledged, {len(producer.failures)} failed attempts,"
        f" {producer.producers} producers, {received.duplicates} received twice"
    )


# -- 7 -------------------------------------------------------------------------------------


async def scale_in(play: Play) -> None:
    scene = play.scene
    mark = scene.log.mark()
    keys = [f"lag-{n}" for n in range(600)]
    results = await send_all(play.namesrv(), "E2ELag", TOPIC, keys)
    on_leaving = [k for k, r in results.items() if r.queue.broker_name == broker(2)]
    assert on_leaving
    play.patch("brokercluster", CLUSTER, {"brokers": {"groups": 2}})
    await scene.until(
        lambda: play.cluster("ScaleDownBlocked") == ("True", "ConsumerLag"),
        "the scale-down blocked by the lag",
    )
    blocked = scene.condition("brokerclusters", CLUSTER, "ScaleDownBlocked")[2]
    assert blocked.startswith(f"{broker(2)}: waiting for consumers to drain it"), blocked
    lag = re.search(rf"{GROUP} has (\d+) on {TOPIC}", blocked)
    assert lag is not None, blocked
    assert int(lag.group(1)) >= len(on_leaving), blocked
    async with play.admin() as admin:
        assert [await writable(admin, g) for g in range(3)] == [True, True, False]
    assert all(scene.get(kind, names.broker_group(CLUSTER, 2)) for kind in GROUP_KINDS)

    await consume(play.namesrv(), GROUP, TOPIC, keys, play.offsets)
    await scene.until(
        lambda: (
            not any(scene.get(kind, names.broker_group(CLUSTER, 2)) for kind in GROUP_KINDS)
            and not set(group_pods(2)) & set(scene.pods())
        ),
        "group 2's objects and pods gone",
    )
    await scene.until(
        lambda: (
            play.cluster("ScaleDownBlocked") == ("False", "NotBlocked")
            and scene.settled("brokerclusters", CLUSTER)
        ),
        "no longer blocked, Ready",
    )
    assert play.status("brokerclusters", CLUSTER)["readyGroups"] == "2/2"
    for pod in group_pods(2):
        claim = scene.get("persistentvolumeclaims", f"{names.STORE_VOLUME}-{pod}")
        assert claim is not None, f"the claim of {pod} kept (deleteClaim false)"
    assert ("True", "ScalingIn") in play.seen(mark, "Progressing")
    assert play.seen(mark, "ScaleDownBlocked") == [("True", "ConsumerLag"), ("False", "NotBlocked")]
    for reason in ("WritePermissionRevoked", "BrokerGroupRemoved"):
        await play.event("BrokerCluster", CLUSTER, reason)


# -- 8 -------------------------------------------------------------------------------------


async def delete_all(play: Play) -> None:
    scene = play.scene
    async with play.admin() as admin:
        masters = [await master_of(admin, g) for g in range(2)]
    play.kubectl_ok("delete", "topic", TOPIC_OBJECT, "--wait=false")
    await scene.until(lambda: scene.get("topics", TOPIC_OBJECT) is None, "the Topic gone")
    await scene.value(lambda: topic_gone(play), "the topic gone from the routes")
    async with play.admin() as admin:
        for master in masters:
            assert TOPIC not in await admin.topic_configs(master)
    await play.event("Topic", TOPIC_OBJECT, "Deleted")

    play.kubectl_ok("delete", "brokercluster", CLUSTER, "--wait=false")
    selector = f"{names.CLUSTER_LABEL}={CLUSTER}"
    await scene.until(
        lambda: (
            scene.get("brokerclusters", CLUSTER) is None
            and not any(
                scene.cluster.list_objects(kind, NAMESPACE, selector)
                for kind in ("pods", *GROUP_KINDS)
            )
        ),
        "the cluster and its objects gone, its pods stopped",
    )
    for pod in [*NAMESRV_PODS, *group_pods(0), *group_pods(1)]:
        with pytest.raises(LookupError):
            scene.harness.pid(pod, NAMESPACE)
    await scene.until(
        lambda: (
            scene.condition("consumergroups", GROUP_OBJECT, "Ready")[:2]
            == ("False", "ClusterNotFound")
        ),
        "the ConsumerGroup waiting for its cluster",
    )
    play.kubectl_ok("delete", "consumergroup", GROUP_OBJECT, "--wait=false")
    await scene.until(lambda: scene.get("consumergroups", GROUP_OBJECT) is None, "its removal")
