"""Name server settings, under RocketMQ's property names (NamesrvConfig, NettyServerConfig,
and TLS's: :mod:`rocketkube.common.tls_settings`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import ConfigDict, Field

from rocketkube.common.server_settings import RemotingServerSettings
from rocketkube.common.tls_settings import TlsServerSettings

#: A compressed REGISTER_BROKER body of 100,000 topics with 127-character names inflates
#: to 15 MB; 64 MiB leaves four times that and bounds what one broker can make us hold.
DEFAULT_MAX_REGISTER_BODY_INFLATED_SIZE = 64 * 1024 * 1024


def _default_kv_path() -> str:
    return str(Path.home() / "namesrv" / "kvConfig.json")


class NamesrvSettings(TlsServerSettings, RemotingServerSettings):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")

    listen_port: int = Field(9876, alias="listenPort", ge=0, le=65535)
    bind_address: str = Field("0.0.0.0", alias="bindAddress")
    http_port: int = Field(9877, alias="httpPort", ge=0, le=65535, description="metrics/health")
    kv_config_path: str = Field(default_factory=_default_kv_path, alias="kvConfigPath")
    order_message_enable: bool = Field(False, alias="orderMessageEnable")
    scan_not_active_broker_interval: int = Field(
        10_000, alias="scanNotActiveBrokerInterval", gt=0, description="ms"
    )
    broker_channel_expired_time: int = Field(
        120_000, alias="brokerChannelExpiredTime", gt=0, description="ms"
    )
    max_register_body_inflated_size: int = Field(
        DEFAULT_MAX_REGISTER_BODY_INFLATED_SIZE,
        alias="maxRegisterBodyInflatedSize",
        gt=0,
        description="bytes a compressed register body may inflate to; refused beyond",
    )
    config_black_list: str = Field(
        "configBlackList;configStorePath;kvConfigPath", alias="configBlackList"
    )

    def black_listed(self) -> set[str]:
        return {k.strip() for k in self.config_black_list.split(";") if k.strip()}
