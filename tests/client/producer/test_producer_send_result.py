"""Reading a send's answer into a SendResult, and splitting a batch's result."""

from __future__ import annotations

import pytest

from rocketkube.client.errors import MQBrokerError
from rocketkube.client.producer.send_result import (
    SendResult,
    SendStatus,
    read_send_result,
    split_batch_result,
)
from rocketkube.client.routing import MessageQueue
from rocketkube.common.errors import HeaderError
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

QUEUE = MessageQueue("Topic", "broker-a", 2)
OFFSET_ID = "7F00000100002A9F0000000000000400"


def answer(code: int = ResponseCode.SUCCESS, **changed: str) -> RemotingCommand:
    """A send's answer; ``changed`` fields replace the defaults, empty ones are left out."""
    fields = {"msgId": OFFSET_ID, "queueId": "2", "queueOffset": "17", "MSG_REGION": "R"}
    fields.update(changed)
    return RemotingCommand.response(code, None, {k: v for k, v in fields.items() if v})


def test_a_stored_send_gives_its_ids_queue_and_offset() -> None:
    result = read_send_result("UNIQ", QUEUE, answer())
    assert result == SendResult(SendStatus.SEND_OK, "UNIQ", OFFSET_ID, QUEUE, 17)
    assert result.queue is QUEUE


def test_a_flush_timeout_is_a_status_and_the_brokers_queue_id_wins() -> None:
    result = read_send_result("UNIQ", QUEUE, answer(ResponseCode.FLUSH_DISK_TIMEOUT, queueId="3"))
    assert result.status is SendStatus.FLUSH_DISK_TIMEOUT
    assert result.queue == MessageQueue("Topic", "broker-a", 3)


def test_an_error_code_raises_the_mapped_broker_error() -> None:
    with pytest.raises(MQBrokerError) as caught:
        read_send_result("UNIQ", QUEUE, RemotingCommand.response(ResponseCode.SYSTEM_BUSY, "busy"))
    assert caught.value.code == ResponseCode.SYSTEM_BUSY


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("msgId", "", "the custom field <msgId> is null"),
        ("queueOffset", "", "the custom field <queueOffset> is null"),
        ("queueId", "x", "the custom field <queueId> has an invalid value 'x'"),
    ],
)
def test_a_malformed_answer_names_the_field(field: str, value: str, message: str) -> None:
    with pytest.raises(HeaderError, match=message):
        read_send_result("UNIQ", QUEUE, answer(ResponseCode.SUCCESS, **{field: value}))


def test_a_batch_result_splits_into_one_result_per_message() -> None:
    whole = SendResult(SendStatus.SEND_OK, "A,B", "X1,X2", QUEUE, 40)
    assert split_batch_result(whole, ["A", "B"]) == [
        SendResult(SendStatus.SEND_OK, "A", "X1", QUEUE, 40),
        SendResult(SendStatus.SEND_OK, "B", "X2", QUEUE, 41),
    ]
