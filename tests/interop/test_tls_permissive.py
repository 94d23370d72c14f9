"""Permissive TLS with a real client that has no TLS: the C++ client 1.0.1 (PyPI
``rocketmq==0.4.4``; its library links no TLS library and its API has no TLS setting, and
ali-ons connects with Node's plain ``net`` only) sends and consumes over plain TCP on the
same ports where this SDK sends over TLS."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from certs import CertFiles

from rocketkube.broker.app import BrokerApp
from rocketkube.client import Message, Producer, TlsConfig
from rocketkube.common.remoting import faults
from rocketkube.namesrv.app import NamesrvApp
from rocketkube.namesrv.settings import NamesrvSettings

pytestmark = pytest.mark.interop

SCRIPT = Path(__file__).with_name("cpp_roundtrip.py")
COUNT = 1_000
SCRIPT_DEADLINE_SECONDS = 60
KILL_AFTER_SECONDS = 90

StartBroker = Callable[..., Awaitable[BrokerApp]]
RunClient = Callable[..., Awaitable[Any]]


def permissive(certs: CertFiles) -> dict[str, Any]:
    return {
        "tls_server_mode": "permissive",
        "tls_server_cert_path": str(certs.server_cert),
        "tls_server_key_path": str(certs.server_key),
    }


@pytest.fixture
def namesrv_settings(tmp_path: Path, tls_certs: CertFiles) -> NamesrvSettings:
    return NamesrvSettings(
        listen_port=0,
        http_port=0,
        bind_address="127.0.0.1",
        kv_config_path=str(tmp_path / "kv.json"),
        **permissive(tls_certs),
    )


@pytest.mark.usefixtures("cpp_client")
async def test_cpp_client_plain_beside_sdk_tls_on_permissive_ports(
    namesrv: NamesrvApp,
    start_broker: StartBroker,
    tls_certs: CertFiles,
    names: tuple[str, str],
    run_client: RunClient,
) -> None:
    broker = await start_broker(**permissive(tls_certs))
    topic, group = names
    argv = [sys.executable, str(SCRIPT), namesrv.address, topic, group, str(COUNT)]
    argv += ["both", str(SCRIPT_DEADLINE_SECONDS)]
    run = await run_client(argv, timeout=KILL_AFTER_SECONDS)
    assert {s["status"] for s in run.result["sent"]} == {"OK"}
    assert len(run.result["sent"]) == COUNT
    received = {r["body"] for r in run.result["received"]}
    assert {f"cpp-{i}" for i in range(COUNT)} <= received
    tls = TlsConfig(ca_file=str(tls_certs.ca))
    async with Producer("TlsBesideCpp", namesrv.address, tls=tls, send_timeout=30.0) as producer:
        await producer.send(Message(topic, b"sdk over tls"))
    assert broker.ctx is not None
    stored = sum(broker.ctx.store.max_offset(topic, queue) for queue in range(8))
    assert stored == COUNT + 1
    assert namesrv.server.faults.counts[faults.TLS] == 0
    assert broker.server.faults.counts[faults.TLS] == 0
