"""TLS for remoting connections: what a server accepts, what a client presents, and the
SSL contexts both build from certificate files.

A server runs in one of RocketMQ's three modes (``tls.server.mode``, Java's ``TlsMode``):

    disabled     plain TCP only; a TLS handshake is read as a bad frame and closed
    permissive   TLS and plain TCP on one port, told apart by the first byte a client
                 sends (0x16 opens a TLS handshake record; a remoting frame starts with
                 the high byte of its length, 0 for any frame under 16 MiB)
    enforcing    TLS only; a plain connection is closed unanswered

Client certificates are asked for as ``tls.server.need.client.auth`` says (none, optional,
require) and checked against ``tls.server.trustCertPath``. A client (:class:`TlsConfig`)
checks the server's certificate against a CA file (the system's CAs when none is given),
and its name unless told not to; it presents a certificate of its own when given one.
Keys are read unencrypted: a key password would be one more secret in the properties a
broker hands out (GET_BROKER_CONFIG).

The listener that tells TLS from plain connections is :mod:`~.listener`.
"""

from __future__ import annotations

import dataclasses
import enum
import ssl
from typing import Final

__all__ = [
    "HANDSHAKE_RECORD",
    "ClientAuth",
    "TlsConfig",
    "TlsMode",
    "TlsServerConfig",
    "client_config",
]

HANDSHAKE_RECORD: Final = 0x16
"""The first byte of a TLS connection: the content type of a handshake record."""


class TlsMode(enum.StrEnum):
    """``tls.server.mode``: which connections a server accepts."""

    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"


class ClientAuth(enum.StrEnum):
    """``tls.server.need.client.auth``: whether a TLS client must present a certificate."""

    NONE = "none"
    OPTIONAL = "optional"
    REQUIRE = "require"


_VERIFY_MODE: Final = {
    ClientAuth.NONE: ssl.CERT_NONE,
    ClientAuth.OPTIONAL: ssl.CERT_OPTIONAL,
    ClientAuth.REQUIRE: ssl.CERT_REQUIRED,
}


@dataclasses.dataclass(frozen=True, slots=True)
class TlsConfig:
    """How a client connects with TLS: the CAs it trusts and the certificate it shows."""

    ca_file: str | None = None
    """PEM CA certificates the server's must chain to; None: the system's."""
    cert_file: str | None = None
    """PEM client certificate (chain), for servers that ask for one."""
    key_file: str | None = None
    """PEM private key of ``cert_file``; None: the key is in ``cert_file``."""
    check_hostname: bool = True
    """Check that the server's certificate names the host connected to."""
    verify: bool = True
    """Check the server's certificate at all (RocketMQ's ``tls.client.authServer``);
    without it the connection is encrypted but the server unauthenticated."""

    def context(self) -> ssl.SSLContext:
        """A client SSL context; ``OSError``/``ssl.SSLError`` when a file does not load."""
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.ca_file)
        ctx.check_hostname = self.verify and self.check_hostname
        if not self.verify:
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert_file:
            ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx


def client_config(tls: TlsConfig | bool | None) -> TlsConfig | None:
    """What a client's ``tls`` argument asks for: ``True`` is TLS trusting the system's
    CAs, ``False`` or None plain TCP."""
    if isinstance(tls, TlsConfig):
        return tls
    return TlsConfig() if tls else None


@dataclasses.dataclass(frozen=True, slots=True)
class TlsServerConfig:
    """What a server accepts (:class:`TlsMode`) and the certificate it shows."""

    mode: TlsMode = TlsMode.DISABLED
    cert_file: str | None = None
    """PEM server certificate (chain); required unless the mode is disabled."""
    key_file: str | None = None
    """PEM private key of ``cert_file``; None: the key is in ``cert_file``."""
    trust_cert_file: str | None = None
    """PEM CA certificates client certificates must chain to; None: the system's."""
    client_auth: ClientAuth = ClientAuth.NONE

    def __post_init__(self) -> None:
        if self.mode is not TlsMode.DISABLED and not self.cert_file:
            raise ValueError(f"TLS mode {self.mode} needs a server certificate file")

    @property
    def enabled(self) -> bool:
        return self.mode is not TlsMode.DISABLED

    def context(self) -> ssl.SSLContext:
        """A server SSL context; ``OSError``/``ssl.SSLError`` when a file does not load."""
        assert self.cert_file is not None, "no TLS context when disabled"
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)  # TLS 1.2 at least
        ctx.load_cert_chain(self.cert_file, self.key_file)
        ctx.verify_mode = _VERIFY_MODE[self.client_auth]
        if self.client_auth is not ClientAuth.NONE:
            if self.trust_cert_file:
                ctx.load_verify_locations(self.trust_cert_file)
            else:
                ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        return ctx
