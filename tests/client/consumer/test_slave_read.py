"""``slaveReadEnable``: a consumer far behind is told to read from the slave, and the SDK
follows ``suggestWhichBrokerId`` there; a real master/slave pair on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from consuming import consume_until_all
from routes import wait_until_routed
from waiting import wait_until

from rocketkube.broker.app import BrokerApp
from rocketkube.client.producer.producer import Producer
from rocketkube.common.message.model import Message
from rocketkube.namesrv.app import NamesrvApp

StartBroker = Callable[..., Awaitable[BrokerApp]]


@pytest.mark.parametrize("slave_read", [True, False])
async def test_a_consumer_behind_the_memory_reads_from_the_slave_if_enabled(
    start_broker: StartBroker,
    namesrv: NamesrvApp,
    names: tuple[str, str],
    tmp_path: Path,
    slave_read: bool,
) -> None:
    topic, group = names
    # ratio 0: every read is "behind the memory", as a consumer with a large backlog
    settings = {"slave_read_enable": slave_read, "access_message_in_memory_max_ratio": 0}
    master = await start_broker(**settings)
    slave = await start_broker(broker_id=1, broker_role="SLAVE", **settings)
    async with Producer("SlaveReadProducer", namesrv.address, send_timeout=30.0) as producer:
        sent = [(await producer.send(Message(topic, b"s%02d" % i))).msg_id for i in range(40)]
    assert master.ctx is not None
    assert slave.ctx is not None
    master_ctx, slave_ctx = master.ctx, slave.ctx
    await wait_until(
        lambda: slave_ctx.store.commit_log_max_offset == master_ctx.store.commit_log_max_offset,
        "the slave caught up",
    )
    assert slave.slave_sync is not None
    await slave.slave_sync.sync_once(master.address)  # the topic, without waiting 10 s
    await wait_until_routed(namesrv.address, topic, {0, 1})

    offsets = tmp_path / "offsets"
    bodies = await consume_until_all(
        namesrv.address, group, topic, sent, offsets, pull_batch_size=4
    )
    assert bodies == [b"s%02d" % i for i in range(40)]
    if slave_read:
        # the first pull of each queue went to the master, the rest to the slave
        assert slave_ctx.stats.get_total > 0
        assert master_ctx.stats.get_total < 40
    else:
        assert slave_ctx.stats.get_total == 0
        assert master_ctx.stats.get_total == 40
    # offsets are committed to the master, wherever the messages were read
    committed = sum(max(master_ctx.offsets.query(group, topic, q), 0) for q in range(8))
    assert committed == 40
