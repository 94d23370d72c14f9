"""The pull request header and answer decoding shared by consumers and the admin client."""

from __future__ import annotations

import zlib

import pytest

from rocketkube.client.consumer.pull import PULL_ANSWERS, PullStatus, pull_header, pull_result
from rocketkube.common.message import record, sysflag
from rocketkube.common.protocol.admin_bodies import MessageQueue
from rocketkube.common.protocol.heartbeat import parse_subscription
from rocketkube.common.protocol.pull_headers import (
    PullMessageRequestHeader,
    PullMessageResponseHeader,
)
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

QUEUE = MessageQueue("Orders", "broker-a", 3)


def _answer(code: int, body: bytes = b"") -> RemotingCommand:
    header = PullMessageResponseHeader(
        suggest_which_broker_id=0, next_begin_offset=12, min_offset=0, max_offset=40
    )
    return RemotingCommand.response(code, ext_fields=header.encode(), body=body)


def test_header_of_a_long_poll_that_commits() -> None:
    sub = parse_subscription("Orders", "TagA || TagB", 7)
    fields = pull_header(
        "G", QUEUE, 10, sub, max_nums=32, suspend=15.0, commit_offset=9, lite=False
    )
    header = PullMessageRequestHeader.decode(fields)
    assert (header.consumer_group, header.topic, header.queue_id) == ("G", "Orders", 3)
    assert (header.queue_offset, header.max_msg_nums, header.commit_offset) == (10, 32, 9)
    assert header.suspend_timeout_millis == 15_000
    assert header.sys_flag == (
        sysflag.FLAG_COMMIT_OFFSET | sysflag.FLAG_SUSPEND | sysflag.FLAG_SUBSCRIPTION
    )
    assert (header.subscription, header.sub_version) == ("TagA || TagB", 7)


def test_header_of_a_one_shot_lite_pull() -> None:
    header = PullMessageRequestHeader.decode(
        pull_header("G", QUEUE, 0, parse_subscription("Orders", "*"), max_nums=1, lite=True)
    )
    assert header.sys_flag == sysflag.FLAG_SUBSCRIPTION | sysflag.FLAG_LITE_PULL_MESSAGE
    assert (header.suspend_timeout_millis, header.commit_offset) == (0, 0)


def test_found_messages_are_inflated_and_refiltered_by_tag() -> None:
    body = (
        record.encode(topic="Orders", body=b"plain", properties="TAGS\x01TagA\x02")
        + record.encode(
            topic="Orders",
            body=zlib.compress(b"inflated"),
            properties="TAGS\x01TagB\x02",
            sys_flag=sysflag.COMPRESSED_FLAG,
            queue_offset=1,
        )
        # Same tag hash bucket on the broker, a different tag: dropped client-side.
        + record.encode(topic="Orders", body=b"other", properties="TAGS\x01TagC\x02")
    )
    result = pull_result(
        _answer(ResponseCode.SUCCESS, body), parse_subscription("Orders", "TagA || TagB")
    )
    assert result.status is PullStatus.FOUND
    assert [m.body for m in result.messages] == [b"plain", b"inflated"]
    assert [m.sys_flag for m in result.messages] == [0, 0]  # inflated: no longer compressed
    assert (result.next_begin_offset, result.min_offset, result.max_offset) == (12, 0, 40)


@pytest.mark.parametrize(
    ("body", "flag", "why"),
    [
        (zlib.compress(b"x" * 101), sysflag.COMPRESSED_FLAG, "inflates past 100 bytes"),
        (b"\x00garbage", sysflag.COMPRESSED_FLAG, "no zlib stream"),
        (b"zstd frame", sysflag.COMPRESSED_FLAG | sysflag.COMPRESSION_ZSTD, "0x200 is not zlib"),
    ],
    ids=["over-the-cap", "corrupt", "zstd"],
)
def test_a_body_that_cannot_be_inflated_is_handed_over_as_stored(
    body: bytes, flag: int, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    stored = record.encode(topic="Orders", body=body, sys_flag=flag, queue_offset=7)
    fits = record.encode(
        topic="Orders", body=zlib.compress(b"y" * 100), sys_flag=sysflag.COMPRESSED_FLAG
    )
    result = pull_result(
        _answer(ResponseCode.SUCCESS, stored + fits), parse_subscription("Orders", "*"), 100
    )
    assert [(m.body, m.sys_flag) for m in result.messages] == [(body, flag), (b"y" * 100, 0)]
    [warning] = caplog.records
    assert "offset 7 of Orders queue 0 handed over still compressed" in warning.getMessage()
    assert why in warning.getMessage()


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (ResponseCode.PULL_NOT_FOUND, PullStatus.NO_NEW_MSG),
        (ResponseCode.PULL_RETRY_IMMEDIATELY, PullStatus.NO_MATCHED_MSG),
        (ResponseCode.PULL_OFFSET_MOVED, PullStatus.OFFSET_ILLEGAL),
    ],
)
def test_other_answers_carry_offsets_and_no_messages(code: int, status: PullStatus) -> None:
    assert code in PULL_ANSWERS
    result = pull_result(_answer(code), parse_subscription("Orders", "*"))
    assert (result.status, result.messages, result.next_begin_offset) == (status, [], 12)
