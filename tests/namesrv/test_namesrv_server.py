"""Every name server request code, over real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator
from typing import Protocol

import aiohttp
import pytest

from rocketkube.common import fastjson
from rocketkube.common import settings as settings_mod
from rocketkube.common.names import TopicName
from rocketkube.common.protocol import namesrv_headers as h
from rocketkube.common.protocol import route
from rocketkube.common.protocol.topic_config import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigWrapper,
)
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.namesrv.app import NamesrvApp
from rocketkube.namesrv.settings import NamesrvSettings

TBW102 = TopicConfig("TBW102", 8, 8, 7)


class MovableClock(Protocol):
    def advance(self, ms: int) -> None: ...


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    c = RemotingClient()
    yield c
    await c.close()


def register_request(
    addr: str,
    broker_id: int = 0,
    topics: tuple[TopicConfig, ...] = (TopicConfig("T", 4, 4), TBW102),
    *,
    name: str = "broker-a",
    cluster: str = "DefaultCluster",
    counter: int = 1,
    compressed: bool = False,
    version: int = 409,
) -> RemotingCommand:
    body = RegisterBrokerBody(
        TopicConfigWrapper(
            DataVersion(1_700_000_000_000, counter), {t.topic_name: t for t in topics}
        )
    ).encode(compressed)
    header = h.RegisterBrokerRequestHeader(
        broker_name=name,
        broker_addr=addr,
        cluster_name=cluster,
        ha_server_addr=addr.rsplit(":", 1)[0] + ":10912",
        broker_id=broker_id,
        compressed=compressed,
        body_crc32=zlib.crc32(body) & 0x7FFFFFFF,
    )
    req = RemotingCommand.request(RequestCode.REGISTER_BROKER, header.encode(), body)
    req.version = version
    return req


async def call(
    client: RemotingClient, app: NamesrvApp, code: int, ext: dict[str, str] | None = None,
    body: bytes = b"",
) -> RemotingCommand:  # fmt: skip
    return await client.invoke(app.address, RemotingCommand.request(code, ext or {}, body))


async def test_register_master_and_slave_then_route(
    namesrv: NamesrvApp, client: RemotingClient
) -> None:
    master = await client.invoke(namesrv.address, register_request("10.0.0.1:10911"))
    assert master.code == ResponseCode.SUCCESS
    assert master.ext_fields == {}
    slave = await client.invoke(namesrv.address, register_request("10.0.0.2:10911", 1))
    assert slave.ext_fields == {"haServerAddr": "10.0.0.1:10912", "masterAddr": "10.0.0.1:10911"}

    resp = await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    assert resp.code == ResponseCode.SUCCESS
    assert bytes(resp.body) == (
        b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},'
        b'"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{},'
        b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,'
        b'"writeQueueNums":4}]}'
    )


async def test_unknown_topic_is_topic_not_exist(
    namesrv: NamesrvApp, client: RemotingClient
) -> None:
    resp = await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "nope"})
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    assert resp.remark == "No topic route info in name server for the topic: nope"
    missing = await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC)
    assert missing.code == ResponseCode.SYSTEM_ERROR
    assert "<topic> is null" in (missing.remark or "")


async def test_compressed_and_legacy_register_bodies(
    namesrv: NamesrvApp, client: RemotingClient
) -> None:
    req = register_request("10.0.0.1:10911", topics=(TopicConfig("Z", 2, 3, 6),), compressed=True)
    assert (await client.invoke(namesrv.address, req)).code == ResponseCode.SUCCESS
    legacy_body = fastjson.dumps(
        TopicConfigWrapper(DataVersion(1, 1), {"L": TopicConfig("L", 1, 1)}).to_json()
    )
    header = h.RegisterBrokerRequestHeader("old", "10.0.0.9:10911", "C", "10.0.0.9:10912", 0)
    legacy = RemotingCommand.request(RequestCode.REGISTER_BROKER, header.encode(), legacy_body)
    legacy.version = 30
    assert (await client.invoke(namesrv.address, legacy)).code == ResponseCode.SUCCESS
    z = route.TopicRouteData.decode(
        (await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Z"})).body
    )
    assert (z.queue_datas[0].read_queue_nums, z.queue_datas[0].write_queue_nums) == (2, 3)
    lr = await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "L"})
    assert lr.code == ResponseCode.SUCCESS


async def test_register_with_bad_crc_or_body_is_refused(
    namesrv: NamesrvApp, client: RemotingClient
) -> None:
    req = register_request("10.0.0.1:10911")
    req.ext_fields["bodyCrc32"] = "12345"
    resp = await client.invoke(namesrv.address, req)
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
    bad = register_request("10.0.0.1:10911")
    bad.body = b"{not json"
    bad.ext_fields["bodyCrc32"] = "0"
    assert (await client.invoke(namesrv.address, bad)).code == ResponseCode.SYSTEM_ERROR
    assert namesrv.routes.broker_addr_table == {}


async def test_register_body_inflating_past_the_cap_is_refused_and_serving_goes_on(
    namesrv_settings: NamesrvSettings, client: RemotingClient
) -> None:
    cap = 64 * 1024
    layers = (namesrv_settings.model_dump(), {"maxRegisterBodyInflatedSize": str(cap)})
    app = NamesrvApp(settings_mod.build(NamesrvSettings, *layers))
    await app.start()
    try:
        bomb = register_request("10.0.0.1:10911", compressed=True)
        bomb.body = zlib.compress(bytes(cap + 1), 9)  # 85 bytes, inflating one past the cap
        bomb.ext_fields["bodyCrc32"] = str(zlib.crc32(bomb.body) & 0x7FFFFFFF)
        refused = await client.invoke(app.address, bomb)
        assert refused.code == ResponseCode.SYSTEM_ERROR
        assert refused.remark == (
            f"register body inflates past {cap} bytes (maxRegisterBodyInflatedSize)"
        )
        assert app.routes.broker_addr_table == {}

        fine = register_request("10.0.0.1:10911", topics=(TopicConfig("Z", 2, 3, 6),),
                                compressed=True)  # fmt: skip
        assert (await client.invoke(app.address, fine)).code == ResponseCode.SUCCESS
        z = await call(client, app, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Z"})
        assert route.TopicRouteData.decode(z.body).queue_datas[0].write_queue_nums == 3
    finally:
        await app.stop()


async def test_unregister_removes_broker_and_routes(
    namesrv: NamesrvApp, client: RemotingClient
) -> None:
    await client.invoke(namesrv.address, register_request("10.0.0.1:10911"))
    ext = h.UnregisterBrokerRequestHeader("broker-a", "10.0.0.1:10911", "DefaultCluster", 0)
    resp = await call(client, namesrv, RequestCode.UNREGISTER_BROKER, ext.encode())
    assert resp.code == ResponseCode.SUCCESS
    route_resp = await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    assert route_resp.code == ResponseCode.TOPIC_NOT_EXIST


async def test_query_data_version_refreshes_liveness(
    namesrv: NamesrvApp, client: RemotingClient, clock: MovableClock
) -> None:
    await client.invoke(namesrv.address, register_request("10.0.0.1:10911", counter=5))
    ext = h.QueryDataVersionRequestHeader("broker-a", "10.0.0.1:10911", "DefaultCluster", 0)
    same = fastjson.dumps(DataVersion(1_700_000_000_000, 5).to_json())
    before = namesrv.routes.broker_live_table["10.0.0.1:10911"].last_update_ms
    clock.advance(50_000)
    resp = await call(client, namesrv, RequestCode.QUERY_DATA_VERSION, ext.encode(), same)
    assert resp.ext_fields == {"changed": "false"}
    assert DataVersion.from_json(fastjson.loads(resp.body)) == DataVersion(1_700_000_000_000, 5)
    assert namesrv.routes.broker_live_table["10.0.0.1:10911"].last_update_ms == before + 50_000
    newer = fastjson.dumps(DataVersion(1_700_000_000_001, 6).to_json())
    resp = await call(client, namesrv, RequestCode.QUERY_DATA_VERSION, ext.encode(), newer)
    assert resp.ext_fields == {"changed": "true"}


async def test_cluster_info_and_topic_lists(namesrv: NamesrvApp, client: RemotingClient) -> None:
    await client.invoke(namesrv.address, register_request("10.0.0.1:10911"))
    await client.invoke(
        namesrv.address,
        register_request("10.0.0.3:10911", name="broker-b", cluster="Other",
                         topics=(TopicConfig("U", topic_sys_flag=1),)),
    )  # fmt: skip
    info = route.ClusterInfo.decode(
        (await call(client, namesrv, RequestCode.GET_BROKER_CLUSTER_INFO)).body
    )
    assert info.cluster_addr_table == {"DefaultCluster": {"broker-a"}, "Other": {"broker-b"}}
    assert info.broker_addr_table["broker-b"].broker_addrs == {0: "10.0.0.3:10911"}

    async def topics(code: int, ext: dict[str, str] | None = None) -> list[TopicName]:
        resp = await call(client, namesrv, code, ext)
        assert resp.code == ResponseCode.SUCCESS
        return route.decode_topic_list(resp.body)

    assert await topics(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER) == ["T", "TBW102", "U"]
    assert await topics(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "Other"}) == ["U"]
    assert await topics(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS) == [
        "DefaultCluster", "Other", "broker-a", "broker-b",
    ]  # fmt: skip
    assert await topics(RequestCode.GET_UNIT_TOPIC_LIST) == ["U"]
    assert await topics(RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST) == []
    assert await topics(RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST) == []

    deleted = await call(client, namesrv, RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "U"})
    assert deleted.code == ResponseCode.SUCCESS
    assert await topics(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER) == ["T", "TBW102"]


async def test_wipe_and_add_write_perm(namesrv: NamesrvApp, client: RemotingClient) -> None:
    await client.invoke(namesrv.address, register_request("10.0.0.1:10911"))
    wiped = await call(
        client, namesrv, RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}
    )
    assert wiped.ext_fields == {"wipeTopicCount": "2"}
    r = route.TopicRouteData.decode(
        (await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})).body
    )
    assert r.queue_datas[0].perm == 4
    added = await call(
        client, namesrv, RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}
    )
    assert added.ext_fields == {"addTopicCount": "2"}


async def test_kv_config_round_trip_and_persistence(
    namesrv: NamesrvApp, client: RemotingClient, namesrv_settings: NamesrvSettings
) -> None:
    put = {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"}
    assert (await call(client, namesrv, RequestCode.PUT_KV_CONFIG, put)).code == 0
    got = await call(client, namesrv, RequestCode.GET_KV_CONFIG, {"namespace": put["namespace"],
                                                                  "key": "T"})  # fmt: skip
    assert got.ext_fields == {"value": "broker-a:4"}
    listing = await call(
        client, namesrv, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ORDER_TOPIC_CONFIG"}
    )
    assert route.decode_kv_table(listing.body) == {"T": "broker-a:4"}
    reg = await client.invoke(namesrv.address, register_request("10.0.0.1:10911"))
    assert route.decode_kv_table(reg.body) == {"T": "broker-a:4"}

    restarted = NamesrvApp(namesrv_settings)
    restarted.kv.load()
    assert restarted.kv.get("ORDER_TOPIC_CONFIG", "T") == "broker-a:4"

    key = {"namespace": "ORDER_TOPIC_CONFIG", "key": "T"}
    assert (await call(client, namesrv, RequestCode.DELETE_KV_CONFIG, key)).code == 0
    missing = await call(client, namesrv, RequestCode.GET_KV_CONFIG, key)
    assert missing.code == ResponseCode.QUERY_NOT_FOUND
    assert missing.remark == "No config item, Namespace: ORDER_TOPIC_CONFIG Key: T"
    none = await call(client, namesrv, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "x"})
    assert none.code == ResponseCode.QUERY_NOT_FOUND


async def test_order_topic_conf_in_route_when_enabled(
    namesrv: NamesrvApp, client: RemotingClient
) -> None:
    await client.invoke(namesrv.address, register_request("10.0.0.1:10911"))
    kv = {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"}
    await call(client, namesrv, RequestCode.PUT_KV_CONFIG, kv)
    plain = route.TopicRouteData.decode(
        (await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})).body
    )
    assert plain.order_topic_conf is None
    update = await call(
        client, namesrv, RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n"
    )
    assert update.code == ResponseCode.SUCCESS
    ordered = route.TopicRouteData.decode(
        (await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})).body
    )
    assert ordered.order_topic_conf == "broker-a:4"


async def test_namesrv_config_get_update_and_black_list(
    namesrv: NamesrvApp, client: RemotingClient
) -> None:
    text = bytes((await call(client, namesrv, RequestCode.GET_NAMESRV_CONFIG)).body).decode()
    assert "listenPort=0\n" in text
    assert "orderMessageEnable=false\n" in text
    upd = await call(
        client, namesrv, RequestCode.UPDATE_NAMESRV_CONFIG, body=b"brokerChannelExpiredTime=5000"
    )
    assert upd.code == ResponseCode.SUCCESS
    assert namesrv.routes.broker_expired_ms == 5000
    black = await call(client, namesrv, RequestCode.UPDATE_NAMESRV_CONFIG, body=b"kvConfigPath=/x")
    assert (black.code, black.remark) == (
        ResponseCode.NO_PERMISSION, "Can not update config in black list.",
    )  # fmt: skip
    bad = await call(client, namesrv, RequestCode.UPDATE_NAMESRV_CONFIG, body=b"listenPort=abc")
    assert bad.code == ResponseCode.SYSTEM_ERROR
    unknown = await call(client, namesrv, RequestCode.UPDATE_NAMESRV_CONFIG, body=b"nope=1")
    assert unknown.code == ResponseCode.SYSTEM_ERROR


async def test_broker_connection_close_removes_it(namesrv: NamesrvApp) -> None:
    broker = RemotingClient()
    await broker.invoke(namesrv.address, register_request("10.0.0.1:10911"))
    assert "10.0.0.1:10911" in namesrv.routes.broker_live_table
    await broker.close()
    for _ in range(250):
        if "10.0.0.1:10911" not in namesrv.routes.broker_live_table:
            break
        await asyncio.sleep(0.02)
    assert namesrv.routes.pickup_topic_route("T") is None


async def test_expiry_scan_with_injected_clock(
    namesrv: NamesrvApp, client: RemotingClient, clock: MovableClock
) -> None:
    broker, slave = RemotingClient(), RemotingClient()
    await broker.invoke(namesrv.address, register_request("10.0.0.1:10911"))
    await slave.invoke(namesrv.address, register_request("10.0.0.2:10911", 1))
    clock.advance(60_000)
    await slave.invoke(namesrv.address, register_request("10.0.0.2:10911", 1))  # heartbeat
    clock.advance(60_001)
    assert namesrv.scan_not_active_brokers() == ["10.0.0.1:10911"]
    await asyncio.wait_for(broker_closed(broker, namesrv.address), 5)
    slave_route = route.TopicRouteData.decode(
        (await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})).body
    )
    assert slave_route.broker_datas[0].broker_addrs == {1: "10.0.0.2:10911"}
    clock.advance(60_000)
    assert namesrv.scan_not_active_brokers() == ["10.0.0.2:10911"]
    gone = await call(client, namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    assert gone.code == ResponseCode.TOPIC_NOT_EXIST
    await broker.close()
    await slave.close()


async def broker_closed(broker: RemotingClient, address: str) -> None:
    """The name server closed the expired broker's connection."""
    conn = await broker.connection(address)
    await conn.closed


async def test_unknown_code_and_http_endpoints(namesrv: NamesrvApp, client: RemotingClient) -> None:
    resp = await call(client, namesrv, 9999)
    assert (resp.code, resp.remark) == (3, " request type 9999 not supported")
    await client.invoke(namesrv.address, register_request("10.0.0.1:10911"))
    base = f"http://127.0.0.1:{namesrv.http.port}"
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{base}/healthz") as r:
            assert r.status == 200
        async with http.get(f"{base}/readyz") as r:
            assert r.status == 200
        async with http.get(f"{base}/metrics") as r:
            text = await r.text()
    assert "rocketkube_namesrv_live_brokers 1.0" in text
    assert "rocketkube_namesrv_topics 2.0" in text
    assert 'rocketkube_namesrv_requests_total{code="REGISTER_BROKER",result="SUCCESS"} 1.0' in text
    assert (
        'rocketkube_namesrv_requests_total{code="9999",result="REQUEST_CODE_NOT_SUPPORTED"}' in text
    )
    assert 'rocketkube_namesrv_request_latency_seconds_count{code="REGISTER_BROKER"} 1.0' in text
