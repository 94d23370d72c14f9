"""Queue locks of orderly consumers: the pure lock table with a hand-moved clock, and
LOCK_BATCH_MQ (41) / UNLOCK_BATCH_MQ (42) over a real socket."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from rocketkube.broker.consumers.locks import QueueLockTable
from rocketkube.broker.processors import locks
from rocketkube.common.protocol.admin_bodies import MessageQueue
from rocketkube.common.protocol.consumer_headers import LockBatchRequestBody, LockBatchResponseBody
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer

Q0 = MessageQueue("T", "broker-a", 0)
Q1 = MessageQueue("T", "broker-a", 1)
Q2 = MessageQueue("T", "broker-a", 2)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def table(clock: Clock) -> QueueLockTable:
    return QueueLockTable(clock, max_live_ms=60_000)


def test_first_client_owns_and_others_are_refused(table: QueueLockTable) -> None:
    assert table.try_lock("G", [Q0, Q1], "c1") == {Q0, Q1}
    assert table.try_lock("G", [Q0, Q1, Q2], "c2") == {Q2}
    assert table.owner("G", Q0) == "c1"
    assert table.owner("G", Q2) == "c2"


def test_groups_are_independent(table: QueueLockTable) -> None:
    assert table.try_lock("G1", [Q0], "c1") == {Q0}
    assert table.try_lock("G2", [Q0], "c2") == {Q0}


def test_owner_relocks_and_renews(table: QueueLockTable, clock: Clock) -> None:
    table.try_lock("G", [Q0], "c1")
    clock.now += 50_000
    assert table.try_lock("G", [Q0], "c1") == {Q0}
    clock.now += 50_000  # 100 s after the first lock, 50 s after the renewal
    assert table.try_lock("G", [Q0], "c2") == set()
    assert table.owner("G", Q0) == "c1"


def test_expired_lock_goes_to_the_next_client(table: QueueLockTable, clock: Clock) -> None:
    table.try_lock("G", [Q0], "c1")
    clock.now += 60_000
    assert table.try_lock("G", [Q0], "c2") == set()  # exactly the max live time: alive
    clock.now += 1
    assert table.owner("G", Q0) is None
    assert table.try_lock("G", [Q0], "c2") == {Q0}
    assert table.owner("G", Q0) == "c2"


def test_unlock_only_by_the_owner(table: QueueLockTable) -> None:
    table.try_lock("G", [Q0, Q1], "c1")
    table.unlock("G", [Q0, Q1], "c2")
    assert table.owner("G", Q0) == "c1"
    table.unlock("G", [Q0], "c1")
    assert table.owner("G", Q0) is None
    assert table.owner("G", Q1) == "c1"
    assert table.try_lock("G", [Q0], "c2") == {Q0}
    table.unlock("unknown-group", [Q0], "c1")


class LockServer:
    def __init__(self, clock: Clock) -> None:
        processors = locks.LockProcessors(QueueLockTable(clock, max_live_ms=60_000))
        self.server = RemotingServer(Dispatcher(processors.table()), "127.0.0.1", 0)
        self.client = RemotingClient(timeout=15.0)

    async def call(self, code: int, client_id: str, *queues: MessageQueue) -> RemotingCommand:
        body = LockBatchRequestBody("G", client_id, frozenset(queues)).encode()
        request = RemotingCommand.request(code, {}, body)
        return await self.client.invoke(f"127.0.0.1:{self.server.port}", request)

    async def lock(self, client_id: str, *queues: MessageQueue) -> frozenset[MessageQueue]:
        response = await self.call(RequestCode.LOCK_BATCH_MQ, client_id, *queues)
        assert response.code == ResponseCode.SUCCESS, response.remark
        return LockBatchResponseBody.decode(response.body).lock_ok_mq_set


@pytest.fixture
async def server(clock: Clock) -> AsyncIterator[LockServer]:
    served = LockServer(clock)
    await served.server.start()
    yield served
    await served.client.close()
    await served.server.stop()


async def test_lock_and_unlock_over_the_wire(server: LockServer, clock: Clock) -> None:
    assert await server.lock("c1", Q0, Q1) == {Q0, Q1}
    assert await server.lock("c2", Q1, Q2) == {Q2}
    unlocked = await server.call(RequestCode.UNLOCK_BATCH_MQ, "c1", Q1)
    assert unlocked.code == ResponseCode.SUCCESS
    assert not unlocked.body
    assert await server.lock("c2", Q1) == {Q1}
    clock.now += 60_001
    assert await server.lock("c1", Q0, Q1, Q2) == {Q0, Q1, Q2}


async def test_malformed_body_is_a_system_error(server: LockServer) -> None:
    request = RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, {}, b"not json")
    response = await server.client.invoke(f"127.0.0.1:{server.server.port}", request)
    assert response.code == ResponseCode.SYSTEM_ERROR
