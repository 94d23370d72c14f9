"""The RemotingCommand: one request or response on a remoting connection.

A command is header fields plus an opaque body. ``ext_fields`` always holds
strings, whatever the peer sent (see :mod:`rocketkube.common.remoting.frame`),
so processors and typed headers never see a JSON number or boolean.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rocketkube.common.remoting import codes

#: flag bit 0: the command is a response.
FLAG_RESPONSE = 0x1
#: flag bit 1: the request expects no response.
FLAG_ONEWAY = 0x2

#: What this implementation reports as its version: V4_9_8. Java clients read the
#: heartbeat response's version and refuse SQL92 subscriptions below 232.
SERVER_VERSION = 409

Body = bytes | bytearray | memoryview


@dataclass(slots=True)
class RemotingCommand:
    code: int
    opaque: int = 0
    flag: int = 0
    language: str = "JAVA"
    version: int = SERVER_VERSION
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: Body = b""
    serialize_type: codes.SerializeType = codes.SerializeType.JSON

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: Body = b"",
        *,
        oneway: bool = False,
        language: str = "PYTHON",
    ) -> RemotingCommand:
        return cls(
            code=code,
            flag=FLAG_ONEWAY if oneway else 0,
            ext_fields=ext_fields if ext_fields is not None else {},
            body=body,
            language=language,
        )

    @classmethod
    def response(
        cls,
        code: int = codes.ResponseCode.SUCCESS,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: Body = b"",
    ) -> RemotingCommand:
        """A response; the dispatcher fills in the opaque of the request it answers."""
        return cls(
            code=code,
            flag=FLAG_RESPONSE,
            remark=remark,
            ext_fields=ext_fields if ext_fields is not None else {},
            body=body,
        )

    def body_bytes(self) -> bytes:
        return self.body if isinstance(self.body, bytes) else bytes(self.body)
