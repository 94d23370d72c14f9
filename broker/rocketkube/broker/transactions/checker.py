"""The check-back service (Java ``TransactionalMessageCheckService``): every
``transactionCheckInterval`` ms, one scan of the half queue from the checker's progress,
asking a live producer of each old enough unresolved half for its state
(CHECK_TRANSACTION_STATE, oneway), re-putting or discarding halves as the package docstring
says. Progress is kept as consumer offsets of group ``CID_RMQ_SYS_TRANS``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from typing import Final

from rocketkube.broker import topics as topic_names
from rocketkube.broker.consumers.clients import ClientManager
from rocketkube.broker.consumers.offsets import ConsumerOffsetManager
from rocketkube.broker.settings import BrokerSettings
from rocketkube.broker.store import MessageStore
from rocketkube.broker.topics import TopicConfigManager
from rocketkube.broker.transactions.half import HALF_QUEUE_ID, OP_TAG, TransactionalMessageService
from rocketkube.broker.transactions.progress import CheckProgress, check_deadline_ms, op_progress
from rocketkube.common import errors
from rocketkube.common.message import record
from rocketkube.common.message.model import MessageExt
from rocketkube.common.message.properties import PropertyName, encode_properties
from rocketkube.common.protocol import permission
from rocketkube.common.protocol.transaction_headers import CheckTransactionStateRequestHeader
from rocketkube.common.remoting.codes import RequestCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.tasks import cancel_and_wait

__all__ = ["CHECK_GROUP", "TransactionCheckService", "check_body"]

log = logging.getLogger(__name__)

CHECK_GROUP: Final = "CID_RMQ_SYS_TRANS"
"""The consumer group whose offsets on the half and op topics are the checker's progress."""
#: Language the broker writes on the requests it sends to clients, as Java's broker does.
BROKER_LANGUAGE: Final = "JAVA"
#: Half messages decoded between two yields to the event loop during a scan.
_SCAN_SLICE: Final = 64
#: Op and half messages read per store call.
_READ_BATCH: Final = 32
_HOUR: Final = 3_600_000
_RW: Final = permission.PERM_READ | permission.PERM_WRITE
_P = PropertyName


class TransactionCheckService:
    """Runs :meth:`check` every ``transactionCheckInterval`` ms until :meth:`stop`."""

    def __init__(
        self,
        service: TransactionalMessageService,
        *,
        settings: BrokerSettings,
        store: MessageStore,
        topics: TopicConfigManager,
        offsets: ConsumerOffsetManager,
        clients: ClientManager,
        clock: Callable[[], int],
    ) -> None:
        self.service = service
        self._settings = settings
        self._store = store
        self._topics = topics
        self._offsets = offsets
        self._clients = clients
        self._clock = clock
        self._turn = itertools.count()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="transaction-check"
            )

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._settings.transaction_check_interval / 1000)
            try:
                await self.check()
            except Exception:
                log.exception("transaction check failed")

    async def check(self) -> None:
        """One scan of the half queue (see the module docstring)."""
        store = self._store
        half_topic = topic_names.TRANS_HALF_TOPIC
        op_topic = topic_names.TRANS_OP_HALF_TOPIC
        half_max = store.max_offset(half_topic, HALF_QUEUE_ID)
        if half_max == 0:
            return
        self._topics.create_system_like(half_topic, 1, _RW)
        half_offset = self._progress(half_topic)
        op_offset = self._progress(op_topic)
        progress = CheckProgress(half_offset)
        self._read_ops(progress, op_offset)
        offset = half_offset
        while offset < half_max:
            if (offset - half_offset) % _SCAN_SLICE == _SCAN_SLICE - 1:
                await asyncio.sleep(0)
            if progress.resolve(offset):
                offset += 1
                continue
            half = self.service.half_at(offset)
            if half is None:  # removed by retention, or not dispatched yet
                if offset < store.min_offset(half_topic, HALF_QUEUE_ID):
                    offset += 1
                    continue
                break
            if not self._handle(half, progress):
                break
            offset += 1
        self._offsets.commit(CHECK_GROUP, half_topic, HALF_QUEUE_ID, offset)
        self._offsets.commit(
            CHECK_GROUP, op_topic, HALF_QUEUE_ID, op_progress(op_offset, progress.done_ops)
        )

    def _progress(self, topic: str) -> int:
        stored = self._offsets.query(CHECK_GROUP, topic, HALF_QUEUE_ID)
        low = self._store.min_offset(topic, HALF_QUEUE_ID)
        return low if stored < 0 else max(stored, low)

    def _read_ops(self, progress: CheckProgress, op_offset: int) -> None:
        store = self._store
        op_topic = topic_names.TRANS_OP_HALF_TOPIC
        op_max = store.max_offset(op_topic, HALF_QUEUE_ID)
        while op_offset < op_max:
            result = store.get_messages(op_topic, HALF_QUEUE_ID, op_offset, _READ_BATCH)
            if not result.found:
                if result.next_begin_offset <= op_offset:
                    break
                op_offset = result.next_begin_offset
                continue
            for queue_offset, op in zip(
                result.queue_offsets, record.iter_records(result.body()), strict=True
            ):
                text = op.body.decode("ascii", "replace")
                half = int(text) if text.isdigit() and op.tags == OP_TAG else None
                progress.add_op(queue_offset, half)
            op_offset = result.next_begin_offset

    def _handle(self, half: MessageExt, progress: CheckProgress) -> bool:
        """Deal with one unresolved half; ``False`` stops the scan here (too young)."""
        service = self.service
        if service.is_resolved(half):
            service.write_op(half)
            return True
        properties = dict(half.properties)
        checks_text = properties.get(_P.TRANSACTION_CHECK_TIMES, "0")
        checks = int(checks_text) if checks_text.isdigit() else 0
        settings = self._settings
        age = self._clock() - half.born_timestamp
        if checks >= settings.transaction_check_max or age > settings.file_reserved_time * _HOUR:
            return service.discard(half)
        deadline, immune = check_deadline_ms(properties, settings.transaction_timeout)
        if 0 <= age < deadline:
            if not immune:
                return False
            prepared = properties.get(_P.TRAN_PREPARED_QUEUE_OFFSET)
            if prepared is None:  # move it out of the way, remembering where it was
                properties[_P.TRAN_PREPARED_QUEUE_OFFSET] = str(half.queue_offset)
                return service.put_back(half, properties) is not None
            original = int(prepared) if prepared.isdigit() else -1
            return progress.resolve(original) or original in progress.resolved_halves
        properties[_P.TRANSACTION_CHECK_TIMES] = str(checks + 1)
        copy = service.put_back(half, properties)
        if copy is None:
            return False
        self._send_check(copy)
        return True

    def _send_check(self, half: MessageExt) -> None:
        """CHECK_TRANSACTION_STATE (oneway) to one live channel of the half's producer group."""
        group = half.properties.get(_P.PGROUP, "")
        channels = [c for c in self._clients.producer_channels(group) if c.conn.is_open]
        if not channels:
            log.info("no live producer of group %r to check %s", group, half.unique_key)
            return
        channel = channels[next(self._turn) % len(channels)]
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=half.queue_offset,
            commit_log_offset=half.commit_log_offset,
            msg_id=half.unique_key,
            transaction_id=half.unique_key,
            offset_msg_id=half.msg_id,
        )
        request = RemotingCommand.request(
            RequestCode.CHECK_TRANSACTION_STATE,
            header.encode(),
            check_body(half),
            oneway=True,
            language=BROKER_LANGUAGE,
        )
        try:
            channel.conn.invoke_oneway(request)
        except errors.RemotingError:
            log.debug("could not check %s on %s: closed", half.unique_key, channel.client_addr)


def check_body(half: MessageExt) -> bytes:
    """The CHECK_TRANSACTION_STATE body: ``half`` in the stored layout (docs/store.md §2.1),
    with its real topic and queue id (Java ``MessageDecoder.encode``)."""
    properties = half.properties
    queue_text = properties.get(_P.REAL_QID, "")
    return record.encode(
        topic=properties.get(_P.REAL_TOPIC, half.topic),
        body=half.body,
        properties=encode_properties(properties),
        queue_id=int(queue_text) if queue_text.isdigit() else half.queue_id,
        flag=half.flag,
        queue_offset=half.queue_offset,
        physical_offset=half.commit_log_offset,
        sys_flag=half.sys_flag,
        born_timestamp=half.born_timestamp,
        born_host=half.born_host,
        store_timestamp=half.store_timestamp,
        store_host=half.store_host,
        reconsume_times=half.reconsume_times,
        prepared_transaction_offset=half.prepared_transaction_offset,
    )
