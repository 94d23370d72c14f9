"""Transactional sends (docs/protocol.md §11; Java ``TransactionMQProducer``).

:meth:`TransactionProducer.send_message_in_transaction`::

    half message (TRAN_MSG=true, PGROUP, sysFlag PREPARED)  -> broker stores it, invisible
    listener.execute_local_transaction(message, arg)         -> COMMIT / ROLLBACK / UNKNOW
    END_TRANSACTION (37, oneway) commitOrRollback 8 / 12 / 0 -> broker writes the real
                                                                message (commit) or not

A half left unknown (or whose END_TRANSACTION was lost) is checked back by the broker:
CHECK_TRANSACTION_STATE (39) arrives on the connection this producer registered by
heartbeat; ``listener.check_local_transaction`` decides, and the answer goes back on that
connection as END_TRANSACTION with ``fromTransactionCheck=true``.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from dataclasses import dataclass
from typing import Any, Final, Protocol

from rocketkube.client import errors as client_errors
from rocketkube.client.producer.producer import Producer, SendResult, SendStatus
from rocketkube.client.producer.settings import ProducerSettings
from rocketkube.common import errors
from rocketkube.common.message import ids, record, sysflag
from rocketkube.common.message.model import Message, MessageExt
from rocketkube.common.message.properties import PropertyName
from rocketkube.common.protocol.transaction_headers import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
)
from rocketkube.common.remoting.codes import RequestCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply

__all__ = [
    "LocalTransactionState",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
]

log = logging.getLogger(__name__)


class LocalTransactionState(enum.StrEnum):
    """What the local transaction decided (Java ``LocalTransactionState``)."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"
    """Not decided yet: the broker will ask again (Java's spelling)."""


_END_TYPE: Final = {
    LocalTransactionState.COMMIT_MESSAGE: sysflag.TRANSACTION_COMMIT_TYPE,
    LocalTransactionState.ROLLBACK_MESSAGE: sysflag.TRANSACTION_ROLLBACK_TYPE,
    LocalTransactionState.UNKNOW: sysflag.TRANSACTION_NOT_TYPE,
}


class TransactionListener(Protocol):
    """The application's side of a transaction."""

    async def execute_local_transaction(self, message: Message, arg: Any) -> LocalTransactionState:
        """Run the local transaction of a half message just stored; an exception counts
        as UNKNOW."""
        ...

    async def check_local_transaction(self, message: MessageExt) -> LocalTransactionState:
        """The state of the transaction of ``message`` (a half the broker checks back)."""
        ...


@dataclass(frozen=True, slots=True)
class TransactionSendResult(SendResult):
    """A :class:`SendResult` plus what the local transaction decided."""

    local_transaction_state: LocalTransactionState
    transaction_id: str


class TransactionProducer(Producer):
    """A :class:`Producer` whose :meth:`send_message_in_transaction` runs ``listener``.

    Takes the keyword arguments of :class:`Producer`, or its ``settings=`` (then ``group``
    is None: ``TransactionProducer(None, listener, settings=...)``). The group should be
    used by this kind of producer only: brokers check halves back on any producer of the
    group.
    """

    def __init__(
        self,
        group: str | None,
        listener: TransactionListener,
        namesrv_addr: str = ProducerSettings.namesrv_addr,
        **options: Any,
    ) -> None:
        super().__init__(group, namesrv_addr, **options)
        self.listener = listener
        self._checks: set[asyncio.Task[None]] = set()

    async def close(self) -> None:
        """Stop answering checks, then close as a :class:`Producer`."""
        for task in list(self._checks):
            task.cancel()
        if self._checks:
            await asyncio.gather(*self._checks, return_exceptions=True)
        await super().close()

    async def send_message_in_transaction(
        self, message: Message, arg: Any = None
    ) -> TransactionSendResult:
        """Send ``message`` as a half, run the local transaction, then end it.

        Delayed messages are refused (:class:`MessageValidationError`). A half not stored
        with SEND_OK is rolled back without running the local transaction. Errors of the
        oneway END_TRANSACTION are logged: the broker's check-back settles the half.
        """
        if message.delay_level > 0:
            raise client_errors.MessageValidationError(
                "delayed messages cannot be sent in a transaction"
            )
        message.properties[PropertyName.TRAN_MSG] = "true"
        message.properties[PropertyName.PGROUP] = self.group
        result = await self.send(message)
        transaction_id = message.unique_key or result.msg_id
        state = LocalTransactionState.ROLLBACK_MESSAGE
        if result.status is SendStatus.SEND_OK:
            try:
                state = await self.listener.execute_local_transaction(message, arg)
            except Exception:
                log.exception("local transaction of %s failed", transaction_id)
                state = LocalTransactionState.UNKNOW
        try:
            await self._end_transaction(result, state)
        except (errors.RemotingError, client_errors.MQClientError, errors.MessageFormatError):
            log.warning("END_TRANSACTION of %s failed; the broker will check it back",
                        transaction_id, exc_info=True)  # fmt: skip
        return TransactionSendResult(
            status=result.status,
            msg_id=result.msg_id,
            offset_msg_id=result.offset_msg_id,
            queue=result.queue,
            queue_offset=result.queue_offset,
            local_transaction_state=state,
            transaction_id=transaction_id,
        )

    async def _end_transaction(self, result: SendResult, state: LocalTransactionState) -> None:
        """END_TRANSACTION (oneway) to the master of the broker that stored the half."""
        client, routes = self._started()
        _, _, commit_log_offset = ids.decode_offset_msg_id(result.offset_msg_id)
        info = await routes.get(result.queue.topic)
        addr = self._master(info, result.queue)
        header = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=result.queue_offset,
            commit_log_offset=commit_log_offset,
            commit_or_rollback=_END_TYPE[state],
            msg_id=result.msg_id,
            transaction_id=result.msg_id,
        )
        request = RemotingCommand.request(RequestCode.END_TRANSACTION, header.encode(), oneway=True)
        await client.invoke_oneway(addr, request)

    # -- check-back ------------------------------------------------------------------------

    def handle(self, conn: Connection, request: RemotingCommand) -> Reply:
        """Serve CHECK_TRANSACTION_STATE with the listener; anything else as a producer."""
        if request.code != RequestCode.CHECK_TRANSACTION_STATE:
            return super().handle(conn, request)
        if self._closed:
            return None
        try:
            header = CheckTransactionStateRequestHeader.decode(request.ext_fields)
            message = record.decode(request.body_bytes())
        except (errors.HeaderError, errors.ProtocolError) as exc:
            log.warning("bad transaction check from %s: %s", conn.remote_address, exc)
            return None
        group = message.properties.get(PropertyName.PGROUP)
        if group is not None and group != self.group:
            log.warning("transaction check for group %r sent to %r", group, self.group)
            return None
        task = asyncio.get_running_loop().create_task(self._answer_check(conn, header, message))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)
        return None

    async def _answer_check(
        self, conn: Connection, header: CheckTransactionStateRequestHeader, message: MessageExt
    ) -> None:
        """Ask the listener, then answer on the connection the check came on."""
        try:
            state = await self.listener.check_local_transaction(message)
        except Exception:
            log.exception("check of local transaction %s failed", header.transaction_id)
            state = LocalTransactionState.UNKNOW
        end = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=header.tran_state_table_offset,
            commit_log_offset=header.commit_log_offset,
            commit_or_rollback=_END_TYPE[state],
            msg_id=message.unique_key or header.msg_id or message.msg_id,
            from_transaction_check=True,
            transaction_id=header.transaction_id,
        )
        if not conn.is_open:
            log.info("check of %s answered after the connection closed", header.transaction_id)
            return
        try:
            conn.invoke_oneway(
                RemotingCommand.request(RequestCode.END_TRANSACTION, end.encode(), oneway=True)
            )
        except errors.RemotingError as exc:
            log.info("could not answer the check of %s: %s", header.transaction_id, exc)
