"""GET_CONSUMER_RUNNING_INFO's header and ConsumerRunningInfo body: Java's names, the
fastjson object keys of ``mqTable``, and lenient parsing of what other clients write."""

from __future__ import annotations

import pytest

from rocketkube.common import fastjson
from rocketkube.common.errors import ProtocolError
from rocketkube.common.protocol.admin_bodies import MessageQueue
from rocketkube.common.protocol.heartbeat import parse_subscription
from rocketkube.common.protocol.running_info import (
    ConsumerRunningInfo,
    ConsumeStatus,
    GetConsumerRunningInfoRequestHeader,
    ProcessQueueInfo,
    queue_warnings,
    same_subscriptions,
)

MQ = MessageQueue("T", "broker-a", 1)
MQ2 = MessageQueue("T", "broker-a", 2)


def test_header_uses_java_names() -> None:
    header = GetConsumerRunningInfoRequestHeader("G", "127.0.0.1@1", jstack_enable=True)
    assert header.encode() == {
        "consumerGroup": "G",
        "clientId": "127.0.0.1@1",
        "jstackEnable": "true",
    }
    assert GetConsumerRunningInfoRequestHeader.decode({"consumerGroup": "G", "clientId": "c"}) == (
        GetConsumerRunningInfoRequestHeader("G", "c", False)
    )


def test_body_is_written_as_fastjson_writes_it() -> None:
    info = ConsumerRunningInfo(
        properties={"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY"},
        subscriptions=(parse_subscription("T", "A || B"),),
        mq_table={MQ: ProcessQueueInfo(commit_offset=7, cached_msg_count=2, locked=True)},
        status_table={"T": ConsumeStatus(pull_rt=1.5, consume_failed_msgs=3)},
    )
    body = info.encode()
    assert body.startswith(
        b'{"mqTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"cachedMsgCount":2,'
    )
    assert b'"droped":false' in body
    assert b'"jstack"' not in body
    assert (
        b'"statusTable":{"T":{"consumeFailedMsgs":3,"consumeFailedTPS":0.0,"consumeOKTPS":0.0,'
        b'"consumeRT":0.0,"pullRT":1.5,"pullTPS":0.0}}' in body
    )
    assert b'"subscriptionSet":[{"classFilterMode":false,' in body
    assert ConsumerRunningInfo.decode(body) == info


def test_jstack_round_trips() -> None:
    info = ConsumerRunningInfo(jstack='"main" thread\n  at x\n')
    assert ConsumerRunningInfo.decode(info.encode()).jstack == '"main" thread\n  at x\n'


def test_other_clients_bodies_parse_leniently() -> None:
    """C++ writes property values of other types and may omit fields; queue keys may be
    JSON text in strings."""
    body = (
        b'{"properties":{"PROP_CONSUMEORDERLY":false,"PROP_THREADPOOL_CORE_SIZE":20},'
        b'"mqTable":{"{\\"topic\\":\\"T\\",\\"brokerName\\":\\"broker-a\\",\\"queueId\\":1}":'
        b'{"commitOffset":5,"droped":true}},'
        b'"subscriptionSet":[{"topic":"T","subString":"*"}]}'
    )
    info = ConsumerRunningInfo.decode(body)
    assert info.properties == {"PROP_CONSUMEORDERLY": "false", "PROP_THREADPOOL_CORE_SIZE": "20"}
    assert info.mq_table == {MQ: ProcessQueueInfo(commit_offset=5, dropped=True)}
    assert [s.topic for s in info.subscriptions] == ["T"]
    assert info.status_table == {}


def test_object_keys_as_java_writes_them() -> None:
    body = fastjson.dumps({"mqTable": {MQ.as_key(): {"commitOffset": 9}}})
    assert ConsumerRunningInfo.decode(body).mq_table[MQ].commit_offset == 9


@pytest.mark.parametrize("body", [b"[1]", b"not json", b'{"mqTable":{"x":{}}}'])
def test_malformed_bodies_raise_protocol_error(body: bytes) -> None:
    with pytest.raises(ProtocolError):
        ConsumerRunningInfo.decode(body)


def test_same_subscriptions() -> None:
    a = ConsumerRunningInfo(subscriptions=(parse_subscription("T", "A"),))
    b = ConsumerRunningInfo(subscriptions=(parse_subscription("T", "A", sub_version=9),))
    c = ConsumerRunningInfo(subscriptions=(parse_subscription("T", "B"),))
    assert same_subscriptions({"x": a, "y": b})
    assert not same_subscriptions({"x": a, "z": c})
    assert same_subscriptions({})


def test_queue_warnings_find_stuck_queues() -> None:
    push = {"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY", "PROP_CONSUMEORDERLY": "false"}
    stuck = ProcessQueueInfo(cached_msg_count=3, last_consume_timestamp=1_000)
    idle = ProcessQueueInfo(cached_msg_count=0, last_consume_timestamp=1_000)
    info = ConsumerRunningInfo(properties=push, mq_table={MQ: stuck, MQ2: idle})
    assert queue_warnings("c1", info, 100_000) == [
        "c1 MessageQueue [topic=T, brokerName=broker-a, queueId=1] can't consume for a while, "
        "maybe blocked, 99000ms"
    ]
    assert queue_warnings("c1", info, 30_000) == []
    orderly = {**push, "PROP_CONSUMEORDERLY": "true"}
    unlocked = ConsumerRunningInfo(
        properties=orderly, mq_table={MQ: ProcessQueueInfo(last_lock_timestamp=4_000)}
    )
    assert queue_warnings("c1", unlocked, 5_000) == [
        "c1 MessageQueue [topic=T, brokerName=broker-a, queueId=1] can't lock for a while, 1000ms"
    ]
    pull = ConsumerRunningInfo(
        properties={"PROP_CONSUME_TYPE": "CONSUME_ACTIVELY"}, mq_table={MQ: stuck}
    )
    assert queue_warnings("c1", pull, 100_000) == []
