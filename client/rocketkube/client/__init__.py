"""rocketkube client: the asyncio Python SDK for RocketMQ 4.x-compatible brokers.

Public API::

    from rocketkube.client import Message, Producer

    async with Producer("my-group", "127.0.0.1:9876") as producer:
        result = await producer.send(Message("MyTopic", b"hello"))

Errors: :class:`MQClientError` and its subclasses (see :mod:`rocketkube.client.errors`),
plus the transport errors of :mod:`rocketkube.common.errors`, re-exported here.
"""

from rocketkube.client.admin import AdminClient, PullResult, PullStatus
from rocketkube.client.errors import (
    BrokerBusyError,
    ClientStateError,
    MessageIllegalError,
    MessageValidationError,
    MQBrokerError,
    MQClientError,
    NoPermissionError,
    RouteNotFoundError,
    ServiceNotAvailableError,
    TopicNotExistError,
    for_code,
)
from rocketkube.client.lite_pull import ConsumeFrom, LitePullConsumer
from rocketkube.client.producer import (
    MessageQueueSelector,
    Producer,
    RoundRobinSelector,
    SendCallback,
    SendResult,
    SendStatus,
    select_by_hash,
)
from rocketkube.client.routing import MessageQueue, select_queue
from rocketkube.client.transaction import (
    LocalTransactionState,
    TransactionListener,
    TransactionProducer,
    TransactionSendResult,
)
from rocketkube.common.errors import (
    ConnectionClosedError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
    RocketKubeError,
)
from rocketkube.common.message.model import Message

__all__ = [
    "AdminClient",
    "BrokerBusyError",
    "ClientStateError",
    "ConnectionClosedError",
    "ConsumeFrom",
    "LitePullConsumer",
    "LocalTransactionState",
    "MQBrokerError",
    "MQClientError",
    "Message",
    "MessageIllegalError",
    "MessageQueue",
    "MessageQueueSelector",
    "MessageValidationError",
    "NoPermissionError",
    "Producer",
    "PullResult",
    "PullStatus",
    "RemotingConnectError",
    "RemotingError",
    "RemotingTimeoutError",
    "RocketKubeError",
    "RoundRobinSelector",
    "RouteNotFoundError",
    "SendCallback",
    "SendResult",
    "SendStatus",
    "ServiceNotAvailableError",
    "TopicNotExistError",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "for_code",
    "select_by_hash",
    "select_queue",
]
