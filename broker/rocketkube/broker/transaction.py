"""Transactional messages on the broker: half/op bookkeeping and the check-back service
(docs/protocol.md §11; Java ``TransactionalMessageServiceImpl``,
``TransactionalMessageBridge``, ``TransactionalMessageCheckService``).

Topics, all with queue 0 only::

    RMQ_SYS_TRANS_HALF_TOPIC     half messages (stored by the send path, REAL_TOPIC/REAL_QID
                                 in their properties); re-put at the end after every check
    RMQ_SYS_TRANS_OP_HALF_TOPIC  one op message per resolved half: tag "d", body = the
                                 half's queue offset in decimal
    TRANS_CHECK_MAX_TIME_TOPIC   halves checked ``transactionCheckMax`` times, discarded

The checker scans, every ``transactionCheckInterval`` ms, the half queue from its progress
offset. A half with an op entry is done. One older than ``transactionTimeOut`` (or its
``CHECK_IMMUNITY_TIME_IN_SECONDS``) gets ``TRANSACTION_CHECK_TIMES`` + 1 and is re-put at
the end of the half queue; the copy's offsets go to one live producer channel of its
``PGROUP`` in a CHECK_TRANSACTION_STATE (39, oneway). A half checked ``transactionCheckMax``
times, or older than ``fileReservedTime``, is discarded instead. A younger half stops the
scan: later ones are younger still. Progress is kept as consumer offsets of group
``CID_RMQ_SYS_TRANS`` on the half and op topics, so it survives restarts; the op offset only
moves over op entries known to be done (Java ``calculateOpOffset``).

Where this differs from Java: an END_TRANSACTION for a half whose ``UNIQ_KEY`` was already
committed or rolled back by this broker process (the original request racing a check-back
answer) writes the op entry but never a second real message, and the checker settles such
copies without asking the producer. Java delivers the message twice in that race.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from rocketkube.broker import topics as topic_names
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.store import InnerMessage, PutResult
from rocketkube.common import errors
from rocketkube.common.message import ids, record, sysflag
from rocketkube.common.message.model import MessageExt
from rocketkube.common.message.properties import PropertyName, encode_properties
from rocketkube.common.protocol import permission
from rocketkube.common.protocol.transaction_headers import CheckTransactionStateRequestHeader
from rocketkube.common.remoting.codes import RequestCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.tasks import cancel_and_wait

__all__ = [
    "CHECK_GROUP",
    "HALF_QUEUE_ID",
    "OP_TAG",
    "CheckProgress",
    "TransactionCheckService",
    "TransactionalMessageService",
    "check_deadline_ms",
    "op_progress",
]

log = logging.getLogger(__name__)

CHECK_GROUP: Final = "CID_RMQ_SYS_TRANS"
"""The consumer group whose offsets on the half and op topics are the checker's progress."""
HALF_QUEUE_ID: Final = 0
OP_TAG: Final = "d"
#: Language the broker writes on the requests it sends to clients, as Java's broker does.
BROKER_LANGUAGE: Final = "JAVA"
#: Half messages decoded between two yields to the event loop during a scan.
_SCAN_SLICE: Final = 64
#: Op and half messages read per store call.
_READ_BATCH: Final = 32
#: UNIQ_KEYs of resolved transactions remembered to refuse a second commit.
_RESOLVED_MEMORY: Final = 65_536
_RW: Final = permission.PERM_READ | permission.PERM_WRITE
_HOUR: Final = 3_600_000
_P = PropertyName


# -- pure scheduling arithmetic ---------------------------------------------------------------


def op_progress(old_offset: int, done: Iterable[int]) -> int:
    """The op queue offset the checker may commit: past every done op entry contiguous
    with ``old_offset`` (Java ``calculateOpOffset``)."""
    offset = old_offset
    for entry in sorted(set(done)):
        if entry < offset:
            continue
        if entry != offset:
            break
        offset += 1
    return offset


def check_deadline_ms(properties: Mapping[str, str], timeout_ms: int) -> tuple[int, bool]:
    """How old a half must be before it is checked, and whether the message chose it.

    ``CHECK_IMMUNITY_TIME_IN_SECONDS`` (when a number) overrides ``transactionTimeOut``.
    """
    text = properties.get(_P.CHECK_IMMUNITY_TIME_IN_SECONDS)
    if text is None:
        return timeout_ms, False
    try:
        return int(text) * 1000, True
    except ValueError:
        return timeout_ms, False


@dataclass(slots=True)
class CheckProgress:
    """One scan's view of the op queue: which half offsets are resolved, which op entries
    are done."""

    half_offset: int
    removed: dict[int, int] = field(default_factory=dict)
    """half queue offset -> op queue offset, for ops of halves not yet passed."""
    done_ops: list[int] = field(default_factory=list)
    resolved_halves: set[int] = field(default_factory=set)
    """Every half queue offset an op entry read in this scan names."""

    def add_op(self, op_offset: int, half_offset: int | None) -> None:
        """Account one op entry (``None``: an unreadable body, done at once)."""
        if half_offset is not None:
            self.resolved_halves.add(half_offset)
        if half_offset is None or half_offset < self.half_offset:
            self.done_ops.append(op_offset)
        else:
            self.removed[half_offset] = op_offset

    def resolve(self, half_offset: int) -> bool:
        """Whether the half at ``half_offset`` has an op entry (which becomes done)."""
        op = self.removed.pop(half_offset, None)
        if op is None:
            return False
        self.done_ops.append(op)
        return True


# -- half and op messages ---------------------------------------------------------------------


class TransactionalMessageService:
    """Reads half messages and writes what resolves them: real, op, re-put and discard."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self._broker_host = ids.pack_host(*ids.split_host_port(ctx.broker_addr))
        self._resolved: collections.OrderedDict[str, None] = collections.OrderedDict()

    def half_message(self, commit_log_offset: int) -> MessageExt | None:
        """The half message stored at ``commit_log_offset``, or ``None`` if there is none."""
        try:
            message = self.ctx.store.lookup_message_ext(commit_log_offset)
        except errors.MessageFormatError:
            return None
        if message is None or message.topic != topic_names.TRANS_HALF_TOPIC:
            return None
        return message

    def half_at(self, queue_offset: int) -> MessageExt | None:
        """The half message at a queue offset of the half queue, or ``None``."""
        result = self.ctx.store.get_messages(
            topic_names.TRANS_HALF_TOPIC, HALF_QUEUE_ID, queue_offset, 1
        )
        if not result.found or result.queue_offsets[0] != queue_offset:
            return None
        return record.decode(result.body())

    def is_resolved(self, half: MessageExt) -> bool:
        """Whether this process already committed or rolled back ``half``'s transaction."""
        key = half.unique_key
        return key is not None and key in self._resolved

    def remember_resolved(self, half: MessageExt) -> None:
        key = half.unique_key
        if key is None:
            return
        self._resolved[key] = None
        self._resolved.move_to_end(key)
        while len(self._resolved) > _RESOLVED_MEMORY:
            self._resolved.popitem(last=False)

    def commit(self, half: MessageExt) -> PutResult:
        """Store the real message of ``half``: real topic and queue, tx type COMMIT,
        ``preparedTransactionOffset`` = the half's commit log offset."""
        properties = dict(half.properties)
        topic = properties.pop(_P.REAL_TOPIC, half.topic)
        queue_text = properties.pop(_P.REAL_QID, "0")
        properties.pop(_P.TRAN_MSG, None)
        return self.ctx.store.put_message(
            InnerMessage(
                topic,
                int(queue_text) if queue_text.isdigit() else 0,
                half.body,
                encode_properties(properties).encode("utf-8", "replace"),
                half.flag,
                sysflag.with_transaction_type(half.sys_flag, sysflag.TRANSACTION_COMMIT_TYPE),
                half.born_timestamp,
                _packed(half.born_host),
                half.reconsume_times,
                half.commit_log_offset,
            )
        )

    def write_op(self, half: MessageExt) -> PutResult:
        """Mark ``half`` resolved: an op message tagged "d" holding its queue offset."""
        self.ctx.topics.create_system_like(topic_names.TRANS_OP_HALF_TOPIC, 1, _RW)
        properties = {_P.TAGS: OP_TAG, _P.WAIT: "true"}
        return self.ctx.store.put_message(
            InnerMessage(
                topic_names.TRANS_OP_HALF_TOPIC,
                half.queue_id,
                str(half.queue_offset).encode(),
                encode_properties(properties).encode(),
                0,
                0,
                self.ctx.clock(),
                self._broker_host,
            )
        )

    def put_back(self, half: MessageExt, properties: dict[str, str]) -> MessageExt | None:
        """Re-put ``half`` with ``properties`` at the end of the half queue; the copy as
        stored (its new offsets), or ``None`` when the store refused it."""
        result = self.ctx.store.put_message(
            InnerMessage(
                topic_names.TRANS_HALF_TOPIC,
                HALF_QUEUE_ID,
                half.body,
                encode_properties(properties).encode("utf-8", "replace"),
                half.flag,
                half.sys_flag,
                half.born_timestamp,
                _packed(half.born_host),
                half.reconsume_times,
            )
        )
        if not result.ok:
            log.warning("re-put of half message %s failed: %s", half.unique_key, result.status)
            return None
        stored = result.appended[0]
        return replace(
            half,
            properties=properties,
            queue_offset=stored.queue_offset,
            commit_log_offset=stored.physical_offset,
        )

    def discard(self, half: MessageExt) -> bool:
        """Move a half checked too often to ``TRANS_CHECK_MAX_TIME_TOPIC``."""
        self.ctx.topics.create_system_like(topic_names.TRANS_CHECK_MAX_TIME_TOPIC, 1, _RW)
        result = self.ctx.store.put_message(
            InnerMessage(
                topic_names.TRANS_CHECK_MAX_TIME_TOPIC,
                0,
                half.body,
                encode_properties(half.properties).encode("utf-8", "replace"),
                half.flag,
                0,
                half.born_timestamp,
                _packed(half.born_host),
                half.reconsume_times,
            )
        )
        if result.ok:
            log.warning("half message %s discarded after %s checks", half.unique_key,
                        half.properties.get(_P.TRANSACTION_CHECK_TIMES))  # fmt: skip
        return result.ok


def _packed(host: str) -> bytes:
    try:
        return ids.pack_host(*ids.split_host_port(host))
    except errors.MessageFormatError:
        return bytes(8)


# -- the check-back service -------------------------------------------------------------------


class TransactionCheckService:
    """Runs :meth:`check` every ``transactionCheckInterval`` ms until :meth:`stop`."""

    def __init__(self, ctx: BrokerContext, service: TransactionalMessageService) -> None:
        self.ctx = ctx
        self.service = service
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
            await asyncio.sleep(self.ctx.settings.transaction_check_interval / 1000)
            try:
                await self.check()
            except Exception:
                log.exception("transaction check failed")

    async def check(self) -> None:
        """One scan of the half queue (see the module docstring)."""
        ctx = self.ctx
        store = ctx.store
        half_topic = topic_names.TRANS_HALF_TOPIC
        op_topic = topic_names.TRANS_OP_HALF_TOPIC
        half_max = store.max_offset(half_topic, HALF_QUEUE_ID)
        if half_max == 0:
            return
        ctx.topics.create_system_like(half_topic, 1, _RW)
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
        ctx.offsets.commit(CHECK_GROUP, half_topic, HALF_QUEUE_ID, offset)
        ctx.offsets.commit(
            CHECK_GROUP, op_topic, HALF_QUEUE_ID, op_progress(op_offset, progress.done_ops)
        )

    def _progress(self, topic: str) -> int:
        stored = self.ctx.offsets.query(CHECK_GROUP, topic, HALF_QUEUE_ID)
        low = self.ctx.store.min_offset(topic, HALF_QUEUE_ID)
        return low if stored < 0 else max(stored, low)

    def _read_ops(self, progress: CheckProgress, op_offset: int) -> None:
        store = self.ctx.store
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
        settings = self.ctx.settings
        age = self.ctx.clock() - half.born_timestamp
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
        channels = [c for c in self.ctx.clients.producer_channels(group) if c.conn.is_open]
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
