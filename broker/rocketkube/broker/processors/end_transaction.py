"""END_TRANSACTION (37): a producer commits or rolls back a half message
(docs/protocol.md §11.3; Java ``EndTransactionProcessor``).

    slave                      -> 11 SLAVE_NOT_AVAILABLE
    commitOrRollback 0 or other -> nothing (no response: the state is still unknown)
    8 / 12                     -> load the half at commitLogOffset, verify it is a half of
                                  PGROUP at tranStateTableOffset (else 1 SYSTEM_ERROR)
      8 commit                 -> store the real message, then the op "d" entry
      12 rollback              -> the op "d" entry only

Requests are mostly oneway (the connection then drops the answer). Where this differs from
Java: a mismatching queue offset is refused (Java only sets a remark and commits), and a
transaction this broker already resolved gets the op entry but no second real message (see
:mod:`rocketkube.broker.transactions.half`). The answer does not wait for a SYNC_FLUSH flush.
"""

from __future__ import annotations

import logging
from typing import Final

from rocketkube.broker.context import BrokerContext
from rocketkube.broker.settings import BrokerRole
from rocketkube.broker.store import PutResult, PutStatus
from rocketkube.broker.transactions.half import TransactionalMessageService
from rocketkube.common import errors
from rocketkube.common.message import sysflag
from rocketkube.common.message.properties import PropertyName
from rocketkube.common.protocol.transaction_headers import EndTransactionRequestHeader
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Processor

__all__ = ["EndTransactionProcessor", "table"]

log = logging.getLogger(__name__)

#: Put results that count as stored (Java ``sendFinalMessage``).
_STORED: Final = frozenset({PutStatus.PUT_OK, PutStatus.FLUSH_DISK_TIMEOUT})
_PUT_FAILURES: Final = {
    PutStatus.SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
    PutStatus.MESSAGE_ILLEGAL: ResponseCode.MESSAGE_ILLEGAL,
    PutStatus.PROPERTIES_SIZE_EXCEEDED: ResponseCode.MESSAGE_ILLEGAL,
}


class EndTransactionProcessor:
    def __init__(self, ctx: BrokerContext, service: TransactionalMessageService) -> None:
        self.ctx = ctx
        self.service = service

    def table(self) -> dict[int, Processor]:
        return {RequestCode.END_TRANSACTION: self.end_transaction}

    def end_transaction(self, conn: Connection, req: RemotingCommand) -> RemotingCommand | None:
        if self.ctx.settings.broker_role is BrokerRole.SLAVE:
            return _answer(ResponseCode.SLAVE_NOT_AVAILABLE, "the broker is a slave")
        try:
            h = EndTransactionRequestHeader.decode(req.ext_fields)
        except errors.HeaderError as exc:
            return _answer(ResponseCode.SYSTEM_ERROR, str(exc))
        kind = h.commit_or_rollback
        if kind not in (sysflag.TRANSACTION_COMMIT_TYPE, sysflag.TRANSACTION_ROLLBACK_TYPE):
            return None
        half = self.service.half_message(h.commit_log_offset)
        if half is None:
            return _answer(ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        if half.properties.get(PropertyName.PGROUP) != h.producer_group:
            return _answer(ResponseCode.SYSTEM_ERROR, "The producer group wrong")
        if half.queue_offset != h.tran_state_table_offset:
            return _answer(ResponseCode.SYSTEM_ERROR, "The transaction state table offset wrong")
        commit = kind == sysflag.TRANSACTION_COMMIT_TYPE
        log.debug("%s of %s from %s (check: %s)", "commit" if commit else "rollback",
                  h.msg_id, conn.remote_address, h.from_transaction_check)  # fmt: skip
        if commit and not self.service.is_resolved(half):
            failed = _failure(self.service.commit(half))
            if failed is not None:
                return failed
        self.service.remember_resolved(half)
        failed = _failure(self.service.write_op(half))
        return failed if failed is not None else _answer(ResponseCode.SUCCESS, None)


def _failure(result: PutResult) -> RemotingCommand | None:
    if result.status in _STORED:
        return None
    code = _PUT_FAILURES.get(result.status, ResponseCode.SYSTEM_ERROR)
    return _answer(code, f"{result.status}: {result.error}" if result.error else str(result.status))


def _answer(code: int, remark: str | None) -> RemotingCommand:
    return RemotingCommand.response(code, remark)


def table(ctx: BrokerContext, service: TransactionalMessageService) -> dict[int, Processor]:
    return EndTransactionProcessor(ctx, service).table()
