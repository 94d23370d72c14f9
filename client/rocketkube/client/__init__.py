"""rocketkube client: the asyncio Python SDK for RocketMQ 4.x-compatible brokers.

Public API::

    from rocketkube.client import ConsumeStatus, Message, Producer, PushConsumer

    async with Producer("my-group", "127.0.0.1:9876") as producer:
        result = await producer.send(Message("MyTopic", b"hello"))

    async def on_messages(messages, context):
        ...
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer("my-consumer-group", "127.0.0.1:9876")
    await consumer.subscribe("MyTopic", "TagA || TagB")
    consumer.register_listener(on_messages)
    async with consumer:
        ...

Also :class:`LitePullConsumer` (poll/commit/seek), :class:`TransactionProducer`,
:class:`AdminClient` (typed admin API) and the blocking facade :mod:`rocketkube.client.sync`.

Options come as keyword arguments or as one frozen value: :class:`ProducerSettings`
(``Producer(settings=ProducerSettings(group="my-group", send_timeout=5.0))``),
:class:`ConsumerSettings` (what both consumers share) and :class:`AdminSettings`.

Every client takes ``tls=True`` (TLS, trusting the system's CAs) or a :class:`TlsConfig`
(a CA file, a client certificate and key, the server-name check on or off), and
``credentials=(access_key, secret_key)`` (or :class:`Credentials`) to sign every request
for a broker with ``aclEnable=true``.

Errors: :class:`MQClientError` and its subclasses (see :mod:`rocketkube.client.errors`),
plus the transport errors of :mod:`rocketkube.common.errors`, re-exported here.
"""

from rocketkube.client.admin.client import AdminClient
from rocketkube.client.admin.settings import AdminSettings
from rocketkube.client.consumer.allocation import (
    AllocateByConfig,
    AllocateStrategy,
    allocate_averagely,
    allocate_averagely_by_circle,
    allocate_by_consistent_hash,
)
from rocketkube.client.consumer.listener import (
    ConsumeContext,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    MessageListener,
    OrderlyMessageListener,
)
from rocketkube.client.consumer.lite_pull import ConsumeFrom, LitePullConsumer
from rocketkube.client.consumer.pull import PullResult, PullStatus
from rocketkube.client.consumer.push import MessageModel, PushConsumer
from rocketkube.client.consumer.selector import MessageSelector
from rocketkube.client.consumer.settings import ConsumerSettings
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
from rocketkube.client.producer.producer import (
    MessageQueueSelector,
    Producer,
    RoundRobinSelector,
    SendCallback,
    SendResult,
    SendStatus,
    select_by_hash,
)
from rocketkube.client.producer.settings import ProducerSettings
from rocketkube.client.producer.transaction import (
    LocalTransactionState,
    TransactionListener,
    TransactionProducer,
    TransactionSendResult,
)
from rocketkube.client.routing import MessageQueue, select_queue
from rocketkube.common.acl import Credentials
from rocketkube.common.errors import (
    ConnectionClosedError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
    RocketKubeError,
)
from rocketkube.common.filter import Sql92SyntaxError
from rocketkube.common.message.model import Message, MessageExt
from rocketkube.common.remoting.tls import TlsConfig

__all__ = [
    "AdminClient",
    "AdminSettings",
    "AllocateByConfig",
    "AllocateStrategy",
    "BrokerBusyError",
    "ClientStateError",
    "ConnectionClosedError",
    "ConsumeContext",
    "ConsumeFrom",
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "ConsumerSettings",
    "Credentials",
    "LitePullConsumer",
    "LocalTransactionState",
    "MQBrokerError",
    "MQClientError",
    "Message",
    "MessageExt",
    "MessageIllegalError",
    "MessageListener",
    "MessageModel",
    "MessageQueue",
    "MessageQueueSelector",
    "MessageSelector",
    "MessageValidationError",
    "NoPermissionError",
    "OrderlyMessageListener",
    "Producer",
    "ProducerSettings",
    "PullResult",
    "PullStatus",
    "PushConsumer",
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
    "Sql92SyntaxError",
    "TlsConfig",
    "TopicNotExistError",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "allocate_averagely",
    "allocate_averagely_by_circle",
    "allocate_by_consistent_hash",
    "for_code",
    "select_by_hash",
    "select_queue",
]
