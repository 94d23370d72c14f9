"""TLS on remoting connections over real sockets on 127.0.0.1: each server mode, client
certificates, and what a client that does not trust the server sees. Certificates are made
at run time (``tls_certs``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from certs import CertFiles

from rocketkube.common import errors
from rocketkube.common.remoting import faults
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer
from rocketkube.common.remoting.tls import ClientAuth, TlsConfig, TlsMode, TlsServerConfig

ECHO = 1000


def _echo(conn: Connection, req: RemotingCommand) -> Reply:
    return RemotingCommand.response(body=bytes(req.body))


def server_tls(
    certs: CertFiles, mode: TlsMode, client_auth: ClientAuth = ClientAuth.NONE
) -> TlsServerConfig:
    return TlsServerConfig(
        mode=mode,
        cert_file=str(certs.server_cert),
        key_file=str(certs.server_key),
        trust_cert_file=str(certs.ca),
        client_auth=client_auth,
    )


def client_tls(certs: CertFiles, **overrides: Any) -> TlsConfig:
    return TlsConfig(ca_file=str(certs.ca), **overrides)


@contextlib.asynccontextmanager
async def serving(tls: TlsServerConfig | None) -> AsyncIterator[RemotingServer]:
    server = RemotingServer(Dispatcher({ECHO: _echo}), "127.0.0.1", 0, idle_timeout=60, tls=tls)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def echo(server: RemotingServer, tls: TlsConfig | None, host: str = "127.0.0.1") -> bytes:
    """One request over a new connection, with TLS or without."""
    client = RemotingClient(tls=tls, connect_timeout=10, timeout=10)
    try:
        answer = await client.invoke(
            f"{host}:{server.port}", RemotingCommand.request(ECHO, body=b"ping")
        )
    finally:
        await client.close()
    assert answer.code == ResponseCode.SUCCESS
    return bytes(answer.body)


async def test_permissive_serves_tls_and_plain_on_one_port(tls_certs: CertFiles) -> None:
    async with serving(server_tls(tls_certs, TlsMode.PERMISSIVE)) as server:
        assert await echo(server, client_tls(tls_certs)) == b"ping"
        assert await echo(server, None) == b"ping"
        assert await echo(server, client_tls(tls_certs), host="localhost") == b"ping"
        assert server.faults.counts[faults.TLS] == 0


async def test_enforcing_refuses_plain_connections(
    tls_certs: CertFiles, caplog: pytest.LogCaptureFixture
) -> None:
    async with serving(server_tls(tls_certs, TlsMode.ENFORCING)) as server:
        with caplog.at_level(logging.WARNING):
            for _ in range(3):
                with pytest.raises(errors.ConnectionClosedError):
                    await echo(server, None)
        assert server.faults.counts[faults.TLS] == 3
        told = [r for r in caplog.records if "TLS is enforced" in r.getMessage()]
        assert len(told) == 1  # once for the host, not once a connection
        assert "127.0.0.1" in told[0].getMessage()
        assert await echo(server, client_tls(tls_certs)) == b"ping"


async def test_disabled_refuses_tls_cleanly(tls_certs: CertFiles) -> None:
    async with serving(None) as server:
        with pytest.raises(errors.RemotingConnectError):
            await echo(server, client_tls(tls_certs))
        assert server.faults.counts[faults.FRAME] == 1  # a handshake is no frame
        assert await echo(server, None) == b"ping"


async def test_required_client_certificate(tls_certs: CertFiles) -> None:
    tls = server_tls(tls_certs, TlsMode.ENFORCING, ClientAuth.REQUIRE)
    async with serving(tls) as server:
        # TLS 1.3 ends the client's handshake before the server checks its certificate:
        # the refusal comes as the connection closing, before any answer.
        with pytest.raises(errors.RemotingError):
            await echo(server, client_tls(tls_certs))
        rogue = client_tls(
            tls_certs,
            cert_file=str(tls_certs.rogue_client_cert),
            key_file=str(tls_certs.rogue_client_key),
        )
        with pytest.raises(errors.RemotingError):
            await echo(server, rogue)
        assert server.faults.counts[faults.TLS] == 2
        trusted = client_tls(
            tls_certs, cert_file=str(tls_certs.client_cert), key_file=str(tls_certs.client_key)
        )
        assert await echo(server, trusted) == b"ping"


async def test_optional_client_certificate(tls_certs: CertFiles) -> None:
    tls = server_tls(tls_certs, TlsMode.ENFORCING, ClientAuth.OPTIONAL)
    async with serving(tls) as server:
        assert await echo(server, client_tls(tls_certs)) == b"ping"
        trusted = client_tls(
            tls_certs, cert_file=str(tls_certs.client_cert), key_file=str(tls_certs.client_key)
        )
        assert await echo(server, trusted) == b"ping"


async def test_client_checks_the_server(tls_certs: CertFiles) -> None:
    async with serving(server_tls(tls_certs, TlsMode.ENFORCING)) as server:
        with pytest.raises(errors.RemotingConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await echo(server, TlsConfig(ca_file=str(tls_certs.rogue_ca)))
        # Encrypted but unauthenticated, when asked for.
        assert await echo(server, TlsConfig(verify=False)) == b"ping"


async def test_client_checks_the_server_name(tls_certs: CertFiles) -> None:
    """A certificate of the right CA for another host: refused unless the check is off."""
    elsewhere = TlsServerConfig(
        mode=TlsMode.ENFORCING,
        cert_file=str(tls_certs.elsewhere_cert),
        key_file=str(tls_certs.elsewhere_key),
    )
    async with serving(elsewhere) as server:
        with pytest.raises(errors.RemotingConnectError, match="mismatch"):
            await echo(server, client_tls(tls_certs))
        unchecked = client_tls(tls_certs, check_hostname=False)
        assert await echo(server, unchecked) == b"ping"


async def test_silent_connection_is_closed_untold(tls_certs: CertFiles) -> None:
    tls = server_tls(tls_certs, TlsMode.PERMISSIVE)
    server = RemotingServer(Dispatcher({ECHO: _echo}), "127.0.0.1", 0, idle_timeout=0.05, tls=tls)
    await server.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        assert await reader.read() == b""  # closed by the server, having said nothing
        writer.close()
        await writer.wait_closed()
        assert server.faults.counts[faults.TLS] == 0
    finally:
        await server.stop()


def test_a_tls_mode_needs_a_certificate() -> None:
    with pytest.raises(ValueError, match="certificate"):
        TlsServerConfig(mode=TlsMode.PERMISSIVE)


def test_tls_on_uvloop(tls_certs: CertFiles) -> None:
    """Servers run on uvloop in production: the first-byte peek and the hand-over too."""
    uvloop = pytest.importorskip("uvloop")

    async def both() -> tuple[bytes, bytes]:
        async with serving(server_tls(tls_certs, TlsMode.PERMISSIVE)) as server:
            return await echo(server, client_tls(tls_certs)), await echo(server, None)

    run: Callable[..., tuple[bytes, bytes]] = uvloop.run
    assert run(both()) == (b"ping", b"ping")


async def test_a_port_in_use_fails_the_start(tls_certs: CertFiles) -> None:
    async with serving(server_tls(tls_certs, TlsMode.PERMISSIVE)) as taken:
        server = RemotingServer(
            Dispatcher({ECHO: _echo}),
            "127.0.0.1",
            taken.port,
            tls=server_tls(tls_certs, TlsMode.PERMISSIVE),
        )
        with pytest.raises(OSError, match="in use"):
            await server.start()
        await server.stop()
