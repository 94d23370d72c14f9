"""The exception tree shared by every rocketkube component.

    RocketKubeError
    ├── ProtocolError            bytes on the wire that are not a RocketMQ frame; the
    │   ├── FrameTooLargeError   connection that sent them is closed, nothing else
    │   ├── MessageFormatError   a message, batch, id or host that does not decode
    │   └── InflateLimitError    a compressed body inflates past its configured cap
    ├── HeaderError              a request header misses a field or holds a bad value;
    │                            answered with SYSTEM_ERROR, the connection stays open
    └── RemotingError            transport failures seen by a caller
        ├── RemotingConnectError     could not connect (retriable)
        ├── RemotingTimeoutError     no response in time (retriable)
        └── ConnectionClosedError    the peer went away with the request pending (retriable)

Each class says through ``retriable`` whether trying again (possibly elsewhere) can help.
"""

from __future__ import annotations


class RocketKubeError(Exception):
    """Base of every error rocketkube raises on purpose."""

    retriable: bool = False


class ProtocolError(RocketKubeError):
    """The peer sent bytes that do not decode as a remoting frame."""


class FrameTooLargeError(ProtocolError):
    """A frame announced a length above the 16 MiB limit."""


class HeaderError(RocketKubeError):
    """A custom header field is missing or cannot be converted to its type."""


class RemotingError(RocketKubeError):
    """A request could not be carried to its peer and back."""

    retriable = True


class RemotingConnectError(RemotingError):
    """Connecting to the peer failed."""


class RemotingTimeoutError(RemotingError):
    """The peer did not answer within the timeout."""


class ConnectionClosedError(RemotingError):
    """The connection closed while a request was waiting for its response."""


class InflateLimitError(ProtocolError):
    """A compressed body inflates past the cap its reader allows (:mod:`.inflate`).

    Inflation stops one byte past the cap, so nothing larger was ever held. Whoever asked
    decides what follows: the name server refuses the registration, the SDK hands the
    message over as stored.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(f"inflates past {limit} bytes")
        self.limit = limit


class MessageFormatError(ProtocolError, ValueError):
    """Message bytes or text (batch body, message id, host address) that do not decode.

    A :class:`ProtocolError` for code that guards a connection, and a :class:`ValueError`
    for code that only validates input; a processor decides whether the peer is dropped.
    """
