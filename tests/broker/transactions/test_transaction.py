"""Transactional messages over real sockets: half messages, END_TRANSACTION, the
check-back service and its progress across restarts; plus the checker's pure arithmetic."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_until

from rocketkube.broker import topics
from rocketkube.broker.app import BrokerApp
from rocketkube.broker.transactions.checker import CHECK_GROUP
from rocketkube.broker.transactions.progress import CheckProgress, check_deadline_ms, op_progress
from rocketkube.common.message import ids, record, sysflag
from rocketkube.common.message.model import MessageExt
from rocketkube.common.message.properties import encode_properties
from rocketkube.common.protocol.heartbeat import HeartbeatData
from rocketkube.common.protocol.pull_headers import PullMessageRequestHeader
from rocketkube.common.protocol.send_headers import (
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketkube.common.protocol.transaction_headers import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
)
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Dispatcher

StartBroker = Callable[..., Awaitable[BrokerApp]]
HALF = topics.TRANS_HALF_TOPIC
OP = topics.TRANS_OP_HALF_TOPIC
COMMIT = sysflag.TRANSACTION_COMMIT_TYPE
ROLLBACK = sysflag.TRANSACTION_ROLLBACK_TYPE
#: A checker that scans often but never finds a half old enough to check.
QUIET = {"transaction_check_interval": 50, "transaction_timeout": 600_000}
#: A checker that checks every unresolved half at once.
EAGER = {"transaction_check_interval": 50, "transaction_timeout": 0}


# -- pure arithmetic ---------------------------------------------------------------------------


def test_op_progress_moves_over_contiguous_done_entries_only() -> None:
    assert op_progress(3, []) == 3
    assert op_progress(3, [3, 4, 6]) == 5
    assert op_progress(3, [1, 2, 3, 4, 5]) == 6
    assert op_progress(0, [5, 1, 0, 2, 2]) == 3


def test_check_deadline_honours_check_immunity() -> None:
    assert check_deadline_ms({}, 6000) == (6000, False)
    assert check_deadline_ms({"CHECK_IMMUNITY_TIME_IN_SECONDS": "20"}, 6000) == (20_000, True)
    assert check_deadline_ms({"CHECK_IMMUNITY_TIME_IN_SECONDS": "x"}, 6000) == (6000, False)


def test_check_progress_separates_passed_and_pending_ops() -> None:
    progress = CheckProgress(half_offset=10)
    progress.add_op(0, 4)  # a half already passed: done at once
    progress.add_op(1, None)  # unreadable: done at once
    progress.add_op(2, 12)
    assert progress.done_ops == [0, 1]
    assert not progress.resolve(11)
    assert progress.resolve(12)
    assert progress.done_ops == [0, 1, 2]
    assert progress.resolved_halves == {4, 12}


# -- a producer speaking the wire --------------------------------------------------------------


class Peer:
    """A producer connection: sends halves and END_TRANSACTION, records check-backs and
    answers them with ``answer`` (8 commit, 12 rollback, None: silence)."""

    def __init__(self, address: str, group: str, answer: int | None = None) -> None:
        self.address = address
        self.group = group
        self.answer = answer
        self.checks: list[tuple[CheckTransactionStateRequestHeader, MessageExt]] = []
        self.client = RemotingClient(
            Dispatcher({RequestCode.CHECK_TRANSACTION_STATE: self._on_check})
        )

    def _on_check(self, conn: Connection, req: RemotingCommand) -> None:
        header = CheckTransactionStateRequestHeader.decode(req.ext_fields)
        message = record.decode(req.body_bytes())
        self.checks.append((header, message))
        if self.answer is not None:
            end = EndTransactionRequestHeader(
                producer_group=self.group,
                tran_state_table_offset=header.tran_state_table_offset,
                commit_log_offset=header.commit_log_offset,
                commit_or_rollback=self.answer,
                msg_id=header.msg_id or "",
                from_transaction_check=True,
                transaction_id=header.transaction_id,
            )
            conn.invoke_oneway(RemotingCommand.request(RequestCode.END_TRANSACTION, end.encode()))

    async def heartbeat(self) -> None:
        body = HeartbeatData(client_id=f"peer-{uuid.uuid4().hex[:8]}", producer_groups=[self.group])
        request = RemotingCommand.request(RequestCode.HEART_BEAT, body=body.encode())
        response = await self.client.invoke(self.address, request)
        assert response.code == ResponseCode.SUCCESS

    async def send_half(
        self, topic: str, body: bytes, **extra: str
    ) -> tuple[SendMessageResponseHeader, str]:
        """A half message as Java sends it; returns the response header and the UNIQ_KEY."""
        unique = uuid.uuid4().hex.upper()
        properties = {"TAGS": "TagA", "UNIQ_KEY": unique, "TRAN_MSG": "true", "PGROUP": self.group}
        header = SendMessageRequestHeaderV2(
            producer_group=self.group,
            topic=topic,
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=1,
            sys_flag=sysflag.TRANSACTION_PREPARED_TYPE,
            born_timestamp=int(time.time() * 1000),
            flag=7,
            properties=encode_properties({**properties, **extra}),
        )
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.encode(), body)
        response = await self.client.invoke(self.address, request)
        assert response.code == ResponseCode.SUCCESS, response.remark
        return SendMessageResponseHeader.decode(response.ext_fields), unique

    def end_header(
        self, sent: SendMessageResponseHeader, unique: str, kind: int, **changes: Any
    ) -> EndTransactionRequestHeader:
        _, _, commit_log_offset = ids.decode_offset_msg_id(sent.msg_id)
        fields: dict[str, Any] = {
            "producer_group": self.group,
            "tran_state_table_offset": sent.queue_offset,
            "commit_log_offset": commit_log_offset,
            "commit_or_rollback": kind,
            "msg_id": unique,
            **changes,
        }
        return EndTransactionRequestHeader(**fields)

    async def end_oneway(self, header: EndTransactionRequestHeader) -> None:
        request = RemotingCommand.request(RequestCode.END_TRANSACTION, header.encode(), oneway=True)
        await self.client.invoke_oneway(self.address, request)

    async def end(self, header: EndTransactionRequestHeader) -> RemotingCommand:
        request = RemotingCommand.request(RequestCode.END_TRANSACTION, header.encode())
        return await self.client.invoke(self.address, request)

    async def pull(self, topic: str, queue_id: int) -> list[MessageExt]:
        """Every message a consumer gets from the queue, from offset 0."""
        header = PullMessageRequestHeader(
            consumer_group="CG_tx_test",
            topic=topic,
            queue_id=queue_id,
            queue_offset=0,
            max_msg_nums=32,
            sys_flag=sysflag.build_pull_sys_flag(subscription=True),
            commit_offset=0,
            suspend_timeout_millis=0,
            subscription="*",
            expression_type="TAG",
        )
        request = RemotingCommand.request(RequestCode.PULL_MESSAGE, header.encode())
        response = await self.client.invoke(self.address, request)
        if response.code == ResponseCode.PULL_NOT_FOUND:
            return []
        assert response.code == ResponseCode.SUCCESS, (response.code, response.remark)
        return record.decode_all(response.body_bytes())


@pytest.fixture
def topic() -> str:
    return f"TxTopic_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def group() -> str:
    return f"PG_tx_{uuid.uuid4().hex[:10]}"


@pytest.fixture
async def peers() -> AsyncIterator[Callable[..., Peer]]:
    made: list[Peer] = []

    def make(address: str, group: str, answer: int | None = None) -> Peer:
        peer = Peer(address, group, answer)
        made.append(peer)
        return peer

    yield make
    for peer in made:
        await peer.client.close()


def progress(app: BrokerApp, topic: str) -> int:
    assert app.ctx is not None
    return app.ctx.offsets.query(CHECK_GROUP, topic, 0)


def caught_up(app: BrokerApp) -> bool:
    """The checker has passed every half and every op entry."""
    assert app.ctx is not None
    store = app.ctx.store
    return progress(app, HALF) == store.max_offset(HALF, 0) and progress(
        app, OP
    ) == store.max_offset(OP, 0)


def stored(app: BrokerApp, topic: str) -> list[MessageExt]:
    assert app.ctx is not None
    store = app.ctx.store
    out: list[MessageExt] = []
    for queue_id in store.queue_ids(topic):
        result = store.get_messages(topic, queue_id, 0, 64)
        if result.found:
            out += record.decode_all(result.body())
    return out


# -- END_TRANSACTION -----------------------------------------------------------------------------


async def test_commit_delivers_the_real_message_once(
    start_broker: StartBroker, peers: Callable[..., Peer], topic: str, group: str
) -> None:
    app = await start_broker(**QUIET)
    peer = peers(app.address, group)
    sent, unique = await peer.send_half(topic, b"pay 10")
    assert sent.queue_id == 1
    assert await peer.pull(topic, 1) == []  # the half is invisible
    half = stored(app, HALF)[-1]
    assert half.properties["REAL_TOPIC"] == topic
    assert sysflag.transaction_type(half.sys_flag) is sysflag.TransactionType.NOT_TYPE

    header = peer.end_header(sent, unique, COMMIT)
    await peer.end_oneway(header)
    await wait_until(lambda: bool(stored(app, topic)), "committed")
    await peer.end_oneway(header)  # a repeated commit writes no second message
    response = await peer.end(header)
    assert response.code == ResponseCode.SUCCESS
    await wait_until(lambda: caught_up(app), "checker caught up")

    [real] = await peer.pull(topic, 1)
    assert (real.topic, real.queue_id, real.body, real.flag) == (topic, 1, b"pay 10", 7)
    assert real.unique_key == unique
    assert sysflag.transaction_type(real.sys_flag) is sysflag.TransactionType.COMMIT
    assert real.prepared_transaction_offset == half.commit_log_offset
    assert real.born_timestamp == half.born_timestamp
    assert real.tags == "TagA"
    for name in ("REAL_TOPIC", "REAL_QID", "TRAN_MSG"):
        assert name not in real.properties
    assert real.properties["PGROUP"] == group
    ops = stored(app, OP)
    assert {(op.tags, op.body) for op in ops} == {("d", str(sent.queue_offset).encode())}


async def test_rollback_never_delivers(
    start_broker: StartBroker, peers: Callable[..., Peer], topic: str, group: str
) -> None:
    app = await start_broker(**QUIET)
    peer = peers(app.address, group, answer=COMMIT)
    await peer.heartbeat()
    sent, unique = await peer.send_half(topic, b"cancel me")
    await peer.end_oneway(peer.end_header(sent, unique, ROLLBACK))
    await wait_until(lambda: len(stored(app, OP)) == 1, "op entry written")
    await wait_until(lambda: caught_up(app), "checker caught up")
    assert await peer.pull(topic, 1) == []
    assert stored(app, topic) == []
    assert peer.checks == []


async def test_end_transaction_is_verified(
    start_broker: StartBroker, peers: Callable[..., Peer], topic: str, group: str
) -> None:
    app = await start_broker(**QUIET)
    peer = peers(app.address, group)
    sent, unique = await peer.send_half(topic, b"x")
    wrong_group = await peer.end(peer.end_header(sent, unique, COMMIT, producer_group="Other"))
    assert (wrong_group.code, wrong_group.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "The producer group wrong",
    )
    wrong_offset = await peer.end(
        peer.end_header(sent, unique, COMMIT, tran_state_table_offset=sent.queue_offset + 5)
    )
    assert wrong_offset.code == ResponseCode.SYSTEM_ERROR
    nowhere = await peer.end(peer.end_header(sent, unique, COMMIT, commit_log_offset=1 << 30))
    assert nowhere.code == ResponseCode.SYSTEM_ERROR
    assert stored(app, topic) == []
    assert stored(app, OP) == []


async def test_slave_refuses_end_transaction(
    start_broker: StartBroker, peers: Callable[..., Peer], group: str
) -> None:
    app = await start_broker(broker_id=1, broker_role="SLAVE", **QUIET)
    peer = peers(app.address, group)
    header = EndTransactionRequestHeader(
        producer_group=group,
        tran_state_table_offset=0,
        commit_log_offset=0,
        commit_or_rollback=COMMIT,
        msg_id="X",
    )
    response = await peer.end(header)
    assert response.code == ResponseCode.SLAVE_NOT_AVAILABLE


# -- the check-back service ------------------------------------------------------------------


async def test_unknown_is_checked_back_on_a_live_producer_channel(
    start_broker: StartBroker, peers: Callable[..., Peer], topic: str, group: str
) -> None:
    app = await start_broker(**EAGER)
    peer = peers(app.address, group, answer=COMMIT)
    await peer.heartbeat()
    sent, unique = await peer.send_half(topic, b"decide later")
    await peer.end_oneway(peer.end_header(sent, unique, sysflag.TRANSACTION_NOT_TYPE))
    await wait_until(lambda: bool(stored(app, topic)), "committed through the check-back")
    await wait_until(lambda: caught_up(app), "checker caught up")

    header, message = peer.checks[0]
    assert header.msg_id == header.transaction_id == unique
    assert header.tran_state_table_offset > sent.queue_offset  # the re-put copy
    assert header.offset_msg_id == message.msg_id
    assert message.commit_log_offset == header.commit_log_offset
    assert (message.topic, message.queue_id, message.body) == (topic, 1, b"decide later")
    assert message.properties["TRANSACTION_CHECK_TIMES"] == "1"
    [real] = await peer.pull(topic, 1)
    assert real.unique_key == unique
    assert real.properties["TRANSACTION_CHECK_TIMES"] == "1"


async def test_check_immunity_delays_the_check(
    start_broker: StartBroker, peers: Callable[..., Peer], topic: str, group: str
) -> None:
    app = await start_broker(**EAGER)
    peer = peers(app.address, group, answer=ROLLBACK)
    await peer.heartbeat()
    sent, unique = await peer.send_half(topic, b"slow", CHECK_IMMUNITY_TIME_IN_SECONDS="600")
    # The checker moves the immune half out of its way, remembering where it was.
    await wait_until(lambda: progress(app, HALF) == sent.queue_offset + 1, "immune half passed")
    copy = stored(app, HALF)[-1]
    assert copy.properties["TRAN_PREPARED_QUEUE_OFFSET"] == str(sent.queue_offset)
    await peer.end_oneway(peer.end_header(sent, unique, COMMIT))
    await wait_until(lambda: caught_up(app), "the copy settled by the original's op entry")
    assert peer.checks == []
    assert len(stored(app, topic)) == 1


async def test_discarded_after_transaction_check_max(
    start_broker: StartBroker, peers: Callable[..., Peer], topic: str, group: str
) -> None:
    app = await start_broker(transaction_check_max=2, **EAGER)
    peer = peers(app.address, group)  # never heartbeats: nobody to ask
    await peer.send_half(topic, b"orphan")
    discard = topics.TRANS_CHECK_MAX_TIME_TOPIC
    await wait_until(lambda: bool(stored(app, discard)), "discarded")
    await wait_until(lambda: caught_up(app), "checker caught up")
    [dropped] = stored(app, discard)
    assert dropped.body == b"orphan"
    assert dropped.properties["TRANSACTION_CHECK_TIMES"] == "2"
    assert dropped.properties["REAL_TOPIC"] == topic
    assert stored(app, topic) == []
    assert len(stored(app, HALF)) == 3  # the original and two checked copies
    assert app.ctx is not None
    assert app.ctx.topics.get(discard) is not None


async def test_progress_survives_restart(
    start_broker: StartBroker, peers: Callable[..., Peer], tmp_path: Path, topic: str, group: str
) -> None:
    store = str(tmp_path / "tx-restart")
    first = await start_broker(store_path_root_dir=store, transaction_check_max=1, **EAGER)
    orphan = peers(first.address, group)
    await orphan.send_half(topic, b"orphan")
    discard = topics.TRANS_CHECK_MAX_TIME_TOPIC
    await wait_until(lambda: bool(stored(first, discard)), "discarded")
    await wait_until(lambda: caught_up(first), "checker caught up")
    half_done, op_done = progress(first, HALF), progress(first, OP)
    await first.stop()

    second = await start_broker(
        store_path_root_dir=store,
        transaction_check_max=5,
        transaction_check_interval=100,
        transaction_timeout=0,
    )
    assert (progress(second, HALF), progress(second, OP)) == (half_done, op_done)
    peer = peers(second.address, group, answer=COMMIT)
    await peer.heartbeat()
    _, unique = await peer.send_half(topic, b"after restart")
    await wait_until(lambda: bool(stored(second, topic)), "committed through the check-back")
    await wait_until(lambda: caught_up(second), "checker caught up")
    assert {m.unique_key for _, m in peer.checks} == {unique}  # never the discarded one
    assert len(stored(second, discard)) == 1
    assert [m.body for m in stored(second, topic)] == [b"after restart"]
