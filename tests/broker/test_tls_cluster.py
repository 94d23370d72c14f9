"""A cluster whose every port enforces TLS with client certificates: brokers register with
the name server, a slave replicates from its master (HA stream and metadata sync), clients
send over TLS; plain connections are refused everywhere."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from certs import CertFiles
from waiting import wait_until

from rocketkube.broker.app import BrokerApp
from rocketkube.broker.settings import BrokerSettings
from rocketkube.common import errors
from rocketkube.common.message.properties import encode_properties
from rocketkube.common.properties_file import parse_properties
from rocketkube.common.remoting import faults
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.tls import ClientAuth, TlsConfig, TlsMode, TlsServerConfig
from rocketkube.common.settings import SettingsError, build, to_properties
from rocketkube.namesrv.app import NamesrvApp
from rocketkube.namesrv.settings import NamesrvSettings

TOPIC = "TlsTopic"

StartBroker = Callable[..., Awaitable[BrokerApp]]


def enforcing(certs: CertFiles) -> dict[str, Any]:
    """Server settings: TLS only, client certificates of the test CA required."""
    return {
        "tls_server_mode": "enforcing",
        "tls_server_cert_path": str(certs.server_cert),
        "tls_server_key_path": str(certs.server_key),
        "tls_server_trust_cert_path": str(certs.ca),
        "tls_server_need_client_auth": "require",
    }


def outbound(certs: CertFiles) -> dict[str, Any]:
    """A broker's own connections: the test CA trusted, its client certificate shown."""
    return {
        "tls_client_trust_cert_path": str(certs.ca),
        "tls_client_cert_path": str(certs.client_cert),
        "tls_client_key_path": str(certs.client_key),
    }


def client_tls(certs: CertFiles) -> TlsConfig:
    return TlsConfig(
        ca_file=str(certs.ca), cert_file=str(certs.client_cert), key_file=str(certs.client_key)
    )


@pytest.fixture
def namesrv_settings(tmp_path: Path, tls_certs: CertFiles) -> NamesrvSettings:
    return NamesrvSettings(
        listen_port=0,
        http_port=0,
        bind_address="127.0.0.1",
        kv_config_path=str(tmp_path / "kv.json"),
        **enforcing(tls_certs),
    )


def send(body: bytes) -> RemotingCommand:
    properties = encode_properties({"WAIT": "true"})
    fields = {"a": "TlsProducer", "b": TOPIC, "c": "TBW102", "d": "4", "e": "0", "f": "0",
              "g": "1700000000000", "h": "0", "i": properties, "j": "0", "k": "false"}  # fmt: skip
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, fields, body)


def end(app: BrokerApp) -> int:
    assert app.ctx is not None
    return app.ctx.store.commit_log_max_offset


async def test_an_enforcing_cluster_registers_replicates_and_serves(
    start_broker: StartBroker, namesrv: NamesrvApp, tls_certs: CertFiles
) -> None:
    tls = {**enforcing(tls_certs), **outbound(tls_certs)}
    master = await start_broker(**tls)  # registered with the TLS name server
    slave = await start_broker(broker_id=1, broker_role="SLAVE", **tls)
    client = RemotingClient(tls=client_tls(tls_certs))
    try:
        for i in range(20):
            answer = await client.invoke(master.address, send(b"m%02d" % i))
            assert answer.code == ResponseCode.SUCCESS, answer.remark
        await wait_until(lambda: end(slave) == end(master), "the slave caught up over TLS")
        assert slave.registrar is not None
        assert slave.slave_sync is not None
        master_addr = slave.registrar.master_addr
        assert master_addr == master.address
        await slave.slave_sync.sync_once(master_addr)  # metadata, over TLS too
        assert slave.ctx is not None
        assert slave.ctx.topics.get(TOPIC) is not None
        route = await client.invoke(
            namesrv.address, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                                     {"topic": TOPIC})
        )  # fmt: skip
        assert route.code == ResponseCode.SUCCESS
        change = RemotingCommand.request(
            RequestCode.UPDATE_BROKER_CONFIG, body=b"tls.server.mode=disabled\n"
        )
        refused = await client.invoke(master.address, change)
        assert refused.code == ResponseCode.SYSTEM_ERROR
        assert "tls.server.mode cannot change at runtime" in (refused.remark or "")
        change = RemotingCommand.request(
            RequestCode.UPDATE_NAMESRV_CONFIG, body=b"tls.server.mode=disabled\n"
        )
        refused = await client.invoke(namesrv.address, change)
        assert refused.code == ResponseCode.SYSTEM_ERROR
        assert "tls.server.mode cannot change at runtime" in (refused.remark or "")
    finally:
        await client.close()
    for app in (namesrv, master):
        plain = RemotingClient()
        with pytest.raises(errors.ConnectionClosedError):
            await plain.invoke(app.address, RemotingCommand.request(RequestCode.HEART_BEAT))
        await plain.close()
        assert app.server.faults.counts[faults.TLS] == 1
    assert master.replicas is not None
    assert master.replicas.faults.counts[faults.TLS] == 0  # the slave's stream was TLS


def test_rocketmq_tls_property_names(tls_certs: CertFiles) -> None:
    text = f"""
tls.server.mode=enforcing
tls.server.certPath={tls_certs.server_cert}
tls.server.keyPath={tls_certs.server_key}
tls.server.trustCertPath={tls_certs.ca}
tls.server.need.client.auth=require
tls.client.certPath={tls_certs.client_cert}
tls.client.keyPath={tls_certs.client_key}
tls.client.trustCertPath={tls_certs.ca}
"""
    settings = build(BrokerSettings, parse_properties(text))
    assert settings.tls_server() == TlsServerConfig(
        TlsMode.ENFORCING,
        str(tls_certs.server_cert),
        str(tls_certs.server_key),
        str(tls_certs.ca),
        ClientAuth.REQUIRE,
    )
    # An enforcing broker connects out with TLS too, as RocketMQ's does; peers are known
    # by addresses their certificates may not name.
    assert settings.tls_client() == TlsConfig(
        ca_file=str(tls_certs.ca),
        cert_file=str(tls_certs.client_cert),
        key_file=str(tls_certs.client_key),
        check_hostname=False,
    )
    assert "tls.server.mode=enforcing" in to_properties(settings).splitlines()
    assert build(BrokerSettings, {}).tls_client() is None
    assert build(BrokerSettings, {"tls.enable": "true"}).tls_client() == TlsConfig(
        check_hostname=False
    )
    with pytest.raises(SettingsError, match="certificate"):
        build(NamesrvSettings, {"tls.server.mode": "permissive"})
