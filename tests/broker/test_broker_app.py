"""The whole broker process in one event loop: registration, send, pull, restart."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import aiohttp
import pytest
from waiting import WAIT_SECONDS, wait_until

from rocketkube.broker.app import BrokerApp
from rocketkube.broker.settings import BrokerSettings
from rocketkube.common.message import record
from rocketkube.common.message.properties import encode_properties
from rocketkube.common.protocol import route
from rocketkube.common.protocol.topic_config import TopicConfigWrapper
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.namesrv.app import NamesrvApp
from rocketkube.namesrv.settings import NamesrvSettings


@pytest.fixture
async def broker(namesrv: NamesrvApp, broker_settings: BrokerSettings) -> AsyncIterator[BrokerApp]:
    settings = broker_settings.model_copy(update={"namesrv_addr": namesrv.address})
    app = BrokerApp(settings)
    await app.start()
    for _ in range(200):
        if app.registrar is not None and app.registrar.registered:
            break
        await asyncio.sleep(0.02)
    yield app
    await app.stop()


def send_request(topic: str, body: bytes, tags: str = "", queue_id: int = -1) -> RemotingCommand:
    props = {"TAGS": tags, "KEYS": "k1", "UNIQ_KEY": f"U{body.hex()}"} if tags else {}
    ext = {
        "a": "PG", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
        "g": "1700000000000", "h": "0", "i": encode_properties(props), "j": "0", "k": "false",
    }  # fmt: skip
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body)


def pull_request(topic: str, queue_id: int, offset: int, suspend_ms: int = 0) -> RemotingCommand:
    ext = {
        "consumerGroup": "CG", "topic": topic, "queueId": str(queue_id),
        "queueOffset": str(offset), "maxMsgNums": "32",
        "sysFlag": str(4 | (2 if suspend_ms else 0)),
        "commitOffset": "0", "suspendTimeoutMillis": str(suspend_ms), "subscription": "*",
        "subVersion": "0",
    }  # fmt: skip
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, ext)


async def test_broker_registers_and_routes_auto_created_topic(
    broker: BrokerApp, namesrv: NamesrvApp
) -> None:
    client = RemotingClient()
    tbw = await client.invoke(
        namesrv.address,
        RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}),
    )
    assert tbw.code == ResponseCode.SUCCESS
    data = route.TopicRouteData.decode(tbw.body)
    assert data.broker_datas[0].broker_addrs == {0: broker.address}
    sent = await client.invoke(broker.address, send_request("Fresh", b"hello", "TagA", 0))
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    assert sent.ext_fields["queueId"] == "0"
    for _ in range(200):  # re-registration after the topic change
        r = await client.invoke(
            namesrv.address,
            RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Fresh"}),
        )
        if r.code == ResponseCode.SUCCESS:
            break
        await asyncio.sleep(0.05)
    assert r.code == ResponseCode.SUCCESS
    assert route.TopicRouteData.decode(r.body).queue_datas[0].write_queue_nums == 4
    await client.close()


async def test_a_broker_up_before_its_name_server_registers_soon_after_it(
    broker_settings: BrokerSettings,
    namesrv_settings: NamesrvSettings,
    clock: Callable[[], int],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A StatefulSet's pods all start at once: a broker may find no name server yet. It
    tries again within seconds, not a registerNameServerPeriod (here ten minutes) later."""
    caplog.set_level(logging.INFO, logger="rocketkube.broker.registration")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    settings = broker_settings.model_copy(
        update={"namesrv_addr": f"127.0.0.1:{port}", "register_name_server_period": 600_000}
    )
    app = BrokerApp(settings)
    await app.start()
    namesrv = NamesrvApp(namesrv_settings.model_copy(update={"listen_port": port}), clock)
    try:
        await wait_until(lambda: "not reachable yet" in caplog.text, "a refused registration")
        await namesrv.start()
        registrar = app.registrar
        assert registrar is not None
        await wait_until(lambda: bool(registrar.registered), "registered with the name server")
    finally:
        await app.stop()
        await namesrv.stop()


async def test_send_then_long_poll_pull_end_to_end(broker: BrokerApp) -> None:
    client = RemotingClient(timeout=30)
    await client.invoke(broker.address, send_request("E2E", b"first", "TagA", 1))
    first = await client.invoke(broker.address, pull_request("E2E", 1, 0))
    assert first.code == ResponseCode.SUCCESS
    (msg,) = list(record.iter_records(first.body))
    assert bytes(msg.body) == b"first"
    assert msg.properties["TAGS"] == "TagA"
    waiting = asyncio.ensure_future(
        client.invoke(broker.address, pull_request("E2E", 1, 1, suspend_ms=20_000))
    )
    await asyncio.sleep(0.2)
    assert not waiting.done()
    await client.invoke(broker.address, send_request("E2E", b"second", "TagA", 1))
    woken = await asyncio.wait_for(waiting, 10)
    assert woken.code == ResponseCode.SUCCESS
    assert [bytes(m.body) for m in record.iter_records(woken.body)] == [b"second"]
    await client.close()


async def test_restart_keeps_messages_topics_and_offsets(
    namesrv: NamesrvApp, broker_settings: BrokerSettings, tmp_path: Path
) -> None:
    settings = broker_settings.model_copy(update={"namesrv_addr": namesrv.address})
    app = BrokerApp(settings)
    await app.start()
    client = RemotingClient()
    for i in range(10):
        resp = await client.invoke(app.address, send_request("Keep", f"m{i}".encode(), "T", 0))
        assert resp.code == ResponseCode.SUCCESS
    commit = {"consumerGroup": "CG", "topic": "Keep", "queueId": "0", "commitOffset": "7"}
    await client.invoke(
        app.address, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, commit)
    )
    await app.stop()
    await client.close()

    again = BrokerApp(settings)
    await again.start()
    client = RemotingClient()
    query = {"consumerGroup": "CG", "topic": "Keep", "queueId": "0"}
    offset = await client.invoke(
        again.address, RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, query)
    )
    assert offset.ext_fields["offset"] == "7"
    pulled = await client.invoke(again.address, pull_request("Keep", 0, 0))
    assert [bytes(m.body) for m in record.iter_records(pulled.body)] == [
        f"m{i}".encode() for i in range(10)
    ]
    assert again.ctx is not None
    assert again.ctx.topics.get("Keep") is not None
    await client.close()
    await again.stop()


async def test_admin_topic_change_answers_once_saved_or_says_it_was_not(
    broker: BrokerApp, tmp_path: Path
) -> None:
    assert broker.ctx is not None
    topics = broker.ctx.topics
    client = RemotingClient()

    async def create(topic: str) -> RemotingCommand:
        ext = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4",
               "writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG",
               "topicSysFlag": "0", "order": "false"}  # fmt: skip
        request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, ext)
        return await client.invoke(broker.address, request, WAIT_SECONDS)  # answers once fsynced

    assert (await create("Saved")).code == ResponseCode.SUCCESS
    on_disk = TopicConfigWrapper.from_json(json.loads(topics.saver.path.read_text()))
    assert on_disk.topic_config_table["Saved"] == topics.get("Saved")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    topics.saver.path = blocker / "topics.json"  # its folder cannot be made
    resp = await create("Unsaved")
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert (resp.remark or "").startswith("topic Unsaved changed, but not saved to disk: ")
    assert topics.get("Unsaved") is not None  # kept in memory, saved with the next change
    await client.close()


async def test_stop_with_an_unsavable_config_file_still_shuts_the_store_down(
    namesrv: NamesrvApp,
    broker_settings: BrokerSettings,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = broker_settings.model_copy(update={"namesrv_addr": namesrv.address})
    app = BrokerApp(settings)
    await app.start()
    assert app.ctx is not None
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    app.ctx.topics.saver.path = blocker / "topics.json"  # its folder cannot be made
    client = RemotingClient()
    resp = await client.invoke(app.address, send_request("AutoCreated", b"kept", "T", 0))
    assert resp.code == ResponseCode.SUCCESS  # the topic's file write fails in the background
    await client.close()
    await app.stop()
    assert "stopping with a config file not saved" in caplog.text
    assert not app.ctx.store.paths.abort.exists()  # shut down cleanly: no recovery next time

    again = BrokerApp(settings)
    await again.start()
    assert again.ctx is not None
    assert again.ctx.store.get_messages("AutoCreated", 0, 0, 32).found
    await again.stop()


async def test_http_endpoints_report_ready_and_metrics(broker: BrokerApp) -> None:
    client = RemotingClient()
    await client.invoke(broker.address, send_request("Metered", b"x" * 100, "T", 0))
    await client.invoke(broker.address, pull_request("Metered", 0, 0))
    base = f"http://127.0.0.1:{broker.http.port}"
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{base}/readyz") as r:
            assert r.status == 200
        async with http.get(f"{base}/metrics") as r:
            text = await r.text()
    assert 'rocketkube_broker_messages_in_total{topic="Metered"} 1.0' in text
    assert 'rocketkube_broker_bytes_in_total{topic="Metered"} 100.0' in text
    assert 'rocketkube_broker_messages_out_total{group="CG",topic="Metered"} 1.0' in text
    assert "rocketkube_broker_send_latency_seconds_count" in text
    assert "rocketkube_broker_commitlog_max_offset" in text
    assert 'rocketkube_broker_requests_total{code="SEND_MESSAGE_V2",result="SUCCESS"}' in text
    await client.close()
