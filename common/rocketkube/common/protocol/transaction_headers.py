"""Headers of END_TRANSACTION (37, producer -> broker, oneway) and CHECK_TRANSACTION_STATE
(39, broker -> producer, oneway), docs/protocol.md §11. Java's ``EndTransactionRequestHeader`` and
``CheckTransactionStateRequestHeader``; the body of 39 is the half message in the stored layout
(docs/store.md §2.1) with the real topic and queue id."""

from __future__ import annotations

from dataclasses import dataclass

from rocketkube.common.remoting.header import CommandHeader

__all__ = ["CheckTransactionStateRequestHeader", "EndTransactionRequestHeader"]


@dataclass(frozen=True, slots=True)
class EndTransactionRequestHeader(CommandHeader):
    """``commit_or_rollback``: 0 unknown (ignored), 8 commit, 12 rollback (sysflag values);
    ``tran_state_table_offset`` is the half message's queue offset, ``commit_log_offset`` its
    physical offset, ``msg_id`` its UNIQ_KEY."""

    producer_group: str
    tran_state_table_offset: int
    commit_log_offset: int
    commit_or_rollback: int
    msg_id: str
    from_transaction_check: bool = False
    transaction_id: str | None = None


@dataclass(frozen=True, slots=True)
class CheckTransactionStateRequestHeader(CommandHeader):
    tran_state_table_offset: int
    commit_log_offset: int
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None
