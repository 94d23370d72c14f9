"""The client's exception tree, rooted in the shared :class:`RocketKubeError`.

    RocketKubeError
    ├── RemotingError (rocketkube.common.errors)   transport failures, all retriable:
    │   ├── RemotingConnectError                   cannot connect
    │   ├── RemotingTimeoutError                   no answer within ``send_timeout``
    │   └── ConnectionClosedError                  the peer went away mid-request
    └── MQClientError                  raised by the client itself
        ├── ClientStateError           the producer is not started, or already closed
        ├── MessageValidationError     a message the client refuses to send (also ValueError)
        ├── RouteNotFoundError         no name server knows the topic, nor TBW102 (retriable)
        └── MQBrokerError              the broker answered with an error code
            ├── BrokerBusyError            SYSTEM_BUSY, FLOW_CONTROL, ``[PC_SYNCHRONIZED]``
            ├── ServiceNotAvailableError   SERVICE_NOT_AVAILABLE (slave, disk full, shutdown)
            ├── TopicNotExistError         TOPIC_NOT_EXIST (retriable: right after creation)
            ├── NoPermissionError          NO_PERMISSION
            └── MessageIllegalError        MESSAGE_ILLEGAL (body or properties too large)

Transport errors are not wrapped: a caller catches
:class:`rocketkube.common.errors.RemotingTimeoutError` and friends as they are.
:func:`for_code` turns a broker's response code into the matching :class:`MQBrokerError`;
``retriable`` says whether the producer may try again on another broker.
"""

from __future__ import annotations

from typing import ClassVar, Final

from rocketkube.common.errors import RocketKubeError
from rocketkube.common.remoting.codes import ResponseCode, code_name

__all__ = [
    "BrokerBusyError",
    "ClientStateError",
    "MQBrokerError",
    "MQClientError",
    "MessageIllegalError",
    "MessageValidationError",
    "NoPermissionError",
    "RouteNotFoundError",
    "ServiceNotAvailableError",
    "TopicNotExistError",
    "for_code",
]


class MQClientError(RocketKubeError):
    """Base of every error the rocketkube client raises itself."""


class ClientStateError(MQClientError):
    """The client was used before :meth:`start` or after :meth:`close`."""


class MessageValidationError(MQClientError, ValueError):
    """A message the client refuses before sending: empty body, too large, mixed batch."""


class RouteNotFoundError(MQClientError):
    """No name server returned a route for the topic (nor for ``TBW102``)."""

    retriable = True


class MQBrokerError(MQClientError):
    """The broker answered a request with an error ``code`` and a ``remark``.

    ``broker`` names the broker (its name or address) that answered, when known.
    """

    #: Codes (beside the instance's) for which a retry, possibly elsewhere, can help.
    _RETRIABLE_CODES: ClassVar[frozenset[int]] = frozenset(
        {
            ResponseCode.SYSTEM_BUSY,
            ResponseCode.SERVICE_NOT_AVAILABLE,
            ResponseCode.TOPIC_NOT_EXIST,
            ResponseCode.FLUSH_DISK_TIMEOUT,
            ResponseCode.FLUSH_SLAVE_TIMEOUT,
            ResponseCode.SLAVE_NOT_AVAILABLE,
            ResponseCode.FLOW_CONTROL,
            ResponseCode.SYSTEM_ERROR,
            ResponseCode.NO_PERMISSION,
        }
    )

    def __init__(self, code: int, remark: str | None = None, broker: str | None = None) -> None:
        self.code = code
        self.remark = remark
        self.broker = broker
        where = f" from {broker}" if broker else ""
        super().__init__(f"{code_name(code, response=True)} ({code}){where}: {remark or ''}")

    @property
    def retriable(self) -> bool:  # type: ignore[override]
        """Whether another attempt (on another broker) can succeed.

        SYSTEM_ERROR and NO_PERMISSION are retriable because the next attempt goes to a
        different broker (a page-cache-busy or read-only broker); MESSAGE_ILLEGAL and
        unknown codes are not.
        """
        return self.code in self._RETRIABLE_CODES


class BrokerBusyError(MQBrokerError):
    """The broker is overloaded (SYSTEM_BUSY, FLOW_CONTROL, page cache busy)."""


class ServiceNotAvailableError(MQBrokerError):
    """The broker cannot write now: a slave, a full disk, or shutting down."""


class TopicNotExistError(MQBrokerError):
    """The broker does not know the topic; retriable as routes settle after creation."""


class NoPermissionError(MQBrokerError):
    """The broker or topic is not writable, or the topic is a reserved system topic."""


class MessageIllegalError(MQBrokerError):
    """The broker rejected the message itself (too large body or properties)."""


_BY_CODE: Final[dict[int, type[MQBrokerError]]] = {
    ResponseCode.SYSTEM_BUSY: BrokerBusyError,
    ResponseCode.FLOW_CONTROL: BrokerBusyError,
    ResponseCode.SERVICE_NOT_AVAILABLE: ServiceNotAvailableError,
    ResponseCode.TOPIC_NOT_EXIST: TopicNotExistError,
    ResponseCode.NO_PERMISSION: NoPermissionError,
    ResponseCode.MESSAGE_ILLEGAL: MessageIllegalError,
}


def for_code(code: int, remark: str | None = None, broker: str | None = None) -> MQBrokerError:
    """The :class:`MQBrokerError` (subclass) for a broker's response ``code``.

    A SYSTEM_ERROR whose remark starts ``[PC_SYNCHRONIZED]`` (page cache busy) is a
    :class:`BrokerBusyError`; unknown codes give a plain :class:`MQBrokerError`.
    """
    cls = _BY_CODE.get(code, MQBrokerError)
    if code == ResponseCode.SYSTEM_ERROR and remark and remark.startswith("[PC_SYNCHRONIZED]"):
        cls = BrokerBusyError
    return cls(code, remark, broker)
