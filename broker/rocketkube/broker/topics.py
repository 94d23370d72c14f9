"""The broker's topic table (TopicConfigManager): system topics, auto-creation,
persistence to ``config/topics.json`` and the data version the name server compares.

A change is written in the background (:class:`BackgroundSaver`): a send that auto-creates
its topic does not wait for the fsyncs, as RocketMQ's does not (it writes no fsync at all);
the admin processors await its saver's ``flush`` before they answer."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path

from rocketkube.broker.settings import BrokerSettings
from rocketkube.common.atomic_file import BackgroundSaver, json_bytes, load_json
from rocketkube.common.protocol import permission
from rocketkube.common.protocol.topic_config import DataVersion, TopicConfig, TopicConfigWrapper

log = logging.getLogger(__name__)

AUTO_CREATE_TOPIC_KEY = "TBW102"
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
BENCHMARK_TOPIC = "BenchmarkTest"
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
SCHEDULE_QUEUE_NUMS = 18

#: Topics a client may not send to directly (TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET).
NOT_ALLOWED_SEND = frozenset(
    {
        SCHEDULE_TOPIC,
        TRANS_HALF_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
    }
)

_VALID_TOPIC = re.compile(r"^[%|a-zA-Z0-9_-]+$")
TOPIC_MAX_LENGTH = 127


def validate_topic(topic: str) -> str | None:
    """The reason a topic name is unusable, or ``None`` (TopicValidator.validateTopic)."""
    if not topic:
        return "The specified topic is blank."
    if not _VALID_TOPIC.match(topic):
        return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(topic.encode()) > TOPIC_MAX_LENGTH:
        return f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}."
    return None


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_system_topic(topic: str) -> bool:
    return topic in NOT_ALLOWED_SEND or topic.startswith(SYSTEM_TOPIC_PREFIX) or topic in {
        AUTO_CREATE_TOPIC_KEY, BENCHMARK_TOPIC,
    }  # fmt: skip


class TopicConfigManager:
    """Topic configs of this broker; every change bumps the data version and notifies."""

    def __init__(
        self,
        settings: BrokerSettings,
        path: Path,
        clock: Callable[[], int],
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.on_change = on_change
        self.saver = BackgroundSaver(path, lambda: json_bytes(self.wrapper().to_json()))
        self.table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion(clock(), 0)
        self._add_system_topics()

    def _add_system_topics(self) -> None:
        s = self.settings
        rw = permission.PERM_READ | permission.PERM_WRITE
        system = [TopicConfig(SELF_TEST_TOPIC, 1, 1)]
        if s.auto_create_topic_enable:
            qn = s.default_topic_queue_nums
            system.append(TopicConfig(AUTO_CREATE_TOPIC_KEY, qn, qn, rw | permission.PERM_INHERIT))
        system += [
            TopicConfig(BENCHMARK_TOPIC, 1024, 1024),
            TopicConfig(
                s.broker_cluster_name,
                16,
                16,
                permission.PERM_INHERIT | (rw if s.cluster_topic_enable else 0),
            ),
            TopicConfig(
                s.broker_name, 1, 1, permission.PERM_INHERIT | (rw if s.broker_topic_enable else 0)
            ),
            TopicConfig(OFFSET_MOVED_EVENT, 1, 1),
            TopicConfig(SCHEDULE_TOPIC, SCHEDULE_QUEUE_NUMS, SCHEDULE_QUEUE_NUMS),
            TopicConfig(f"{s.broker_cluster_name}_REPLY_TOPIC", 1, 1),
        ]
        for config in system:
            self.table[config.topic_name] = config

    # -- persistence --------------------------------------------------------------------

    def load(self) -> None:
        path = self.saver.path
        data = load_json(path)
        if data is None:
            return
        wrapper = TopicConfigWrapper.from_json(data)
        self.table.update(wrapper.topic_config_table)
        self.data_version = wrapper.data_version
        log.info("loaded %d topic configs from %s", len(wrapper.topic_config_table), path)

    def replace_all(self, master: TopicConfigWrapper) -> bool:
        """A slave takes its master's topic configs and data version (when the version
        differs); True when anything changed."""
        if master.data_version == self.data_version:
            return False
        self.table = dict(master.topic_config_table)
        self.data_version = master.data_version
        self.saver.changed()
        if self.on_change is not None:
            self.on_change()
        return True

    def wrapper(self) -> TopicConfigWrapper:
        return TopicConfigWrapper(self.data_version, dict(self.table))

    def _changed(self) -> None:
        self.data_version = self.data_version.next(self.clock())
        self.saver.changed()
        if self.on_change is not None:
            self.on_change()

    # -- queries and changes ------------------------------------------------------------

    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def update(self, config: TopicConfig) -> None:
        old = self.table.get(config.topic_name)
        self.table[config.topic_name] = config
        log.info("topic %s %s: %s", config.topic_name, "updated" if old else "created", config)
        self._changed()

    def delete(self, topic: str) -> bool:
        if self.table.pop(topic, None) is None:
            return False
        log.info("topic %s deleted", topic)
        self._changed()
        return True

    def create_in_send(
        self, topic: str, default_topic: str, client_queue_nums: int, topic_sys_flag: int = 0
    ) -> TopicConfig | None:
        """Create ``topic`` from ``default_topic``'s config (createTopicInSendMessageMethod)."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        template = self.table.get(default_topic)
        if template is None:
            return None
        if default_topic == AUTO_CREATE_TOPIC_KEY and not self.settings.auto_create_topic_enable:
            return None
        if not template.perm & permission.PERM_INHERIT:
            log.warning(
                "auto-create of %s refused: %s lacks the inherit perm", topic, default_topic
            )
            return None
        queues = max(1, min(client_queue_nums, template.write_queue_nums))
        config = TopicConfig(
            topic_name=topic,
            read_queue_nums=queues,
            write_queue_nums=queues,
            perm=template.perm & ~permission.PERM_INHERIT,
            topic_filter_type=template.topic_filter_type,
            topic_sys_flag=topic_sys_flag,
        )
        self.update(config)
        return config

    def create_system_like(
        self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int = 0
    ) -> TopicConfig:
        """Create (if missing) a retry/DLQ-style topic of a fixed shape."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        config = TopicConfig(topic, queue_nums, queue_nums, perm, topic_sys_flag=topic_sys_flag)
        self.update(config)
        return config
