"""Consumer offsets (ConsumerOffsetManager): ``topic@group -> {queueId: offset}``.

Commits land in memory at once and reach ``config/consumerOffset.json`` every
``flushConsumerOffsetInterval`` and at shutdown, atomically, written in a worker thread
(:class:`BackgroundSaver`). The last write wins, as in RocketMQ: no monotonicity check.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from rocketkube.common import fastjson
from rocketkube.common.atomic_file import BackgroundSaver, load_text

log = logging.getLogger(__name__)

SEPARATOR = "@"


def decode_table(data: dict[str, Any]) -> dict[str, dict[int, int]]:
    """The ``offsetTable`` of ``consumerOffset.json`` / GET_ALL_CONSUMER_OFFSET."""
    return {
        str(k): {int(q): int(o) for q, o in queues.items()}
        for k, queues in (data.get("offsetTable") or {}).items()
    }


def key(topic: str, group: str) -> str:
    return f"{topic}{SEPARATOR}{group}"


class ConsumerOffsetManager:
    def __init__(self, path: Path) -> None:
        self.saver = BackgroundSaver(
            path, lambda: fastjson.dumps(self.to_json(), bare_int_keys=True)
        )
        self.table: dict[str, dict[int, int]] = {}
        self.dirty = False

    def load(self) -> None:
        data = load_text(self.saver.path, fastjson.loads)
        if data is None:
            return
        self.table.update(decode_table(data))
        log.info("loaded offsets of %d topic@group pairs", len(self.table))

    def merge(self, master: dict[str, Any]) -> None:
        """A slave takes its master's offsets (``to_json`` form) over its own."""
        table = decode_table(master)
        if any(self.table.get(k) != queues for k, queues in table.items()):
            self.table.update(table)
            self.dirty = True

    def persist_if_dirty(self) -> None:
        """Start writing the offsets if they changed since the last time."""
        if self.dirty:
            self.dirty = False
            self.saver.changed()

    async def saved(self) -> None:
        """Write the offsets if they changed; return once they are on disk."""
        self.persist_if_dirty()
        await self.saver.flush()

    def to_json(self) -> dict[str, Any]:
        return {"offsetTable": {k: dict(v) for k, v in self.table.items()}}

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.table.setdefault(key(topic, group), {})[queue_id] = offset
        self.dirty = True

    def query(self, group: str, topic: str, queue_id: int) -> int:
        """The stored offset, or -1 when none."""
        return self.table.get(key(topic, group), {}).get(queue_id, -1)

    def groups_of_topic(self, topic: str) -> set[str]:
        return {k.split(SEPARATOR, 1)[1] for k in self.table if k.split(SEPARATOR, 1)[0] == topic}

    def topics_of_group(self, group: str) -> set[str]:
        return {k.split(SEPARATOR, 1)[0] for k in self.table if k.split(SEPARATOR, 1)[1] == group}

    def remove_group(self, group: str) -> None:
        for k in [k for k in self.table if k.split(SEPARATOR, 1)[1] == group]:
            del self.table[k]
            self.dirty = True

    def remove_topic(self, topic: str) -> None:
        for k in [k for k in self.table if k.split(SEPARATOR, 1)[0] == topic]:
            del self.table[k]
            self.dirty = True
