"""Admin bodies: fastjson forms from Java tools, object keys, ordinals."""

from __future__ import annotations

import pytest

from rocketkube.common import errors
from rocketkube.common.protocol.admin_bodies import (
    ClientConnection,
    ConsumerConnection,
    ConsumeStats,
    MessageQueue,
    OffsetWrapper,
    TopicOffset,
    TopicStatsTable,
)
from rocketkube.common.protocol.heartbeat import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    parse_subscription,
)


def test_consume_stats_from_java_text() -> None:
    text = (
        b'{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":1,"topic":"t"}:'
        b'{"brokerOffset":10,"consumerOffset":8,"lastTimestamp":1700000000000},'
        b'{"topic":"t","queueId":0,"brokerName":"b"}:{"brokerOffset":4,"consumerOffset":4,'
        b'"lastTimestamp":0}}}'
    )
    stats = ConsumeStats.decode(text)
    assert stats.consume_tps == 1.5
    assert stats.offset_table == {
        MessageQueue("t", "b", 1): OffsetWrapper(10, 8, 1_700_000_000_000),
        MessageQueue("t", "b", 0): OffsetWrapper(4, 4, 0),
    }
    assert stats.diff_total == 2
    assert stats.encode() == (
        b'{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:'
        b'{"brokerOffset":4,"consumerOffset":4,"lastTimestamp":0},'
        b'{"brokerName":"b","queueId":1,"topic":"t"}:'
        b'{"brokerOffset":10,"consumerOffset":8,"lastTimestamp":1700000000000}}}'
    )
    assert ConsumeStats.decode(stats.encode()).offset_table == stats.offset_table


def test_stats_bodies_accept_keys_written_as_json_strings() -> None:
    text = (
        b'{"offsetTable":{"{\\"brokerName\\":\\"b\\",\\"queueId\\":2,\\"topic\\":\\"t\\"}":'
        b'{"lastUpdateTimestamp":5,"maxOffset":9,"minOffset":1}}}'
    )
    assert TopicStatsTable.decode(text).offset_table == {
        MessageQueue("t", "b", 2): TopicOffset(1, 9, 5)
    }


def test_consumer_connection_round_trip_and_ordinals() -> None:
    body = ConsumerConnection(
        [ClientConnection("c2", "10.0.0.2:1", "GO", 317), ClientConnection("c1", "10.0.0.1:1",
                                                                           "CPP", 333)],
        {"T": parse_subscription("T", "a || b", 5)},
        ConsumeType.CONSUME_ACTIVELY,
        MessageModel.BROADCASTING,
        ConsumeFromWhere.CONSUME_FROM_TIMESTAMP,
    )  # fmt: skip
    decoded = ConsumerConnection.decode(body.encode())
    assert [c.client_id for c in decoded.connections] == ["c1", "c2"]
    assert decoded.subscriptions == body.subscriptions
    assert (decoded.consume_type, decoded.message_model, decoded.consume_from_where) == (
        ConsumeType.CONSUME_ACTIVELY, MessageModel.BROADCASTING,
        ConsumeFromWhere.CONSUME_FROM_TIMESTAMP,
    )  # fmt: skip
    ordinals = ConsumerConnection.decode(
        b'{"connectionSet":[],"consumeType":0,"messageModel":0,"consumeFromWhere":5}'
    )
    assert ordinals.message_model is MessageModel.BROADCASTING
    assert ordinals.consume_from_where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP


@pytest.mark.parametrize(
    "body", [b"", b"[]", b"{", b'{"offsetTable":{"x":1}}', b'{"offsetTable":{{"topic":"t"}:{}}}']
)
def test_malformed_stats_bodies(body: bytes) -> None:
    with pytest.raises(errors.ProtocolError):
        ConsumeStats.decode(body)
    with pytest.raises(errors.ProtocolError):
        TopicStatsTable.decode(body)
