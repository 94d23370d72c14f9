"""The admin readings a Topic's and a ConsumerGroup's pass take (``handlers.brokers``),
from a real name server and broker on 127.0.0.1: each master's entry for that topic or
group alone, nothing else of its tables, and a group whose master is not registered as
unknown."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rocketkube.broker.app import BrokerApp
from rocketkube.namesrv.app import NamesrvApp
from rocketkube.operator.api import names
from rocketkube.operator.handlers import brokers
from rocketkube.operator.plans import observed

StartBroker = Callable[..., Awaitable[BrokerApp]]
CLUSTER = "inv"


async def test_a_topic_pass_reads_its_own_entry_of_each_master(
    namesrv: NamesrvApp, start_broker: StartBroker
) -> None:
    broker = await start_broker(names.broker_name(CLUSTER, 0), broker_cluster_name=CLUSTER)
    async with brokers.connect(namesrv.address, CLUSTER, 2, 3.0) as admin:
        await admin.admin.create_topic(
            "InvTopic", broker_addr=broker.address, read_queue_nums=3, write_queue_nums=5,
            order=True,
        )  # fmt: skip
        found = await admin.topic_inventories(range(2), "InvTopic")
        absent = await admin.topic_inventories(range(1), "InvAbsent")
        everything = await admin.inventories(range(1))
    assert found == {
        0: observed.Inventory(topics={"InvTopic": observed.TopicState(3, 5, 6, True)}),
        1: None,  # no master registered as group 1: unknown
    }
    assert f"{names.broker_name(CLUSTER, 1)} is not registered" in admin.errors
    assert absent == {0: observed.Inventory()}
    whole = everything[0]
    assert whole is not None
    assert whole.topics["InvTopic"] == observed.TopicState(3, 5, 6, True)
    assert "TBW102" in whole.topics  # the cluster's pass still reads the whole tables


async def test_a_consumer_group_pass_reads_its_own_entry_of_each_master(
    namesrv: NamesrvApp, start_broker: StartBroker
) -> None:
    broker = await start_broker(names.broker_name(CLUSTER, 0), broker_cluster_name=CLUSTER)
    async with brokers.connect(namesrv.address, CLUSTER, 2, 3.0) as admin:
        for group, retries in (("InvGroup", 3), ("InvOther", 5)):
            await admin.admin.create_subscription_group(
                group, broker_addr=broker.address, retry_max_times=retries
            )
        found = await admin.group_inventories(range(2), "InvGroup")
        absent = await admin.group_inventories(range(1), "InvAbsent")
        everything = await admin.inventories(range(1))
    settings = observed.GroupSettings(retry_max_times=3)
    assert found == {0: observed.Inventory(consumer_groups={"InvGroup": settings}), 1: None}
    assert absent == {0: observed.Inventory()}
    whole = everything[0]
    assert whole is not None
    assert whole.consumer_groups["InvGroup"] == settings
    assert whole.consumer_groups["InvOther"].retry_max_times == 5
