"""A message's row, without Spark: each column holds what the message's accessors say."""

from __future__ import annotations

import datetime

from rocketkube.common.message.model import MessageExt
from rocketkube.spark import schema


def _message(offset: int, properties: dict[str, str]) -> MessageExt:
    return MessageExt(
        topic="Orders",
        body=b"body %d" % offset,
        properties=properties,
        queue_id=3,
        queue_offset=offset,
        commit_log_offset=4096 + offset,
        born_timestamp=1_700_000_000_123,
        store_timestamp=1_700_000_000_456,
        born_host="10.0.0.7:5555",
        store_host="10.0.0.9:10911",
        reconsume_times=2,
    )


def test_each_column_holds_what_the_accessors_say() -> None:
    messages = [
        _message(0, {"UNIQ_KEY": "AC1100010000", "KEYS": "a  b", "TAGS": "TagA", "X": "1"}),
        _message(1, {}),
    ]
    rows = schema.record_batch(messages, "broker-a").to_pylist()
    utc = datetime.UTC
    assert [
        (r["msgId"], r["keys"], r["tags"], dict(r["properties"]), r["bornTimestamp"]) for r in rows
    ] == [
        (
            m.client_msg_id,
            m.keys,
            m.tags,
            m.properties,
            datetime.datetime.fromtimestamp(m.born_timestamp / 1000, utc),
        )
        for m in messages
    ]
    assert rows[1] == {
        "topic": "Orders",
        "brokerName": "broker-a",
        "queueId": 3,
        "queueOffset": 1,
        "msgId": messages[1].msg_id,
        "keys": [],
        "tags": None,
        "body": b"body 1",
        "properties": [],
        "bornTimestamp": datetime.datetime(2023, 11, 14, 22, 13, 20, 123000, utc),
        "storeTimestamp": datetime.datetime(2023, 11, 14, 22, 13, 20, 456000, utc),
        "bornHost": "10.0.0.7:5555",
        "reconsumeTimes": 2,
    }
