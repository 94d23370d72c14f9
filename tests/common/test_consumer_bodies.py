"""Wire shapes of the consumer-side and transaction headers and bodies
(docs/protocol.md §7, §11)."""

from __future__ import annotations

import pytest

from rocketkube.common.errors import ProtocolError
from rocketkube.common.protocol.admin_bodies import MessageQueue
from rocketkube.common.protocol.consumer_headers import (
    ConsumerSendMsgBackRequestHeader,
    LockBatchRequestBody,
    LockBatchResponseBody,
    ResetOffsetBody,
    ResetOffsetRequestHeader,
)
from rocketkube.common.protocol.transaction_headers import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
)

MQ = MessageQueue("T", "broker-a", 1)


def test_send_back_header_uses_java_names() -> None:
    header = ConsumerSendMsgBackRequestHeader(
        offset=5, group="g", delay_level=0, origin_msg_id="ID", max_reconsume_times=16
    )
    assert header.encode() == {
        "offset": "5",
        "group": "g",
        "delayLevel": "0",
        "originMsgId": "ID",
        "unitMode": "false",
        "maxReconsumeTimes": "16",
    }
    assert ConsumerSendMsgBackRequestHeader.decode(header.encode()) == header


def test_reset_offset_header_and_body_round_trip() -> None:
    header = ResetOffsetRequestHeader(topic="T", group="g", timestamp=-1, is_force=True)
    assert header.encode() == {"topic": "T", "group": "g", "timestamp": "-1", "isForce": "true"}
    body = ResetOffsetBody({MQ: 7}).encode()
    assert body == b'{"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:7}}'
    assert ResetOffsetBody.decode(body).offset_table == {MQ: 7}


def test_lock_bodies_round_trip() -> None:
    request = LockBatchRequestBody("g", "cid", frozenset({MQ}))
    assert request.encode() == (
        b'{"clientId":"cid","consumerGroup":"g",'
        b'"mqSet":[{"brokerName":"broker-a","queueId":1,"topic":"T"}]}'
    )
    assert LockBatchRequestBody.decode(request.encode()) == request
    response = LockBatchResponseBody(frozenset({MQ}))
    assert LockBatchResponseBody.decode(response.encode()) == response
    assert LockBatchResponseBody.decode(b"{}").lock_ok_mq_set == frozenset()


@pytest.mark.parametrize(
    ("decode", "body"),
    [
        (LockBatchRequestBody.decode, b"[]"),
        (LockBatchRequestBody.decode, b'{"mqSet":[{"topic":"T"}]}'),
        (ResetOffsetBody.decode, b'{"offsetTable":{"x":1}}'),
        (LockBatchResponseBody.decode, b"{"),
    ],
)
def test_malformed_bodies_raise_protocol_error(decode: object, body: bytes) -> None:
    assert callable(decode)
    with pytest.raises(ProtocolError):
        decode(body)


def test_transaction_headers_use_java_names() -> None:
    end = EndTransactionRequestHeader(
        producer_group="PG",
        tran_state_table_offset=3,
        commit_log_offset=1024,
        commit_or_rollback=8,
        msg_id="UNIQ",
        from_transaction_check=True,
        transaction_id="UNIQ",
    )
    assert end.encode()["tranStateTableOffset"] == "3"
    assert end.encode()["commitOrRollback"] == "8"
    assert EndTransactionRequestHeader.decode(end.encode()) == end
    check = CheckTransactionStateRequestHeader(
        tran_state_table_offset=3, commit_log_offset=1024, msg_id="UNIQ", offset_msg_id="OFF"
    )
    assert CheckTransactionStateRequestHeader.decode(check.encode()) == check
