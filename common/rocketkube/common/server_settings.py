"""The limits a server puts on its peers, shared by the name server's and the broker's
settings, under RocketMQ's property names where it has them (``NettyServerConfig``, and the
frame decoder's system property), else named in its style.

    serverChannelMaxIdleTimeSeconds    a connection silent this long, or leaving a frame
                                       incomplete this long, is closed (120)
    com.rocketmq.remoting.frameMaxLength
                                       a frame announcing more bytes is refused and its
                                       connection closed (16 MiB)
    serverMaxConnections               connections past this many are closed at accept
                                       (10,000)
    serverChannelMaxRequestsInFlight   requests of one connection waiting for answers, at
                                       most; more are answered SYSTEM_BUSY (10,000)

docs/reliability.md (*Limits*) says how each is enforced and tested.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from rocketkube.common.remoting import frame
from rocketkube.common.remoting.server import ServerLimits

__all__ = ["RemotingServerSettings"]

_DEFAULTS = ServerLimits()


class RemotingServerSettings(BaseModel):
    """What a server takes of its peers; mixed into a server's settings."""

    server_channel_max_idle_time_seconds: int = Field(
        120, alias="serverChannelMaxIdleTimeSeconds", gt=0
    )
    frame_max_length: int = Field(
        _DEFAULTS.max_frame_length,
        alias="com.rocketmq.remoting.frameMaxLength",
        ge=1024,
        le=frame.MAX_FRAME_LENGTH,
        description="bytes a frame may announce; refused beyond",
    )
    server_max_connections: int = Field(
        _DEFAULTS.max_connections, alias="serverMaxConnections", gt=0
    )
    server_channel_max_requests_in_flight: int = Field(
        _DEFAULTS.max_requests_in_flight, alias="serverChannelMaxRequestsInFlight", gt=0
    )

    def server_limits(self) -> ServerLimits:
        return ServerLimits(
            max_frame_length=self.frame_max_length,
            max_connections=self.server_max_connections,
            max_requests_in_flight=self.server_channel_max_requests_in_flight,
        )
