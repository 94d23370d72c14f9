"""Half and op messages (Java ``TransactionalMessageBridge``): reads the half messages a
transactional send stored, and writes what resolves them: the real message on commit, the op
entry marking a half done, a re-put copy at the end of the half queue, a discarded half.

Where this differs from Java: it remembers the ``UNIQ_KEY``s this process committed or rolled
back, so an END_TRANSACTION racing a check-back answer writes no second real message.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Final

from rocketkube.broker import topics as topic_names
from rocketkube.broker.store import InnerMessage, MessageStore, PutResult
from rocketkube.broker.topics import TopicConfigManager
from rocketkube.common import errors
from rocketkube.common.message import ids, record, sysflag
from rocketkube.common.message.model import MessageExt
from rocketkube.common.message.properties import PropertyName, encode_properties
from rocketkube.common.protocol import permission

__all__ = ["HALF_QUEUE_ID", "OP_TAG", "TransactionalMessageService"]

log = logging.getLogger(__name__)

HALF_QUEUE_ID: Final = 0
OP_TAG: Final = "d"
#: UNIQ_KEYs of resolved transactions remembered to refuse a second commit.
_RESOLVED_MEMORY: Final = 65_536
_RW: Final = permission.PERM_READ | permission.PERM_WRITE
_P = PropertyName


class TransactionalMessageService:
    """Reads half messages and writes what resolves them: real, op, re-put and discard."""

    def __init__(
        self,
        store: MessageStore,
        topics: TopicConfigManager,
        clock: Callable[[], int],
        broker_addr: str,
    ) -> None:
        self.store = store
        self.topics = topics
        self._clock = clock
        self._broker_host = ids.pack_host(*ids.split_host_port(broker_addr))
        self._resolved: collections.OrderedDict[str, None] = collections.OrderedDict()

    def half_message(self, commit_log_offset: int) -> MessageExt | None:
        """The half message stored at ``commit_log_offset``, or ``None`` if there is none."""
        try:
            message = self.store.lookup_message_ext(commit_log_offset)
        except errors.MessageFormatError:
            return None
        if message is None or message.topic != topic_names.TRANS_HALF_TOPIC:
            return None
        return message

    def half_at(self, queue_offset: int) -> MessageExt | None:
        """The half message at a queue offset of the half queue, or ``None``."""
        result = self.store.get_messages(
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
        return self.store.put_message(
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
        self.topics.create_system_like(topic_names.TRANS_OP_HALF_TOPIC, 1, _RW)
        properties = {_P.TAGS: OP_TAG, _P.WAIT: "true"}
        return self.store.put_message(
            InnerMessage(
                topic_names.TRANS_OP_HALF_TOPIC,
                half.queue_id,
                str(half.queue_offset).encode(),
                encode_properties(properties).encode(),
                0,
                0,
                self._clock(),
                self._broker_host,
            )
        )

    def put_back(self, half: MessageExt, properties: dict[str, str]) -> MessageExt | None:
        """Re-put ``half`` with ``properties`` at the end of the half queue; the copy as
        stored (its new offsets), or ``None`` when the store refused it."""
        result = self.store.put_message(
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
        self.topics.create_system_like(topic_names.TRANS_CHECK_MAX_TIME_TOPIC, 1, _RW)
        result = self.store.put_message(
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
