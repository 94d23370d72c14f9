"""Subscription groups (SubscriptionGroupManager), persisted to ``subscriptionGroup.json``
in the background, as topics are (see :mod:`rocketkube.broker.topics`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketkube.common.atomic_file import BackgroundSaver, json_bytes, load_json
from rocketkube.common.protocol.subscription_group import SubscriptionGroupConfig
from rocketkube.common.protocol.topic_config import DataVersion

__all__ = ["SubscriptionGroupConfig", "SubscriptionGroupManager"]

log = logging.getLogger(__name__)


class SubscriptionGroupManager:
    def __init__(self, path: Path, clock: Callable[[], int], *, auto_create: bool = True) -> None:
        self.clock = clock
        self.auto_create = auto_create
        self.saver = BackgroundSaver(path, lambda: json_bytes(self.to_json()))
        self.table: dict[str, SubscriptionGroupConfig] = {}
        self.data_version = DataVersion(clock(), 0)
        for name in ("TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP",
                     "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION",
                     "CID_ONSAPI_OWNER", "CID_RMQ_SYS_TRANS"):  # fmt: skip
            self.table[name] = SubscriptionGroupConfig(name)

    def load(self) -> None:
        data = load_json(self.saver.path)
        if data is None:
            return
        self.table.update(_decode_table(data))
        self.data_version = DataVersion.from_json(data.get("dataVersion"))

    def replace_all(self, master: dict[str, Any]) -> bool:
        """A slave takes its master's groups and data version (``to_json`` form) when the
        version differs; True when anything changed."""
        version = DataVersion.from_json(master.get("dataVersion"))
        if version == self.data_version:
            return False
        self.table = _decode_table(master)
        self.data_version = version
        self.saver.changed()
        return True

    def to_json(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_json(),
            "subscriptionGroupTable": {k: v.to_json() for k, v in self.table.items()},
        }

    def get(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config, auto-created when allowed (findSubscriptionGroupConfig)."""
        config = self.table.get(group)
        if config is None and self.auto_create:
            config = SubscriptionGroupConfig(group)
            self.table[group] = config
            log.info("subscription group %s auto-created", group)
            self._changed()
        return config

    def update(self, config: SubscriptionGroupConfig) -> None:
        self.table[config.group_name] = config
        log.info("subscription group %s updated: %s", config.group_name, config)
        self._changed()

    def delete(self, group: str) -> bool:
        if self.table.pop(group, None) is None:
            return False
        log.info("subscription group %s deleted", group)
        self._changed()
        return True

    def _changed(self) -> None:
        self.data_version = self.data_version.next(self.clock())
        self.saver.changed()


def _decode_table(data: dict[str, Any]) -> dict[str, SubscriptionGroupConfig]:
    return {
        str(name): SubscriptionGroupConfig.from_json(raw)
        for name, raw in (data.get("subscriptionGroupTable") or {}).items()
    }
