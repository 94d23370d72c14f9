"""The SDK's TransactionProducer against a real name server and broker on 127.0.0.1."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from waiting import wait_until

from rocketkube.broker import topics
from rocketkube.broker.app import BrokerApp
from rocketkube.client import Message, MessageValidationError, SendStatus
from rocketkube.client.producer.transaction import (
    LocalTransactionState,
    TransactionProducer,
)
from rocketkube.common.message import record, sysflag
from rocketkube.common.message.model import MessageExt
from rocketkube.namesrv.app import NamesrvApp

StartBroker = Callable[..., Awaitable[BrokerApp]]
#: The checker scans often; QUIET never finds a half old enough, EAGER checks at once.
QUIET = {"transaction_check_interval": 50, "transaction_timeout": 600_000}
EAGER = {"transaction_check_interval": 50, "transaction_timeout": 0}


class Ledger:
    """A transaction listener: ``decision`` now, ``later`` when the broker asks."""

    def __init__(
        self,
        decision: LocalTransactionState,
        later: LocalTransactionState = LocalTransactionState.UNKNOW,
    ) -> None:
        self.decision = decision
        self.later = later
        self.executed: list[tuple[Message, Any]] = []
        self.checked: list[MessageExt] = []

    async def execute_local_transaction(self, message: Message, arg: Any) -> LocalTransactionState:
        self.executed.append((message, arg))
        return self.decision

    async def check_local_transaction(self, message: MessageExt) -> LocalTransactionState:
        self.checked.append(message)
        return self.later


@pytest.fixture
def topic() -> str:
    return f"TxClient_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def group() -> str:
    return f"PG_txc_{uuid.uuid4().hex[:10]}"


def stored(app: BrokerApp, topic: str) -> list[MessageExt]:
    assert app.ctx is not None
    store = app.ctx.store
    out: list[MessageExt] = []
    for queue_id in store.queue_ids(topic):
        result = store.get_messages(topic, queue_id, 0, 64)
        if result.found:
            out += record.decode_all(result.body())
    return out


async def test_commit(
    start_broker: StartBroker, namesrv: NamesrvApp, topic: str, group: str
) -> None:
    app = await start_broker(**QUIET)
    ledger = Ledger(LocalTransactionState.COMMIT_MESSAGE)
    async with TransactionProducer(group, ledger, namesrv.address) as producer:
        message = Message(topic, b"order 1")
        message.tags = "TagA"
        result = await producer.send_message_in_transaction(message, arg={"order": 1})
        assert result.status is SendStatus.SEND_OK
        assert result.local_transaction_state is LocalTransactionState.COMMIT_MESSAGE
        assert result.transaction_id == result.msg_id
        await wait_until(lambda: bool(stored(app, topic)), "committed")
    [(executed, arg)] = ledger.executed
    assert arg == {"order": 1}
    assert executed.properties["TRAN_MSG"] == "true"
    assert executed.properties["PGROUP"] == group
    [real] = stored(app, topic)
    assert (real.body, real.tags, real.unique_key) == (b"order 1", "TagA", result.msg_id)
    assert real.queue_id == result.queue.queue_id
    assert sysflag.transaction_type(real.sys_flag) is sysflag.TransactionType.COMMIT
    [half] = stored(app, topics.TRANS_HALF_TOPIC)
    assert half.msg_id == result.offset_msg_id
    assert real.prepared_transaction_offset == half.commit_log_offset
    assert ledger.checked == []


async def test_rollback(
    start_broker: StartBroker, namesrv: NamesrvApp, topic: str, group: str
) -> None:
    app = await start_broker(**QUIET)
    ledger = Ledger(LocalTransactionState.ROLLBACK_MESSAGE)
    async with TransactionProducer(group, ledger, namesrv.address) as producer:
        result = await producer.send_message_in_transaction(Message(topic, b"cancelled"))
        assert result.local_transaction_state is LocalTransactionState.ROLLBACK_MESSAGE
        await wait_until(lambda: bool(stored(app, topics.TRANS_OP_HALF_TOPIC)), "rolled back")
    assert stored(app, topic) == []


async def test_unknown_is_resolved_by_the_check(
    start_broker: StartBroker, namesrv: NamesrvApp, topic: str, group: str
) -> None:
    app = await start_broker(**EAGER)
    ledger = Ledger(LocalTransactionState.UNKNOW, later=LocalTransactionState.COMMIT_MESSAGE)
    async with TransactionProducer(group, ledger, namesrv.address) as producer:
        result = await producer.send_message_in_transaction(Message(topic, b"maybe"))
        assert result.local_transaction_state is LocalTransactionState.UNKNOW
        await wait_until(lambda: bool(stored(app, topic)), "committed through the check-back")
    checked = ledger.checked[0]
    assert (checked.topic, checked.queue_id, checked.body) == (
        topic,
        result.queue.queue_id,
        b"maybe",
    )
    assert checked.unique_key == result.msg_id
    assert [m.unique_key for m in stored(app, topic)] == [result.msg_id]


async def test_a_failing_local_transaction_counts_as_unknown(
    start_broker: StartBroker, namesrv: NamesrvApp, topic: str, group: str
) -> None:
    app = await start_broker(**EAGER)

    class Failing(Ledger):
        async def execute_local_transaction(
            self, message: Message, arg: Any
        ) -> LocalTransactionState:
            raise RuntimeError("database down")

    ledger = Failing(
        LocalTransactionState.COMMIT_MESSAGE, later=LocalTransactionState.ROLLBACK_MESSAGE
    )
    async with TransactionProducer(group, ledger, namesrv.address) as producer:
        result = await producer.send_message_in_transaction(Message(topic, b"lost"))
        assert result.local_transaction_state is LocalTransactionState.UNKNOW
        await wait_until(lambda: bool(ledger.checked), "checked back")
        await wait_until(lambda: bool(stored(app, topics.TRANS_OP_HALF_TOPIC)), "rolled back")
    assert stored(app, topic) == []


async def test_delayed_messages_are_refused(namesrv: NamesrvApp, topic: str, group: str) -> None:
    ledger = Ledger(LocalTransactionState.COMMIT_MESSAGE)
    async with TransactionProducer(group, ledger, namesrv.address) as producer:
        message = Message(topic, b"later")
        message.delay_level = 3
        with pytest.raises(MessageValidationError):
            await producer.send_message_in_transaction(message)
    assert ledger.executed == []
