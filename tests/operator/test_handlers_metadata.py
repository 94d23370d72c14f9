"""The Topic and ConsumerGroup handlers, the real operator under kopf against the emulated
API server, talking to a real name server and broker on 127.0.0.1 through the admin API.

Each test runs its own name server and broker (group 0 of a one-group cluster named for
the test) and marks the cluster's pods Ready in the emulator, as a kubelet would: the
pods do not really run, the broker in this process stands for the group's master.
"""

from __future__ import annotations

import datetime
from typing import Any

from kube_api import KubeApiServer
from operator_harness import (
    UNREACHABLE,
    RunningOperator,
    StartBroker,
    conditions,
    events_of,
    resource,
    statefulset_pods,
)
from waiting import wait_until

from rocketkube.broker.app import BrokerApp
from rocketkube.client.admin.client import AdminClient
from rocketkube.client.producer.producer import Producer
from rocketkube.common.message.model import Message
from rocketkube.namesrv.app import NamesrvApp
from rocketkube.operator.api import names


def get(kube: KubeApiServer, plural: str, name: str) -> dict[str, Any] | None:
    return kube.cluster.find_object(plural, name)


def condition(kube: KubeApiServer, plural: str, name: str, type_: str = "Ready") -> tuple[str, ...]:
    return conditions(get(kube, plural, name)).get(type_, ("", "", ""))


def status(kube: KubeApiServer, plural: str, name: str) -> dict[str, Any]:
    return dict((get(kube, plural, name) or {}).get("status") or {})


async def ready_cluster(
    kube: KubeApiServer,
    operator: RunningOperator,
    namesrv: NamesrvApp,
    start_broker: StartBroker,
    name: str,
) -> BrokerApp:
    """A one-group cluster whose master is a broker of this process, Ready."""
    operator.addresses[name] = namesrv.address
    broker = await start_broker(names.broker_name(name, 0), broker_cluster_name=name)
    spec = {"nameServers": {"replicas": 1}, "brokers": {"groups": 1, "replicasPerGroup": 1}}
    kube.cluster.create_object(resource("BrokerCluster", name, **spec))
    cluster = kube.cluster
    for statefulset in (names.namesrv(name), names.broker_group(name, 0)):
        await found(kube, "statefulsets", statefulset)
        statefulset_pods(cluster, statefulset)
    await wait_until(
        lambda: condition(kube, "brokerclusters", name)[0] == "True", f"cluster {name} Ready"
    )
    return broker


async def found(kube: KubeApiServer, plural: str, name: str, present: bool = True) -> None:
    """Wait until ``name`` exists (or, not ``present``, is gone)."""
    what = f"{plural} {name} {'created' if present else 'gone'}"
    await wait_until(lambda: (get(kube, plural, name) is not None) == present, what)


async def delete_all(kube: KubeApiServer, name: str, *plurals: str) -> None:
    """Delete resources and wait until the operator released them."""
    for plural in plurals:
        kube.cluster.delete_object(plural, name)
    for plural in plurals:
        await found(kube, plural, name, present=False)


async def test_a_topic_is_created_grown_repaired_and_deleted(
    kube: KubeApiServer,
    operator: RunningOperator,
    namesrv: NamesrvApp,
    start_broker: StartBroker,
) -> None:
    broker = await ready_cluster(kube, operator, namesrv, start_broker, "tp")
    assert broker.ctx is not None
    topics = broker.ctx.topics
    kube.cluster.create_object(
        resource("Topic", "orders", cluster="tp", topicName="Orders", queues=4)
    )
    await wait_until(lambda: condition(kube, "topics", "orders")[0] == "True", "Orders Ready")
    assert condition(kube, "topics", "orders")[1:] == ("Reconciled", "routed on 1 broker group")
    created = topics.get("Orders")
    assert created is not None
    assert (created.read_queue_nums, created.write_queue_nums, created.perm) == (4, 4, 6)
    shown = status(kube, "topics", "orders")
    assert shown["groups"] == [{"brokerName": "tp-broker-0", "readQueues": 4, "writeQueues": 4}]
    assert (shown["topicName"], shown["queues"]) == ("Orders", 4)
    assert shown["lastChecked"].endswith("Z")

    kube.cluster.patch_object("topics", "orders", {"spec": {"queues": 8}})
    await wait_until(
        lambda: status(kube, "topics", "orders").get("groups", [{}])[0].get("readQueues") == 8,
        "the status showing 8 queues",
    )
    grown = topics.get("Orders")
    assert grown is not None
    assert (grown.read_queue_nums, grown.write_queue_nums) == (8, 8)

    async with AdminClient(namesrv.address) as admin:
        await admin.delete_topic("Orders", "tp")
    await wait_until(lambda: topics.get("Orders") is not None, "Orders recreated")
    await wait_until(
        lambda: any(e[1] == "DriftRepaired" for e in events_of(kube.cluster, "Topic", "orders")),
        "the drift Event",
    )
    drift = next(e for e in events_of(kube.cluster, "Topic", "orders") if e[1] == "DriftRepaired")
    assert drift[0] == "Warning"
    assert "topic Orders deleted on tp-broker-0 behind the operator's back" in drift[2]
    assert operator.sample("rocketkube_operator_drift_repairs_total", kind="Topic") >= 1

    operator.addresses["tp"] = UNREACHABLE  # as if the brokers stopped answering
    await wait_until(
        lambda: (
            condition(kube, "brokerclusters", "tp", "Degraded")[:2] == ("True", "AdminUnreachable")
        ),
        "the cluster Degraded while its brokers are unreachable",
    )
    await wait_until(
        lambda: condition(kube, "topics", "orders")[0] == "False", "the topic no longer Ready"
    )
    operator.addresses["tp"] = namesrv.address
    await wait_until(lambda: condition(kube, "topics", "orders")[0] == "True", "Ready again")
    assert condition(kube, "brokerclusters", "tp", "Degraded")[:2] == ("False", "Healthy")

    await delete_all(kube, "orders", "topics")
    assert topics.get("Orders") is None
    await wait_until(lambda: "Orders" not in namesrv.routes.topic_queue_table, "route gone")
    await delete_all(kube, "tp", "brokerclusters")


def checked_at(obj: dict[str, Any]) -> datetime.datetime:
    return datetime.datetime.fromisoformat(obj["status"]["lastChecked"].replace("Z", "+00:00"))


def status_of(obj: dict[str, Any]) -> dict[str, Any]:
    """The status but for ``lastChecked``."""
    return {k: v for k, v in (obj.get("status") or {}).items() if k != "lastChecked"}


async def test_passes_that_find_a_topic_as_it_was_do_not_rewrite_it(
    kube: KubeApiServer,
    operator: RunningOperator,
    namesrv: NamesrvApp,
    start_broker: StartBroker,
) -> None:
    """``lastChecked`` is written at most once a minute while nothing else changes: the
    timer's passes over a settled Topic do not rewrite its status."""
    await ready_cluster(kube, operator, namesrv, start_broker, "qt")
    kube.cluster.create_object(resource("Topic", "quiet", cluster="qt", queues=2))
    await wait_until(lambda: condition(kube, "topics", "quiet")[0] == "True", "quiet Ready")
    passes = "rocketkube_operator_reconciles_total"
    await wait_until(
        lambda: status(kube, "topics", "quiet").get("observedGeneration") == 1, "settled"
    )
    await wait_until(lambda: kopf_done(get(kube, "topics", "quiet")), "kopf done with it")
    before = get(kube, "topics", "quiet") or {}
    counted = operator.sample(passes, kind="Topic", result="ok")
    await wait_until(
        lambda: operator.sample(passes, kind="Topic", result="ok") >= counted + 4,
        "a few more passes",
    )
    after = get(kube, "topics", "quiet") or {}
    # A loaded machine may see a real change (a condition after a slow answer), and kopf
    # keeps its own notes on the object; what the passes must never do is write
    # ``lastChecked`` again within the minute while nothing else of the status changed.
    written = [checked_at(obj) for obj in (before, after)]
    if written[0] != written[1] and status_of(after) == status_of(before):
        assert written[1] - written[0] >= datetime.timedelta(seconds=60), written
    await delete_all(kube, "quiet", "topics")
    await delete_all(kube, "qt", "brokerclusters")


def kopf_done(obj: dict[str, Any] | None) -> bool:
    """kopf has handled the object's last change (its creation): it recorded what it
    handled and keeps no handler's progress (a retried handler's) any more."""
    annotations = ((obj or {}).get("metadata") or {}).get("annotations") or {}
    handled = "rocketkube.io/last-handled-configuration" in annotations
    return handled and "rocketkube.io/topics-changed" not in annotations


async def test_an_unmanaged_topic_stays_on_the_brokers(
    kube: KubeApiServer,
    operator: RunningOperator,
    namesrv: NamesrvApp,
    start_broker: StartBroker,
) -> None:
    broker = await ready_cluster(kube, operator, namesrv, start_broker, "um")
    assert broker.ctx is not None
    topics = broker.ctx.topics
    kube.cluster.create_object(resource("Topic", "kept", cluster="um", queues=2))
    await wait_until(lambda: condition(kube, "topics", "kept")[0] == "True", "kept Ready")

    kube.cluster.patch_object("topics", "kept", {"spec": {"managed": False, "queues": 4}})
    await wait_until(
        lambda: condition(kube, "topics", "kept")[:2] == ("Unknown", "Unmanaged"), "Unmanaged"
    )
    await delete_all(kube, "kept", "topics")
    kept = topics.get("kept")
    assert kept is not None
    assert kept.read_queue_nums == 2
    await delete_all(kube, "um", "brokerclusters")


async def test_broker_groups_the_cluster_lacks_are_reported(
    kube: KubeApiServer,
    operator: RunningOperator,
    namesrv: NamesrvApp,
    start_broker: StartBroker,
) -> None:
    broker = await ready_cluster(kube, operator, namesrv, start_broker, "bg")
    assert broker.ctx is not None
    kube.cluster.create_object(resource("Topic", "wide", cluster="bg", brokerGroups=[0, 3]))
    await wait_until(
        lambda: condition(kube, "topics", "wide", "Degraded")[:2] == ("True", "InvalidSpec"),
        "Degraded: InvalidSpec",
    )
    assert (
        "brokerGroups lists 3, past the cluster's groups"
        in (condition(kube, "topics", "wide", "Degraded")[2])
    )
    await wait_until(lambda: condition(kube, "topics", "wide")[0] == "True", "Ready on group 0")
    assert broker.ctx.topics.get("wide") is not None
    await wait_until(
        lambda: (
            ("Warning", "InvalidSpec") in {e[:2] for e in events_of(kube.cluster, "Topic", "wide")}
        ),
        "the InvalidSpec Event",
    )
    await delete_all(kube, "wide", "topics")
    await delete_all(kube, "bg", "brokerclusters")


async def test_a_consumer_group_is_created_and_shows_its_lag(
    kube: KubeApiServer,
    operator: RunningOperator,
    namesrv: NamesrvApp,
    start_broker: StartBroker,
) -> None:
    broker = await ready_cluster(kube, operator, namesrv, start_broker, "cg")
    assert broker.ctx is not None
    groups = broker.ctx.groups
    cluster = kube.cluster
    cluster.create_object(resource("Topic", "bills", cluster="cg", topicName="Bills", queues=2))
    cluster.create_object(
        resource("ConsumerGroup", "billing", cluster="cg", groupName="Billing", retryMaxTimes=3)
    )
    await wait_until(lambda: condition(kube, "consumergroups", "billing")[0] == "True", "Ready")
    held = groups.table.get("Billing")
    assert held is not None
    assert held.retry_max_times == 3
    assert status(kube, "consumergroups", "billing")["brokers"] == ["cg-broker-0"]
    await wait_until(lambda: condition(kube, "topics", "bills")[0] == "True", "Bills Ready")

    async with Producer("BillsProducer", namesrv.address) as producer:
        for i in range(7):
            await producer.send(Message("Bills", b"bill %d" % i))
    async with AdminClient(namesrv.address) as admin:  # offsets at the start: nobody reads
        await admin.reset_offset_by_timestamp("Bills", "Billing", 0)
    await wait_until(
        lambda: status(kube, "consumergroups", "billing").get("totalLag") == 7, "lag 7 in status"
    )
    assert status(kube, "consumergroups", "billing")["lag"] == [{"topic": "Bills", "lag": 7}]

    await delete_all(kube, "billing", "consumergroups")
    assert groups.table.get("Billing") is None
    await delete_all(kube, "bills", "topics")
    await delete_all(kube, "cg", "brokerclusters")


async def test_a_topic_of_a_missing_cluster_waits(
    kube: KubeApiServer, operator: RunningOperator
) -> None:
    kube.cluster.create_object(resource("Topic", "lost", cluster="nowhere"))
    await wait_until(
        lambda: condition(kube, "topics", "lost")[:2] == ("False", "ClusterNotFound"),
        "ClusterNotFound",
    )
    assert "BrokerCluster nowhere not found" in condition(kube, "topics", "lost")[2]
    kube.cluster.create_object(resource("ConsumerGroup", "lost", cluster="nowhere"))
    await wait_until(
        lambda: condition(kube, "consumergroups", "lost")[:2] == ("False", "ClusterNotFound"),
        "ClusterNotFound",
    )
    await delete_all(kube, "lost", "topics", "consumergroups")
