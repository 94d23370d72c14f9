"""A send's first attempt, made without a coroutine on an open connection: its failures are
retried (or raised) exactly as the retry loop's, for ``send`` and ``send_async`` alike.

Two fake brokers on 127.0.0.1 (remoting servers with canned answers) and a fake name server
that routes a topic to one queue on each: ``bad`` answers every send with ``bad_code``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import orjson
import pytest
from waiting import WAIT_SECONDS

from rocketkube.client import Message, MQBrokerError, Producer, SendResult, SendStatus
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer

TOPIC = "FirstAttemptTopic"


@dataclass
class FakeCluster:
    namesrv: str
    sends: dict[str, int] = field(default_factory=lambda: {"good": 0, "bad": 0})
    bad_code: int = ResponseCode.SYSTEM_BUSY


def _broker(cluster: FakeCluster, name: str) -> Dispatcher:
    def send(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        cluster.sends[name] += 1
        if name == "bad":
            return RemotingCommand.response(cluster.bad_code, "refused")
        ext = {"msgId": "OFFSETID", "queueId": request.ext_fields["e"], "queueOffset": "7"}
        return RemotingCommand.response(ext_fields=ext)

    def heartbeat(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response()

    return Dispatcher({RequestCode.SEND_MESSAGE_V2: send, RequestCode.HEART_BEAT: heartbeat})


@pytest.fixture
async def cluster() -> AsyncIterator[FakeCluster]:
    servers: list[RemotingServer] = []
    routes: dict[str, str] = {}

    def route(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        body = {
            "brokerDatas": [
                {"brokerAddrs": {"0": addr}, "brokerName": name, "cluster": "c"}
                for name, addr in sorted(routes.items())
            ],
            "queueDatas": [
                {
                    "brokerName": name,
                    "perm": 6,
                    "readQueueNums": 1,
                    "writeQueueNums": 1,
                    "topicSysFlag": 0,
                }
                for name in sorted(routes)
            ],
        }
        return RemotingCommand.response(body=orjson.dumps(body))

    namesrv = RemotingServer(Dispatcher({RequestCode.GET_ROUTEINFO_BY_TOPIC: route}), "127.0.0.1")
    servers.append(namesrv)
    await namesrv.start()
    cluster = FakeCluster(f"127.0.0.1:{namesrv.port}")
    for name in ("bad", "good"):
        server = RemotingServer(_broker(cluster, name), "127.0.0.1")
        servers.append(server)
        await server.start()
        routes[name] = f"127.0.0.1:{server.port}"
    yield cluster
    for server in servers:
        await server.stop()


async def _warmed_producer(cluster: FakeCluster) -> Producer:
    """A started producer with open connections to both brokers (its first sends)."""
    producer = Producer("PG_first", cluster.namesrv, send_timeout=WAIT_SECONDS)
    await producer.start()
    for _ in range(4):
        await asyncio.wait_for(producer.send(Message(TOPIC, b"warm")), WAIT_SECONDS)
    assert cluster.sends["bad"] > 0  # both brokers were tried: both connections are open
    return producer


async def test_send_async_retries_a_failed_first_attempt_elsewhere(cluster: FakeCluster) -> None:
    producer = await _warmed_producer(cluster)
    try:
        before = cluster.sends["bad"]
        seen: list[SendResult] = []
        futures = [
            producer.send_async(Message(TOPIC, b"m"), lambda f: seen.append(f.result()))
            for _ in range(6)
        ]
        results = await asyncio.wait_for(asyncio.gather(*futures), WAIT_SECONDS)
        await asyncio.sleep(0)  # callbacks run after the futures complete
    finally:
        await producer.close()
    assert cluster.sends["bad"] > before  # some first attempts went to the bad broker
    assert {r.queue.broker_name for r in results} == {"good"}
    assert all(r.status is SendStatus.SEND_OK and r.queue_offset == 7 for r in results)
    assert sorted(r.msg_id for r in seen) == sorted(r.msg_id for r in results)


async def test_send_retries_a_failed_first_attempt_elsewhere(cluster: FakeCluster) -> None:
    producer = await _warmed_producer(cluster)
    try:
        before = cluster.sends["bad"]
        results = [
            await asyncio.wait_for(producer.send(Message(TOPIC, b"m")), WAIT_SECONDS)
            for _ in range(6)
        ]
    finally:
        await producer.close()
    assert cluster.sends["bad"] > before
    assert {r.queue.broker_name for r in results} == {"good"}


async def test_a_final_error_of_a_first_attempt_fails_the_future(cluster: FakeCluster) -> None:
    producer = await _warmed_producer(cluster)
    cluster.bad_code = ResponseCode.MESSAGE_ILLEGAL  # not retriable
    cluster.sends = {"good": 0, "bad": 0}
    try:
        futures = [producer.send_async(Message(TOPIC, b"m")) for _ in range(4)]
        outcomes = await asyncio.wait_for(
            asyncio.gather(*futures, return_exceptions=True), WAIT_SECONDS
        )
    finally:
        await producer.close()
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(failed) == cluster.sends["bad"] > 0
    assert all(isinstance(o, MQBrokerError) and o.code == ResponseCode.MESSAGE_ILLEGAL
               for o in failed)  # fmt: skip
    assert len(outcomes) - len(failed) == cluster.sends["good"]


async def test_close_waits_for_send_async_sends_in_flight(cluster: FakeCluster) -> None:
    producer = await _warmed_producer(cluster)
    futures = [producer.send_async(Message(TOPIC, b"m")) for _ in range(6)]
    await asyncio.wait_for(producer.close(), WAIT_SECONDS)
    assert all(f.done() and not f.cancelled() for f in futures)
    assert {f.result().queue.broker_name for f in futures} == {"good"}
