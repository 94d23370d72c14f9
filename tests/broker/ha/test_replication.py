"""Master/slave replication over real sockets: a slave copies what the master stores,
serves it to consumers, resumes after a restart and takes the master's metadata; a
SYNC_MASTER answers sends once a slave has them."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from waiting import wait_until

from rocketkube.broker.app import BrokerApp
from rocketkube.broker.ha import wire
from rocketkube.common.message import record
from rocketkube.common.message.properties import encode_properties
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

TOPIC = "ReplicatedTopic"

StartBroker = Callable[..., Awaitable[BrokerApp]]


def send(body: bytes) -> RemotingCommand:
    properties = encode_properties({"TAGS": "T", "KEYS": body.decode(), "WAIT": "true"})
    fields = {"a": "ReplicaProducer", "b": TOPIC, "c": "TBW102", "d": "4", "e": "0", "f": "0",
              "g": "1700000000000", "h": "0", "i": properties, "j": "0", "k": "false"}  # fmt: skip
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, fields, body)


def stored_bodies(app: BrokerApp) -> list[bytes]:
    assert app.ctx is not None
    store = app.ctx.store
    found: list[bytes] = []
    offset = 0
    while (result := store.get_messages(TOPIC, 0, offset, 32)).message_count:
        found += [m.body for m in record.decode_all(b"".join(result.buffers))]
        offset = result.next_begin_offset
    return found


async def send_all(client: RemotingClient, master: BrokerApp, bodies: list[bytes]) -> None:
    for body in bodies:
        answer = await client.invoke(master.address, send(body))
        assert answer.code == ResponseCode.SUCCESS, answer.remark


async def metrics(app: BrokerApp) -> str:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{app.http.port}/metrics") as answer,
    ):
        return await answer.text()


def end(app: BrokerApp) -> int:
    assert app.ctx is not None
    return app.ctx.store.commit_log_max_offset


async def start_pair(start_broker: StartBroker, role: str = "ASYNC_MASTER",
                     **slave: Any) -> tuple[BrokerApp, BrokerApp]:  # fmt: skip
    master = await start_broker(broker_role=role)
    replica = await start_broker(broker_id=1, broker_role="SLAVE", **slave)
    return master, replica


async def test_a_slave_copies_the_master_and_serves_pulls(start_broker: StartBroker) -> None:
    master, slave = await start_pair(start_broker)  # the HA address comes from the name server
    client = RemotingClient()
    try:
        await send_all(client, master, [b"m%02d" % i for i in range(50)])
        await wait_until(lambda: end(slave) == end(master), "the slave caught up")
        assert stored_bodies(slave) == [b"m%02d" % i for i in range(50)]
        pull = RemotingCommand.request(RequestCode.PULL_MESSAGE, {
            "consumerGroup": "ReplicaGroup", "topic": TOPIC, "queueId": "0",
            "queueOffset": "10", "maxMsgNums": "5", "sysFlag": "4", "commitOffset": "0",
            "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0",
        })  # fmt: skip
        pulled = await client.invoke(slave.address, pull)
        assert pulled.code == ResponseCode.SUCCESS, pulled.remark
        assert [m.body for m in record.decode_all(pulled.body)] == [
            b"m%02d" % i for i in range(10, 15)
        ]
        # metadata: the topic auto-created on the master reaches the slave's topic table
        assert slave.registrar is not None
        assert slave.slave_sync is not None
        master_addr = slave.registrar.master_addr
        assert master_addr == master.address
        await slave.slave_sync.sync_once(master_addr)
        assert slave.ctx is not None
        assert slave.ctx.topics.get(TOPIC) is not None
        # a send to the slave is refused: clients write to the master only
        refused = await client.invoke(slave.address, send(b"no"))
        assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
        assert "rocketkube_broker_ha_slaves 1.0" in await metrics(master)
        assert "rocketkube_broker_ha_slave_lag_bytes 0.0" in await metrics(master)
        assert "rocketkube_broker_ha_master_connected 1.0" in await metrics(slave)
    finally:
        await client.close()


async def test_a_restarted_slave_resumes_where_it_stopped(start_broker: StartBroker) -> None:
    master, slave = await start_pair(start_broker)
    client = RemotingClient()
    try:
        await send_all(client, master, [b"a%02d" % i for i in range(20)])
        await wait_until(lambda: end(slave) == end(master), "the slave caught up")
        await slave.stop()
        await send_all(client, master, [b"b%02d" % i for i in range(20)])
        store = slave.settings.store_path_root_dir
        again = await start_broker(broker_id=1, broker_role="SLAVE", store_path_root_dir=store)
        await wait_until(lambda: end(again) == end(master), "the restarted slave caught up")
        assert stored_bodies(again) == stored_bodies(master)
        assert len(stored_bodies(again)) == 40
    finally:
        await client.close()


async def test_a_slave_follows_its_master_through_a_restart(start_broker: StartBroker) -> None:
    master, slave = await start_pair(start_broker)
    client = RemotingClient()
    try:
        await send_all(client, master, [b"a%02d" % i for i in range(10)])
        await wait_until(lambda: end(slave) == end(master), "the slave caught up")
        await master.stop()
        store = master.settings.store_path_root_dir
        again = await start_broker(store_path_root_dir=store)  # new ports, as a new pod's
        await send_all(client, again, [b"b%02d" % i for i in range(10)])
        await wait_until(lambda: end(slave) == end(again), "the slave follows the new master")
        assert stored_bodies(slave) == stored_bodies(again)
        assert len(stored_bodies(slave)) == 20
    finally:
        await client.close()


async def test_sync_master_answers_once_a_slave_has_the_message(
    start_broker: StartBroker,
) -> None:
    master = await start_broker(broker_role="SYNC_MASTER")
    client = RemotingClient()
    try:
        alone = await client.invoke(master.address, send(b"alone"))
        assert alone.code == ResponseCode.SLAVE_NOT_AVAILABLE
        assert alone.ext_fields["msgId"]  # stored all the same, as in RocketMQ
        assert stored_bodies(master) == [b"alone"]
        assert master.replicas is not None
        ha_address = f"127.0.0.1:{master.replicas.port}"
        slave = await start_broker(broker_id=1, broker_role="SLAVE", ha_master_address=ha_address)
        replicas = master.replicas
        await wait_until(replicas.slave_ok, "a slave connected")
        for i in range(20):
            answer = await client.invoke(master.address, send(b"s%02d" % i))
            assert answer.code == ResponseCode.SUCCESS, answer.remark
            assert end(slave) >= end(master)  # the slave had it before the answer
        pipelined = await asyncio.gather(
            *(client.invoke(master.address, send(b"p%02d" % i)) for i in range(100))
        )
        assert {a.code for a in pipelined} == {ResponseCode.SUCCESS}
        await wait_until(lambda: end(slave) == end(master), "the slave caught up")
        assert stored_bodies(slave) == stored_bodies(master)
    finally:
        await client.close()


async def test_a_slave_reconnects_to_a_sync_master_restarted_where_it_was(
    start_broker: StartBroker,
) -> None:
    master = await start_broker(broker_role="SYNC_MASTER")
    assert master.replicas is not None
    ports = {"listen_port": master.port, "ha_listen_port": master.replicas.port}
    slave = await start_broker(broker_id=1, broker_role="SLAVE", ha_reconnect_interval=200,
                               ha_master_address=f"127.0.0.1:{master.replicas.port}")  # fmt: skip
    replica = slave.replica_client
    assert replica is not None
    client = RemotingClient()
    try:
        await wait_until(master.replicas.slave_ok, "a slave connected")
        await send_all(client, master, [b"before"])
        await master.stop()
        await wait_until(lambda: replica.connected_to is None, "the slave lost its master")
        store = master.settings.store_path_root_dir
        again = await start_broker(broker_role="SYNC_MASTER", store_path_root_dir=store, **ports)
        assert again.replicas is not None
        await wait_until(again.replicas.slave_ok, "the slave reconnected by itself")
        await send_all(client, again, [b"after"])  # SUCCESS, not SLAVE_NOT_AVAILABLE
        await wait_until(lambda: end(slave) == end(again), "the slave caught up")
        assert stored_bodies(slave) == [b"before", b"after"]
    finally:
        await client.close()


async def test_sync_master_times_out_on_a_slave_that_does_not_acknowledge(
    start_broker: StartBroker,
) -> None:
    master = await start_broker(broker_role="SYNC_MASTER", slave_timeout=300)
    assert master.replicas is not None
    replicas = master.replicas
    client = RemotingClient()
    silent = socket.create_connection(("127.0.0.1", replicas.port))
    try:
        silent.sendall(wire.OFFSET.pack(0))  # an empty slave, that never acknowledges
        await wait_until(replicas.slave_ok, "the slave reported")
        answer = await client.invoke(master.address, send(b"late"))
        assert answer.code == ResponseCode.FLUSH_SLAVE_TIMEOUT
        assert stored_bodies(master) == [b"late"]
    finally:
        silent.close()
        await client.close()


async def test_a_slave_restarted_as_master_takes_over(start_broker: StartBroker) -> None:
    master, slave = await start_pair(start_broker)
    client = RemotingClient()
    try:
        await send_all(client, master, [b"a%02d" % i for i in range(20)])
        await wait_until(lambda: end(slave) == end(master), "the slave caught up")
        assert slave.slave_sync is not None
        await slave.slave_sync.sync_once(master.address)
        await master.stop()
        await slave.stop()
        store = slave.settings.store_path_root_dir
        promoted = await start_broker(store_path_root_dir=store)  # brokerId 0, ASYNC_MASTER
        answer = await client.invoke(promoted.address, send(b"after"))
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        assert answer.ext_fields["queueOffset"] == "20"  # the copied queue continues
        assert stored_bodies(promoted) == [b"a%02d" % i for i in range(20)] + [b"after"]
    finally:
        await client.close()


async def test_a_slave_that_is_no_copy_of_the_master_does_not_count(
    start_broker: StartBroker,
) -> None:
    master = await start_broker(broker_role="SYNC_MASTER")
    assert master.replicas is not None
    replicas = master.replicas
    client = RemotingClient()
    stranger = socket.create_connection(("127.0.0.1", replicas.port))
    try:
        stranger.sendall(wire.OFFSET.pack(1 << 40))  # past this master's log, then acks it
        await wait_until(lambda: bool(replicas.slaves), "the stranger connected")
        stranger.sendall(wire.OFFSET.pack(1 << 41))
        await wait_until(lambda: [r for _, r in replicas.slaves] == [1 << 41], "claim read")
        answer = await client.invoke(master.address, send(b"unsafe"))
        assert answer.code == ResponseCode.SLAVE_NOT_AVAILABLE
        assert replicas.acked == 0
    finally:
        stranger.close()
        await client.close()
