"""TopicConfig, DataVersion and the REGISTER_BROKER body, plain and compressed.

Plain RegisterBrokerBody::

    {"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,
     "timestamp":1700000000000},"topicConfigTable":{"T":{TopicConfig},...}}}

Compressed (``compressed=true``), a zlib stream of::

    int32 len ; DataVersion JSON
    int32 topicCount
    repeat: int32 len ; "<topicName> <readQ> <writeQ> <perm> <SINGLE_TAG|MULTI_TAG>"
    int32 len ; filterServerList JSON array

A compressed body is inflated up to a cap the reader gives (the name server's
``maxRegisterBodyInflatedSize``), never further: see :mod:`rocketkube.common.inflate`.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

from rocketkube.common import errors, fastjson, inflate
from rocketkube.common.protocol import permission

_I32 = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class DataVersion:
    timestamp: int = 0
    counter: int = 0

    def to_json(self) -> dict[str, int]:
        return {"counter": self.counter, "timestamp": self.timestamp}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> DataVersion:
        data = data or {}
        return cls(timestamp=int(data.get("timestamp", 0)), counter=int(data.get("counter", 0)))

    def next(self, now_ms: int) -> DataVersion:
        return DataVersion(timestamp=now_ms, counter=self.counter + 1)


@dataclass(frozen=True, slots=True)
class TopicConfig:
    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = permission.PERM_READ | permission.PERM_WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicFilterType": self.topic_filter_type,
            "topicName": self.topic_name,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], name: str | None = None) -> TopicConfig:
        return cls(
            topic_name=str(data.get("topicName", name or "")),
            read_queue_nums=int(data.get("readQueueNums", 16)),
            write_queue_nums=int(data.get("writeQueueNums", 16)),
            perm=int(data.get("perm", 6)),
            topic_filter_type=str(data.get("topicFilterType", "SINGLE_TAG")),
            topic_sys_flag=int(data.get("topicSysFlag", data.get("topicSynFlag", 0))),
            order=bool(data.get("order", False)),
        )


@dataclass(slots=True)
class TopicConfigWrapper:
    """TopicConfigSerializeWrapper: the broker's topic table and its version."""

    data_version: DataVersion = field(default_factory=DataVersion)
    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_json(),
            "topicConfigTable": {k: v.to_json() for k, v in self.topic_config_table.items()},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TopicConfigWrapper:
        table = data.get("topicConfigTable") or {}
        return cls(
            data_version=DataVersion.from_json(data.get("dataVersion")),
            topic_config_table={str(k): TopicConfig.from_json(v, str(k)) for k, v in table.items()},
        )


@dataclass(slots=True)
class RegisterBrokerBody:
    topic_config: TopicConfigWrapper = field(default_factory=TopicConfigWrapper)
    filter_server_list: list[str] = field(default_factory=list)

    def encode(self, compressed: bool = False) -> bytes:
        if not compressed:
            return fastjson.dumps(
                {
                    "filterServerList": self.filter_server_list,
                    "topicConfigSerializeWrapper": self.topic_config.to_json(),
                }
            )
        parts = [_lp(fastjson.dumps(self.topic_config.data_version.to_json()))]
        topics = list(self.topic_config.topic_config_table.values())
        parts.append(_I32.pack(len(topics)))
        for t in topics:
            text = (
                f"{t.topic_name} {t.read_queue_nums} {t.write_queue_nums} {t.perm} "
                f"{t.topic_filter_type}"
            )
            parts.append(_lp(text.encode()))
        parts.append(_lp(fastjson.dumps(self.filter_server_list)))
        return zlib.compress(b"".join(parts), 9)

    @classmethod
    def decode(
        cls, body: bytes | bytearray | memoryview, *, compressed: bool, max_inflated: int
    ) -> RegisterBrokerBody:
        """Parse either form; raises ProtocolError on a body that is neither, and its
        InflateLimitError on a compressed one that inflates past ``max_inflated`` bytes."""
        try:
            if compressed:
                return cls._decode_compressed(inflate.inflate(body, max_inflated))
            data = fastjson.loads(body)
            return cls(
                topic_config=TopicConfigWrapper.from_json(
                    data.get("topicConfigSerializeWrapper") or {}
                ),
                filter_server_list=[str(s) for s in data.get("filterServerList") or []],
            )
        except (ValueError, KeyError, TypeError, AttributeError, zlib.error, struct.error) as exc:
            raise errors.ProtocolError(f"malformed RegisterBrokerBody: {exc}") from None

    @classmethod
    def _decode_compressed(cls, raw: bytes) -> RegisterBrokerBody:
        pos = 0

        def chunk() -> bytes:
            nonlocal pos
            (length,) = _I32.unpack_from(raw, pos)
            if length < 0 or pos + 4 + length > len(raw):
                raise ValueError("length field runs past the body")
            pos += 4 + length
            return raw[pos - length : pos]

        version = DataVersion.from_json(fastjson.loads(chunk()))
        (count,) = _I32.unpack_from(raw, pos)
        pos += 4
        table: dict[str, TopicConfig] = {}
        for _ in range(count):
            name, read_q, write_q, perm, filter_type = chunk().decode().split(" ")
            table[name] = TopicConfig(name, int(read_q), int(write_q), int(perm), filter_type)
        filters = fastjson.loads(chunk())
        return cls(TopicConfigWrapper(version, table), [str(s) for s in filters])


def _lp(data: bytes) -> bytes:
    return _I32.pack(len(data)) + data
