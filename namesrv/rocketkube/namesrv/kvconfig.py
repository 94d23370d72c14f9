"""Namespaced key/value config (KVConfigManager), persisted to ``kvConfigPath``.

File format, as RocketMQ writes it: ``{"configTable":{"<namespace>":{"<key>":"<value>"}}}``.
Every change is written atomically, in a worker thread (the loop serving route lookups
meanwhile), before the request is answered.
"""

from __future__ import annotations

import logging
from pathlib import Path

from rocketkube.common import atomic_file, fastjson

log = logging.getLogger(__name__)

#: Namespace holding ``topic -> "brokerA:4;brokerB:4"`` for ordered topics.
ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


class KVConfig:
    def __init__(self, path: str | Path) -> None:
        self.saver = atomic_file.BackgroundSaver(
            Path(path), lambda: fastjson.dumps({"configTable": self.table})
        )
        self.table: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        data = atomic_file.load_text(self.saver.path, fastjson.loads)
        if data is None:
            return
        table = data.get("configTable") or {}
        self.table = {str(ns): {str(k): str(v) for k, v in kv.items()} for ns, kv in table.items()}
        log.info("loaded %d KV namespaces from %s", len(self.table), self.saver.path)

    def put(self, namespace: str, key: str, value: str) -> None:
        self.table.setdefault(namespace, {})[key] = value
        self.saver.changed()

    def get(self, namespace: str, key: str) -> str | None:
        return self.table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        kv = self.table.get(namespace)
        if kv is not None and kv.pop(key, None) is not None:
            if not kv:
                del self.table[namespace]
            self.saver.changed()

    def namespace(self, namespace: str) -> dict[str, str] | None:
        kv = self.table.get(namespace)
        return dict(kv) if kv else None
