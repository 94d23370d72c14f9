"""What a producer is configured with, as one frozen value (Java ``DefaultMQProducer``'s
setters): :class:`ProducerSettings`.

``Producer(settings=ProducerSettings(...))`` and the keyword form
``Producer("group", addr, send_timeout=5.0)`` are the same producer: the keyword form
builds a :class:`ProducerSettings`, whose field defaults are the constructor's defaults.
The ``rocketkube bench`` producers and ``rocketkube admin sendMessage`` build theirs from
their flags.
"""

from __future__ import annotations

import dataclasses

from rocketkube.client import routing
from rocketkube.common import acl
from rocketkube.common.remoting.tls import TlsConfig

__all__ = ["ProducerSettings"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ProducerSettings:
    """Every option of a :class:`~rocketkube.client.producer.producer.Producer` (and of a
    transactional one); ValueError when ``auto_batch`` is on and ``batch_max_bytes`` is not
    in ``1..max_message_size``."""

    group: str
    """The producer group."""
    namesrv_addr: str = "127.0.0.1:9876"
    """Name servers, separated by ``;``."""
    send_timeout: float = 3.0
    """Bounds a whole send, retries included (seconds); also each connect."""
    retry_times_when_send_failed: int = 2
    """How many more brokers a failed send may try."""
    compress_over: int = 4096
    """Bodies of this many bytes or more are compressed (zlib)."""
    max_message_size: int = 4 * 1024 * 1024
    """Larger bodies are refused before sending."""
    default_topic_queue_nums: int = routing.DEFAULT_TOPIC_QUEUE_NUMS
    """Queues of a topic created on first send."""
    poll_name_server_interval: float = 30.0
    """How often routes are read again (seconds)."""
    heartbeat_interval: float = 30.0
    """How often brokers sent to get a heartbeat (seconds)."""
    send_latency_fault_enable: bool = False
    """Avoid brokers that answered slowly or failed, for a while."""
    client_ip: str = "127.0.0.1"
    """Goes into every ``UNIQ_KEY`` and into the client id."""
    auto_batch: bool = False
    """Gather sends of one topic (and queue) into batches (RocketMQ 5's ``autoBatch``)."""
    batch_max_delay_ms: int = 10
    """With ``auto_batch``: how long a batch gathers at most (milliseconds)."""
    batch_max_bytes: int = 32 * 1024
    """With ``auto_batch``: the most body bytes of one batch."""
    total_batch_max_bytes: int = 32 * 1024 * 1024
    """With ``auto_batch``: while this many batch bytes await answers, messages go alone."""
    tls: TlsConfig | bool | None = None
    """``True`` (the system's CAs) or a :class:`TlsConfig`: connect with TLS."""
    credentials: acl.CredentialsLike | None = None
    """``(access_key, secret_key)`` or :class:`~rocketkube.common.acl.Credentials`: sign
    every request (a broker with ``aclEnable=true``)."""

    def __post_init__(self) -> None:
        if self.auto_batch and not 0 < self.batch_max_bytes <= self.max_message_size:
            raise ValueError(f"batch_max_bytes must be in 1..{self.max_message_size}")
