"""What the send path (:mod:`.processor`) carries between its stages: a topic's cached checks
and the stored sends waiting for their flush (a checked send is a
:class:`~rocketkube.broker.store.records.PreparedSend`)."""

from __future__ import annotations

import random
from typing import Final

from rocketkube.broker import topics as topic_names
from rocketkube.broker.store import PutResult
from rocketkube.broker.store.records import PlainTopic
from rocketkube.common.message import sysflag
from rocketkube.common.protocol import permission
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting.deferred import DeferredReply

__all__ = ["TopicState", "Waiting"]

_RETRY: Final = topic_names.RETRY_GROUP_TOPIC_PREFIX


class TopicState:
    """What the hot path needs of one topic, derived once per TopicConfig object."""

    __slots__ = ("config", "multi_tag", "next_queue", "queue_limit", "retry_group", "writable")

    def __init__(self, config: TopicConfig) -> None:
        self.config = config
        self.queue_limit = max(config.read_queue_nums, config.write_queue_nums)
        self.writable = bool(config.perm & permission.PERM_WRITE)
        self.multi_tag = config.topic_filter_type == "MULTI_TAG"
        topic = config.topic_name
        self.retry_group = topic[len(_RETRY) :] if topic.startswith(_RETRY) else None
        self.next_queue = random.randrange(1 << 16)

    def plain(self) -> PlainTopic | None:
        """What a plain send to this topic is told (see :class:`PlainTopic`), or None when
        every send to it is decided by the Python code: not writable, or a retry topic."""
        if not self.writable or self.retry_group is not None:
            return None
        return PlainTopic(self.config, self.queue_limit,
                          sysflag.MULTI_TAGS_FLAG if self.multi_tag else 0)  # fmt: skip

    def pick_queue(self) -> int:
        """Round-robin over the write queues (-1 when there are none)."""
        count = self.config.write_queue_nums
        if count <= 0:
            return -1
        self.next_queue = turn = self.next_queue + 1
        return turn % count


class Waiting:
    """The sends of one put that wait for its flush, in parallel lists.

    A tuple and a put result per send, alive until the flush, would make young garbage
    collections run every few received chunks under SYNC_FLUSH load."""

    __slots__ = ("ends", "firsts", "queue_ids", "replies", "result", "started")

    def __init__(self, result: PutResult) -> None:
        self.result = result
        self.replies: list[DeferredReply] = []
        self.firsts: list[int] = []
        """Each send's first message in ``result.appended``; ``ends``: past its last."""
        self.ends: list[int] = []
        self.queue_ids: list[int] = []
        self.started: list[float] = []
