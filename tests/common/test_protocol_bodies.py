"""Route and registration bodies: the JSON clients read, fastjson's forms accepted."""

from __future__ import annotations

import zlib

import pytest

from rocketkube.common import errors
from rocketkube.common.names import BrokerName, ClusterName
from rocketkube.common.protocol import route
from rocketkube.common.protocol.topic_config import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigWrapper,
)


def test_route_from_fastjson_with_bare_keys_and_old_flag_spelling() -> None:
    body = (
        b'{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},'
        b'"brokerName":"b","cluster":"c"}],"filterServerTable":{},"queueDatas":'
        b'[{"brokerName":"b","perm":6,"readQueueNums":4,"topicSynFlag":2,"writeQueueNums":4}]}'
    )
    data = route.TopicRouteData.decode(body)
    assert data.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
    assert data.broker_datas[0].master_addr == "10.0.0.1:10911"
    assert data.queue_datas[0].topic_sys_flag == 2
    assert route.TopicRouteData.decode(data.encode()) == data


@pytest.mark.parametrize("compressed", [False, True])
def test_register_body_round_trip(compressed: bool) -> None:
    body = RegisterBrokerBody(
        TopicConfigWrapper(
            DataVersion(1_700_000_000_000, 3),
            {"T": TopicConfig("T", 2, 4, 6, "MULTI_TAG"), "TBW102": TopicConfig("TBW102", 8, 8, 7)},
        ),
        ["10.0.0.5:9999"],
    )
    decoded = RegisterBrokerBody.decode(
        body.encode(compressed), compressed=compressed, max_inflated=1 << 20
    )
    assert decoded == body


def test_compressed_register_body_past_the_cap_is_refused_not_inflated() -> None:
    body = RegisterBrokerBody(
        TopicConfigWrapper(DataVersion(1, 1), {f"T{i}": TopicConfig(f"T{i}") for i in range(50)})
    )
    raw = body.encode(compressed=True)
    inflated = len(zlib.decompress(raw))
    assert RegisterBrokerBody.decode(raw, compressed=True, max_inflated=inflated) == body
    with pytest.raises(errors.InflateLimitError, match=f"inflates past {inflated - 1} bytes"):
        RegisterBrokerBody.decode(raw, compressed=True, max_inflated=inflated - 1)


def test_plain_register_body_exact_json() -> None:
    body = RegisterBrokerBody(
        TopicConfigWrapper(DataVersion(5, 1), {"T": TopicConfig("T", 1, 1, 6)})
    ).encode()
    assert body == (
        b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,'
        b'"timestamp":5},"topicConfigTable":{"T":{"order":false,"perm":6,"readQueueNums":1,'
        b'"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":1}}}}'
    )


@pytest.mark.parametrize("compressed", [False, True])
def test_garbage_register_body_is_a_protocol_error(compressed: bool) -> None:
    with pytest.raises(errors.ProtocolError):
        RegisterBrokerBody.decode(b"\x00\x01garbage", compressed=compressed, max_inflated=64)


def test_cluster_info_and_lists() -> None:
    info = route.ClusterInfo(
        {"b": route.BrokerData(ClusterName("c"), BrokerName("b"), {0: "a:1"})}, {"c": {"b"}}
    )
    assert route.ClusterInfo.decode(info.encode()) == info
    assert route.decode_topic_list(route.encode_topic_list(["x", "y"], "a:1")) == ["x", "y"]
    assert route.decode_kv_table(route.encode_kv_table({"k": "v"})) == {"k": "v"}
