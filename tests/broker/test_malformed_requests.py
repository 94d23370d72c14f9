"""Malformed requests to a broker and a name server: answered, counted by kind in their
metrics, told of in one warning line each, never a traceback; a bounded flood of them
leaves a well-behaved producer's sends all acknowledged."""

from __future__ import annotations

import asyncio
import logging
import time

import aiohttp
import pytest

from rocketkube.bench import flooder
from rocketkube.broker.app import BrokerApp
from rocketkube.client.producer.producer import Producer
from rocketkube.common.message.model import Message
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.namesrv.app import NamesrvApp


async def metrics(http_port: int) -> str:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{http_port}/metrics") as answer,
    ):
        return await answer.text()


async def test_a_brokers_malformed_requests_are_counted_by_kind_without_tracebacks(
    broker: BrokerApp, caplog: pytest.LogCaptureFixture
) -> None:
    client = RemotingClient()
    try:
        for request in flooder.malformed_requests("broker"):
            answer = await client.invoke(broker.address, request)
            assert answer.code in (
                ResponseCode.SYSTEM_ERROR,
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
            ), answer.remark
    finally:
        await client.close()
    text = await metrics(broker.http.port)
    # The three sends hold integers out of a Java long: header faults, refused before the
    # store (tests/broker/test_malformed_send.py).
    for kind, count in (("code", 2), ("body", 3), ("value", 0), ("header", 5)):
        assert f'rocketkube_broker_malformed_requests_total{{kind="{kind}"}} {count}.0' in text
    assert "rocketkube_broker_throttled_connections_total 0.0" in text
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    told = [r.getMessage() for r in caplog.records if "malformed request" in r.getMessage()]
    assert len(told) == 3  # one line per kind from the one connection


async def test_a_name_servers_malformed_requests_are_counted_by_kind(
    namesrv: NamesrvApp, caplog: pytest.LogCaptureFixture
) -> None:
    client = RemotingClient()
    try:
        for request in flooder.malformed_requests("namesrv"):
            answer = await client.invoke(namesrv.address, request)
            assert answer.code != ResponseCode.SUCCESS
    finally:
        await client.close()
    text = await metrics(namesrv.http.port)
    assert 'rocketkube_namesrv_malformed_requests_total{kind="code"} 2.0' in text
    assert 'rocketkube_namesrv_malformed_requests_total{kind="header"} 3.0' in text
    assert not [r for r in caplog.records if r.exc_info]


async def test_a_bounded_flood_leaves_a_producers_sends_acknowledged(
    broker: BrokerApp, namesrv: NamesrvApp
) -> None:
    async with Producer("FloodTestProducer", namesrv.address, send_timeout=30) as producer:
        await producer.send(Message("FloodTestTopic", b"first"))  # routes known
        flood = asyncio.create_task(flooder.run_flood(broker.address, namesrv.address, 6, 1.5))
        sent = 0
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline or sent < 20:
            result = await producer.send(Message("FloodTestTopic", b"%d" % sent))
            assert result.status.name == "SEND_OK"
            sent += 1
        counts = await flood
    assert counts.frames > 0
    assert counts.garbage > 0
    garbage_connections = sum(role == "garbage" for _, role in flooder.plan(6, "b", "n"))
    assert counts.garbage - counts.closed_by_server <= garbage_connections  # the last ones
    faults = broker.server.faults.counts
    assert faults["frame"] > 0
    assert faults["code"] + faults["body"] + faults["value"] + faults["header"] > 0
