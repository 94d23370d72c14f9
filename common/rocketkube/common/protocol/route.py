"""Route bodies: TopicRouteData, QueueData, BrokerData, ClusterInfo, TopicList, KVTable.

JSON shape (GET_ROUTEINFO_BY_TOPIC)::

    {"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911"},"brokerName":"b","cluster":"c"}],
     "filterServerTable":{},"orderTopicConf":"b:4","queueDatas":[{"brokerName":"b",
     "perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}

Written compact with quoted keys, which every 4.x client accepts; read leniently
(fastjson's bare numeric keys, the pre-4.9 ``topicSynFlag`` spelling).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rocketkube.common import errors, fastjson
from rocketkube.common.names import BrokerName, ClusterName, TopicName

T = TypeVar("T")


def _decoded(what: str, body: bytes | bytearray | memoryview, build: Callable[[Any], T]) -> T:
    """``build`` over the JSON object of ``body``; ProtocolError naming ``what`` when it is
    not one, or not of the shape ``build`` wants (a name server's answer is a peer's)."""
    try:
        data = fastjson.loads(body)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return build(data)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise errors.ProtocolError(f"malformed {what}: {exc!r}") from None


MASTER_ID = 0


@dataclass(slots=True)
class QueueData:
    broker_name: BrokerName
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> QueueData:
        return cls(
            broker_name=BrokerName(str(data["brokerName"])),
            read_queue_nums=int(data.get("readQueueNums", 0)),
            write_queue_nums=int(data.get("writeQueueNums", 0)),
            perm=int(data.get("perm", 0)),
            topic_sys_flag=int(data.get("topicSysFlag", data.get("topicSynFlag", 0))),
        )


@dataclass(slots=True)
class BrokerData:
    cluster: ClusterName
    broker_name: BrokerName
    broker_addrs: dict[int, str] = field(default_factory=dict)

    @property
    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerAddrs": {str(k): v for k, v in sorted(self.broker_addrs.items())},
            "brokerName": self.broker_name,
            "cluster": self.cluster,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BrokerData:
        addrs = data.get("brokerAddrs") or {}
        return cls(
            cluster=ClusterName(str(data.get("cluster", ""))),
            broker_name=BrokerName(str(data["brokerName"])),
            broker_addrs={int(k): str(v) for k, v in addrs.items()},
        )


@dataclass(slots=True)
class TopicRouteData:
    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)
    order_topic_conf: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "brokerDatas": [b.to_json() for b in self.broker_datas],
            "filterServerTable": self.filter_server_table,
        }
        if self.order_topic_conf is not None:
            out["orderTopicConf"] = self.order_topic_conf
        out["queueDatas"] = [q.to_json() for q in self.queue_datas]
        return out

    def encode(self) -> bytes:
        return fastjson.dumps(self.to_json())

    @classmethod
    def decode(cls, body: bytes | bytearray | memoryview) -> TopicRouteData:
        return _decoded("TopicRouteData", body, cls._from_json)

    @classmethod
    def _from_json(cls, data: dict[str, Any]) -> TopicRouteData:
        return cls(
            queue_datas=[QueueData.from_json(q) for q in data.get("queueDatas") or []],
            broker_datas=[BrokerData.from_json(b) for b in data.get("brokerDatas") or []],
            filter_server_table={
                str(k): list(v) for k, v in (data.get("filterServerTable") or {}).items()
            },
            order_topic_conf=data.get("orderTopicConf"),
        )


@dataclass(slots=True)
class ClusterInfo:
    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, set[str]] = field(default_factory=dict)

    def encode(self) -> bytes:
        return fastjson.dumps(
            {
                "brokerAddrTable": {k: v.to_json() for k, v in self.broker_addr_table.items()},
                "clusterAddrTable": {k: sorted(v) for k, v in self.cluster_addr_table.items()},
            }
        )

    @classmethod
    def decode(cls, body: bytes | bytearray | memoryview) -> ClusterInfo:
        return _decoded("ClusterInfo", body, cls._from_json)

    @classmethod
    def _from_json(cls, data: dict[str, Any]) -> ClusterInfo:
        return cls(
            broker_addr_table={
                str(k): BrokerData.from_json(v)
                for k, v in (data.get("brokerAddrTable") or {}).items()
            },
            cluster_addr_table={
                str(k): set(v) for k, v in (data.get("clusterAddrTable") or {}).items()
            },
        )


def encode_topic_list(topics: list[str], broker_addr: str | None = None) -> bytes:
    out: dict[str, Any] = {}
    if broker_addr is not None:
        out["brokerAddr"] = broker_addr
    out["topicList"] = topics
    return fastjson.dumps(out)


def decode_topic_list(body: bytes | bytearray | memoryview) -> list[TopicName]:
    return _decoded(
        "TopicList", body, lambda data: [TopicName(str(t)) for t in data.get("topicList") or []]
    )


def encode_kv_table(table: dict[str, str]) -> bytes:
    return fastjson.dumps({"table": table})


def decode_kv_table(body: bytes | bytearray | memoryview) -> dict[str, str]:
    return _decoded(
        "KVTable", body, lambda data: {str(k): str(v) for k, v in (data.get("table") or {}).items()}
    )
