"""Queue locks for orderly consumers: LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42)
(docs/protocol.md §7.4).

Both carry a ``LockBatchRequestBody`` and no header. Lock answers 0 with the queues the
client now owns (``{"lockOKMQSet":[...]}``), which may be fewer than it asked for; unlock
answers 0 with no body. The table is :class:`~rocketkube.broker.consumers.locks.QueueLockTable`.
"""

from __future__ import annotations

from rocketkube.broker.consumers.locks import QueueLockTable
from rocketkube.broker.context import BrokerContext
from rocketkube.common.protocol.consumer_headers import LockBatchRequestBody, LockBatchResponseBody
from rocketkube.common.remoting.codes import RequestCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Processor

__all__ = ["LockProcessors", "table"]


class LockProcessors:
    def __init__(self, locks: QueueLockTable) -> None:
        self.locks = locks

    def table(self) -> dict[int, Processor]:
        return {
            RequestCode.LOCK_BATCH_MQ: self.lock_batch,
            RequestCode.UNLOCK_BATCH_MQ: self.unlock_batch,
        }

    def lock_batch(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        body = LockBatchRequestBody.decode(req.body)
        owned = self.locks.try_lock(body.consumer_group, body.mq_set, body.client_id)
        return RemotingCommand.response(body=LockBatchResponseBody(frozenset(owned)).encode())

    def unlock_batch(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        body = LockBatchRequestBody.decode(req.body)
        self.locks.unlock(body.consumer_group, body.mq_set, body.client_id)
        return RemotingCommand.response()


def table(ctx: BrokerContext) -> dict[int, Processor]:
    """The lock codes over a lock table of their own, timed by the broker's clock."""
    locks = QueueLockTable(ctx.clock, ctx.settings.rebalance_lock_max_live_time)
    return LockProcessors(locks).table()
