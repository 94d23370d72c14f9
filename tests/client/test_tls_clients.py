"""The SDK, ``rocketkube admin`` and ``rocketkube bench`` against a name server and a broker
that enforce TLS with client certificates (made at run time), end to end on 127.0.0.1."""

from __future__ import annotations

import io
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from certs import CertFiles
from waiting import wait_until

from rocketkube.bench import cli as bench_cli
from rocketkube.bench import runners as bench_runners
from rocketkube.broker.app import BrokerApp
from rocketkube.client import (
    AdminClient,
    ConnectionClosedError,
    ConsumeContext,
    ConsumeStatus,
    LitePullConsumer,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    TlsConfig,
)
from rocketkube.client.admin import cli as admin_cli
from rocketkube.namesrv.app import NamesrvApp
from rocketkube.namesrv.settings import NamesrvSettings

StartBroker = Callable[..., Awaitable[BrokerApp]]
CLUSTER = "DefaultCluster"


def enforcing(certs: CertFiles) -> dict[str, Any]:
    return {
        "tls_server_mode": "enforcing",
        "tls_server_cert_path": str(certs.server_cert),
        "tls_server_key_path": str(certs.server_key),
        "tls_server_trust_cert_path": str(certs.ca),
        "tls_server_need_client_auth": "require",
    }


@pytest.fixture
def namesrv_settings(tmp_path: Path, tls_certs: CertFiles) -> NamesrvSettings:
    return NamesrvSettings(
        listen_port=0,
        http_port=0,
        bind_address="127.0.0.1",
        kv_config_path=str(tmp_path / "kv.json"),
        **enforcing(tls_certs),
    )


@pytest.fixture
async def tls_broker(start_broker: StartBroker, tls_certs: CertFiles) -> BrokerApp:
    return await start_broker(
        **enforcing(tls_certs),
        tls_client_trust_cert_path=str(tls_certs.ca),
        tls_client_cert_path=str(tls_certs.client_cert),
        tls_client_key_path=str(tls_certs.client_key),
    )


@pytest.fixture
def tls(tls_certs: CertFiles) -> TlsConfig:
    return TlsConfig(
        ca_file=str(tls_certs.ca),
        cert_file=str(tls_certs.client_cert),
        key_file=str(tls_certs.client_key),
    )


def tls_flags(certs: CertFiles) -> list[str]:
    return ["--tls-ca", str(certs.ca), "--tls-cert", str(certs.client_cert),
            "--tls-key", str(certs.client_key)]  # fmt: skip


async def admin(namesrv: NamesrvApp, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await admin_cli.execute([*argv, "-n", namesrv.address], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


async def test_sdk_sends_and_receives_over_tls(
    namesrv: NamesrvApp, tls_broker: BrokerApp, tls: TlsConfig, names: tuple[str, str]
) -> None:
    topic, group = names
    async with AdminClient(namesrv.address, tls=tls) as admin_client:
        await admin_client.create_topic(topic, cluster=CLUSTER, read_queue_nums=2,
                                        write_queue_nums=2)  # fmt: skip
    received: set[bytes] = set()

    async def on_messages(messages: list[MessageExt], context: ConsumeContext) -> ConsumeStatus:
        received.update(m.body for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(group, namesrv.address, consume_from="first", tls=tls,
                            rebalance_interval=1.0, suspend_timeout=1.0,
                            heartbeat_interval=2.0, pull_error_delay=0.2)  # fmt: skip
    await consumer.subscribe(topic)
    consumer.register_listener(on_messages)
    bodies = {b"over tls %d" % i for i in range(20)}
    async with Producer("TlsProducer", namesrv.address, tls=tls, send_timeout=30.0) as producer:
        for body in sorted(bodies):
            await producer.send(Message(topic, body))
    async with consumer:
        await wait_until(lambda: received >= bodies, "every message, pushed over TLS")
    async with LitePullConsumer(f"{group}Lite", namesrv.address, tls=tls,
                                consume_from_where="first") as puller:  # fmt: skip
        await puller.subscribe(topic)
        pulled: set[bytes] = set()
        while not pulled >= bodies:
            pulled.update(m.body for m in await puller.poll(timeout=5.0))


async def test_sdk_without_tls_is_refused(namesrv: NamesrvApp, tls_broker: BrokerApp) -> None:
    async with Producer("PlainProducer", namesrv.address, send_timeout=2.0) as producer:
        with pytest.raises(ConnectionClosedError):  # the name server closes plain ones
            await producer.send(Message("AnyTopic", b"plain"))


async def test_admin_cli_over_tls(
    namesrv: NamesrvApp,
    tls_broker: BrokerApp,
    tls_certs: CertFiles,
    names: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic, _ = names
    code, out, err = await admin(
        namesrv, "updateTopic", "-c", CLUSTER, "-t", topic, *tls_flags(tls_certs)
    )
    assert code == 0, err
    assert f"create topic to {tls_broker.address} success." in out
    code, out, err = await admin(namesrv, "clusterList", "--json", *tls_flags(tls_certs))
    assert code == 0, err
    assert tls_broker.address in out
    # The same from the environment.
    monkeypatch.setenv("ROCKETKUBE_TLS_CA", str(tls_certs.ca))
    monkeypatch.setenv("ROCKETKUBE_TLS_CERT", str(tls_certs.client_cert))
    monkeypatch.setenv("ROCKETKUBE_TLS_KEY", str(tls_certs.client_key))
    code, out, err = await admin(namesrv, "clusterList", "--json")
    assert code == 0, err
    assert tls_broker.address in out
    # sendMessage's producer connects with the same flags.
    code, out, err = await admin(
        namesrv, "sendMessage", "-t", topic, "-p", "over tls", "--json", *tls_flags(tls_certs)
    )
    assert code == 0, err
    assert json.loads(out)["sendStatus"] == "SEND_OK"
    # Without a client certificate: one error line, no traceback.
    monkeypatch.delenv("ROCKETKUBE_TLS_CERT")
    monkeypatch.delenv("ROCKETKUBE_TLS_KEY")
    code, out, err = await admin(namesrv, "clusterList")
    assert code == 1
    assert err.startswith("error: ")
    assert err.count("\n") == 1
    assert "Traceback" not in err


async def test_bench_producer_over_tls(
    namesrv: NamesrvApp,
    tls_broker: BrokerApp,
    tls_certs: CertFiles,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = "producer -t BenchTlsTopic -w 4 --messages 50 --interval 60 --json"
    argv += " --send-timeout-ms 30000 --tls"
    args = bench_cli.main_parser().parse_args(
        [*argv.split(), *tls_flags(tls_certs), "-n", namesrv.address]
    )
    assert await bench_runners.run_client_bench(args) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (summary["messages"], summary["failed"]) == (50, 0)
    assert summary["settings"]["tls"]["ca_file"] == str(tls_certs.ca)
