"""TLS settings shared by the name server's and the broker's settings, under RocketMQ's
property names (Java's ``TlsSystemConfig``, read there from system properties or
``tls.properties``; here from the server's properties file like every other setting).

    tls.server.mode               disabled | permissive | enforcing (default disabled)
    tls.server.certPath           PEM certificate the server shows
    tls.server.keyPath            its PEM key (unencrypted; default: in certPath)
    tls.server.trustCertPath      PEM CAs client certificates must chain to
    tls.server.need.client.auth   none | optional | require
    tls.enable                    the broker's own connections use TLS (also when the
                                  server mode is enforcing, as RocketMQ's broker does)
    tls.client.certPath           PEM certificate the broker shows its peers, if asked
    tls.client.keyPath            its PEM key
    tls.client.trustCertPath      PEM CAs the peers' certificates must chain to
    tls.client.authServer         check the peers' certificates (default true; RocketMQ's
                                  default is false, which trusts any server)

A broker's peers (name servers, its master) are known by IP address, often one their
certificates do not name: its connections check the chain, not the name, as RocketMQ's do.
"""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, Field, model_validator

from rocketkube.common.remoting.tls import ClientAuth, TlsConfig, TlsMode, TlsServerConfig

__all__ = ["TlsClientSettings", "TlsServerSettings"]


class TlsServerSettings(BaseModel):
    """What a server accepts; mixed into a server's settings."""

    tls_server_mode: TlsMode = Field(TlsMode.DISABLED, alias="tls.server.mode")
    tls_server_cert_path: str | None = Field(None, alias="tls.server.certPath")
    tls_server_key_path: str | None = Field(None, alias="tls.server.keyPath")
    tls_server_trust_cert_path: str | None = Field(None, alias="tls.server.trustCertPath")
    tls_server_need_client_auth: ClientAuth = Field(
        ClientAuth.NONE, alias="tls.server.need.client.auth"
    )

    @model_validator(mode="after")
    def _server_certificate_given(self) -> Self:
        self.tls_server()  # a ValueError says what is missing
        return self

    def tls_server(self) -> TlsServerConfig:
        return TlsServerConfig(
            mode=self.tls_server_mode,
            cert_file=self.tls_server_cert_path,
            key_file=self.tls_server_key_path,
            trust_cert_file=self.tls_server_trust_cert_path,
            client_auth=self.tls_server_need_client_auth,
        )


class TlsClientSettings(TlsServerSettings):
    """What a server that also connects out (a broker) accepts and presents."""

    tls_enable: bool = Field(False, alias="tls.enable")
    tls_client_cert_path: str | None = Field(None, alias="tls.client.certPath")
    tls_client_key_path: str | None = Field(None, alias="tls.client.keyPath")
    tls_client_trust_cert_path: str | None = Field(None, alias="tls.client.trustCertPath")
    tls_client_auth_server: bool = Field(True, alias="tls.client.authServer")

    def tls_client(self) -> TlsConfig | None:
        """How to connect out: None for plain TCP."""
        if not (self.tls_enable or self.tls_server_mode is TlsMode.ENFORCING):
            return None
        return TlsConfig(
            ca_file=self.tls_client_trust_cert_path,
            cert_file=self.tls_client_cert_path,
            key_file=self.tls_client_key_path,
            check_hostname=False,
            verify=self.tls_client_auth_server,
        )
