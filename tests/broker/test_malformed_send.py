"""A malformed send takes nothing: no queue offset, no commit log byte, and after a restart
every acknowledged message is still read at the offset it was acknowledged with.

Found by probing a broker with raw SEND_MESSAGE_V2 frames: a header integer outside its
Java type (``h`` flag 2147483648, ``j`` reconsumeTimes 2147483648, ``g`` bornTimestamp
9223372036854775808) was refused only once the commit log had taken its queue offset, and
the blank that left in the consume queue made recovery move the queue's start past the
messages before it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketkube.broker.app import BrokerApp
from rocketkube.broker.settings import BrokerSettings
from rocketkube.common.message import record
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

TOPIC = "Malformed"
INT_MAX = (1 << 31) - 1
INT_MIN = -(1 << 31)
LONG_MAX = (1 << 63) - 1
LONG_MIN = -(1 << 63)


def settings_in(store: Path) -> BrokerSettings:
    return BrokerSettings(
        broker_name="broker-a",
        listen_port=0,
        http_port=0,
        bind_address="127.0.0.1",
        broker_ip1="127.0.0.1",
        store_path_root_dir=str(store),
        mapped_file_size_commit_log=1 << 20,
        mapped_file_size_consume_queue=20 * 1000,
        max_hash_slot_num=1000,
        max_index_num=4000,
    )


def good_fields(queue_id: int = 0) -> dict[str, str]:
    """A well-formed SEND_MESSAGE_V2 header to ``TOPIC``."""
    return {
        "a": "PG", "b": TOPIC, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
        "g": "1700000000000", "h": "0", "i": "", "j": "0", "k": "false",
    }  # fmt: skip


def send_v2(ext: Mapping[str, str], body: bytes) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, dict(ext), body)


def pull(queue_id: int, offset: int) -> RemotingCommand:
    ext = {
        "consumerGroup": "CG", "topic": TOPIC, "queueId": str(queue_id),
        "queueOffset": str(offset), "maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0",
        "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0",
    }  # fmt: skip
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, ext)


class Broker:
    """One in-process broker over a store directory, restartable."""

    def __init__(self, store: Path) -> None:
        self.settings = settings_in(store)
        self.app: BrokerApp | None = None
        self.client = RemotingClient(timeout=15.0)

    async def start(self) -> None:
        self.app = BrokerApp(self.settings)
        await self.app.start()

    async def stop(self) -> None:
        if self.app is not None:
            await self.app.stop()
            self.app = None

    async def restart(self) -> None:
        await self.stop()
        await self.client.close()
        self.client = RemotingClient(timeout=15.0)
        await self.start()

    async def call(self, request: RemotingCommand) -> RemotingCommand:
        assert self.app is not None
        return await self.client.invoke(self.app.address, request)

    async def read_queue(self, queue_id: int) -> list[tuple[int, bytes]]:
        """Every message of ``TOPIC``'s queue from offset 0: (queue offset, body)."""
        out: list[tuple[int, bytes]] = []
        offset = 0
        while True:
            response = await self.call(pull(queue_id, offset))
            if response.code != ResponseCode.SUCCESS:
                assert response.code in (
                    ResponseCode.PULL_NOT_FOUND,
                    ResponseCode.PULL_RETRY_IMMEDIATELY,
                ), (
                    response.code,
                    response.remark,
                    response.ext_fields,
                )
                return out
            messages = record.decode_all(response.body)
            out += [(m.queue_offset, m.body) for m in messages]
            offset = int(response.ext_fields["nextBeginOffset"])

    async def close(self) -> None:
        await self.stop()
        await self.client.close()


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    b = Broker(tmp_path / "store")
    await b.start()
    yield b
    await b.close()


@pytest.mark.parametrize(
    ("field", "value", "java_type"),
    [
        ("h", str(INT_MAX + 1), "int"),
        ("j", str(INT_MAX + 1), "int"),
        ("g", str(LONG_MAX + 1), "long"),
        ("g", str(LONG_MIN - 1), "long"),
        ("f", str(INT_MIN - 1), "int"),
        ("e", str(INT_MAX + 1), "int"),
        ("d", str(INT_MAX + 1), "int"),
        ("l", str(INT_MAX + 1), "int"),
    ],
)
async def test_an_out_of_range_field_takes_no_offset_and_loses_nothing_on_restart(
    broker: Broker, field: str, value: str, java_type: str
) -> None:
    for i in range(3):
        sent = await broker.call(send_v2(good_fields(), b"before %d" % i))
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        assert sent.ext_fields["queueOffset"] == str(i)
    bad = good_fields() | {field: value}
    refused = await broker.call(send_v2(bad, b"bad"))
    assert refused.code == ResponseCode.SYSTEM_ERROR
    assert f"<{field}>" in (refused.remark or "")
    assert f"Java {java_type}" in (refused.remark or "")
    for i in range(3):
        sent = await broker.call(send_v2(good_fields(), b"after %d" % i))
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        assert sent.ext_fields["queueOffset"] == str(3 + i)  # the bad send took none
    expected = [(i, b"before %d" % i) for i in range(3)]
    expected += [(3 + i, b"after %d" % i) for i in range(3)]
    assert await broker.read_queue(0) == expected
    await broker.restart()
    assert await broker.read_queue(0) == expected


async def test_extreme_values_inside_their_types_are_stored(broker: Broker) -> None:
    ext = good_fields() | {
        "h": str(INT_MIN), "j": str(INT_MAX), "g": str(LONG_MAX), "l": str(INT_MIN),
    }  # fmt: skip
    sent = await broker.call(send_v2(ext, b"edge"))
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    await broker.restart()
    response = await broker.call(pull(0, 0))
    assert response.code == ResponseCode.SUCCESS
    (message,) = record.decode_all(response.body)
    assert (message.flag, message.reconsume_times, message.born_timestamp) == (
        INT_MIN,
        INT_MAX,
        LONG_MAX,
    )


async def test_a_v1_send_out_of_range_is_refused_by_name(broker: Broker) -> None:
    ext = {
        "producerGroup": "PG", "topic": TOPIC, "defaultTopic": "TBW102",
        "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0",
        "bornTimestamp": "1700000000000", "flag": str(INT_MAX + 1),
    }  # fmt: skip
    refused = await broker.call(RemotingCommand.request(RequestCode.SEND_MESSAGE, ext, b"x"))
    assert refused.code == ResponseCode.SYSTEM_ERROR
    assert "<flag>" in (refused.remark or "")
    sent = await broker.call(send_v2(good_fields(), b"ok"))
    assert sent.ext_fields["queueOffset"] == "0"


# -- property: garbage interleaved with good sends, then a restart -------------------------

_OUT_OF_RANGE = st.sampled_from([str(INT_MAX + 1), str(INT_MIN - 1), str(LONG_MAX + 1)])
_OUT_OF_LONG = st.sampled_from([str(LONG_MAX + 1), str(LONG_MIN - 1), "9" * 30])
_ILL_TYPED = st.sampled_from(
    ["-", "", " ", "1.5", "0x10", "abc", "\x00", "\u00e9", "1" * 40, "-" + "9" * 19]
)
_VALID = {
    # Values inside their types that keep a message an ordinary one (no transaction or
    # batch bits, an existing queue), so that an acknowledged send is one a pull reads.
    "d": st.sampled_from(["4", "0", str(INT_MAX), str(INT_MIN)]),
    "e": st.integers(0, 3).map(str),
    "f": st.sampled_from(["0", "2"]),
    "g": st.sampled_from([str(LONG_MAX), str(LONG_MIN), "0", "1700000000000"]),
    "h": st.sampled_from([str(INT_MAX), str(INT_MIN), "0", "-1"]),
    "j": st.sampled_from([str(INT_MAX), str(INT_MIN), "0", ""]),
    "l": st.sampled_from([str(INT_MAX), str(INT_MIN), "16", ""]),
}
_FIELDS = sorted(_VALID)


@st.composite
def a_send(draw: st.DrawFn) -> dict[str, str]:
    """A send with one to three integer fields changed: each to a valid or extreme value
    of its type, to one just out of its type's range, to one that is no number, or left
    out."""
    ext = good_fields(draw(st.integers(0, 3)))
    for name in draw(st.lists(st.sampled_from(_FIELDS), min_size=1, max_size=3, unique=True)):
        choice = draw(st.sampled_from(["valid", "out of range", "ill typed", "missing"]))
        if choice == "valid":
            ext[name] = draw(_VALID[name])
        elif choice == "out of range":
            ext[name] = draw(_OUT_OF_LONG if name == "g" else _OUT_OF_RANGE)
        elif choice == "ill typed":
            ext[name] = draw(_ILL_TYPED)
        else:
            ext.pop(name, None)
    return ext


@settings(
    max_examples=60,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(sends=st.lists(st.one_of(a_send(), st.just(good_fields())), min_size=1, max_size=30))
async def test_every_acknowledged_send_is_read_at_its_offset_after_a_restart(
    sends: list[dict[str, str]],
) -> None:
    store = Path(tempfile.mkdtemp(prefix="malformed-"))
    broker = Broker(store)
    try:
        await broker.start()
        acked: dict[int, list[tuple[int, bytes]]] = {}
        for i, ext in enumerate(sends):
            body = b"message %d" % i
            response = await broker.call(send_v2(ext, body))
            if response.code == ResponseCode.SUCCESS:
                queue_id = int(response.ext_fields["queueId"])
                offset = int(response.ext_fields["queueOffset"])
                acked.setdefault(queue_id, []).append((offset, body))
            else:
                assert response.remark, response.code  # a refusal says why
        for messages in acked.values():
            # offsets are dense: a refused send took none
            assert [offset for offset, _ in messages] == list(range(len(messages)))
        await broker.restart()
        for queue_id, messages in acked.items():
            assert await broker.read_queue(queue_id) == messages
    finally:
        await broker.close()
        shutil.rmtree(store, ignore_errors=True)
