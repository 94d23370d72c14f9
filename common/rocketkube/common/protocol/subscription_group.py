"""A consumer group's settings on a broker (``SubscriptionGroupConfig``), as JSON.

The body of UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200), and each entry of the
``subscriptionGroupTable`` GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) answers; the broker keeps
them in ``subscriptionGroup.json``, admin tools and the operator write and read them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["SubscriptionGroupConfig", "decode_table"]

_WIRE_NAMES = {
    "group_name": "groupName",
    "consume_enable": "consumeEnable",
    "consume_from_min_enable": "consumeFromMinEnable",
    "consume_broadcast_enable": "consumeBroadcastEnable",
    "retry_queue_nums": "retryQueueNums",
    "retry_max_times": "retryMaxTimes",
    "broker_id": "brokerId",
    "which_broker_when_consume_slowly": "whichBrokerWhenConsumeSlowly",
    "notify_consumer_ids_changed_enable": "notifyConsumerIdsChangedEnable",
}


@dataclass(frozen=True, slots=True)
class SubscriptionGroupConfig:
    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True

    def to_json(self) -> dict[str, Any]:
        return {_WIRE_NAMES[k]: v for k, v in sorted(asdict(self).items())}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SubscriptionGroupConfig:
        values: dict[str, Any] = {}
        for f in fields(cls):
            wire = _WIRE_NAMES[f.name]
            if wire in data and data[wire] is not None:
                raw = data[wire]
                values[f.name] = (
                    str(raw) if f.type == "str" else bool(raw) if f.type == "bool" else int(raw)
                )
        if "group_name" not in values:
            raise ValueError("subscription group config without groupName")
        return cls(**values)


def decode_table(data: dict[str, Any]) -> dict[str, SubscriptionGroupConfig]:
    """The groups of a GET_ALL_SUBSCRIPTIONGROUP_CONFIG body (``subscriptionGroupTable``)."""
    table = data.get("subscriptionGroupTable") or {}
    return {name: SubscriptionGroupConfig.from_json(entry) for name, entry in table.items()}
