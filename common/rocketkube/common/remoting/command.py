"""The RemotingCommand: one request or response on a remoting connection.

A command is header fields plus an opaque body. ``ext_fields`` always holds
strings, whatever the peer sent (see :mod:`rocketkube.common.remoting.frame`),
so processors and typed headers never see a JSON number or boolean.

The class is the compiled one of ``_frames.pyx`` when that module is built and not
turned off (``ROCKETKUBE_NO_EXTENSIONS``), else the dataclass here, its Python sibling of
the same API. The compiled one may come from the frame scan with its extFields still as
``header_names`` (one letter each) and ``header_values``, making the dict when
``ext_fields`` is first read; the Python decoder always makes the dict (``header_values``
is None).
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rocketkube.common import compiled
from rocketkube.common.remoting import codes
from rocketkube.common.remoting.codes import FLAG_ONEWAY, FLAG_RESPONSE, SERVER_VERSION

__all__ = ["FLAG_ONEWAY", "FLAG_RESPONSE", "SERVER_VERSION", "Body", "RemotingCommand"]

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
    def header_names(self) -> str:
        """The one-letter extFields names a compiled scan kept; always empty here."""
        return ""

    @property
    def header_values(self) -> list[str] | None:
        """The extFields values a compiled scan kept, by ``header_names``, while the dict
        is not made; always None here (the dict is made at decoding)."""
        return None

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


PyRemotingCommand = RemotingCommand
"""The Python implementation, whichever serves."""

if not TYPE_CHECKING:
    RemotingCommand = (
        typing.cast(
            "type[PyRemotingCommand] | None",
            compiled.load("rocketkube.common.remoting._frames", "RemotingCommand"),
        )
        or PyRemotingCommand
    )
