"""What both consumers are configured with, as one frozen value: :class:`ConsumerSettings`.

The options a :class:`~rocketkube.client.consumer.push.PushConsumer` and a
:class:`~rocketkube.client.consumer.lite_pull.LitePullConsumer` share (who they are, where
the cluster is, where a group with no offset starts, how much a pull asks for, how secure
the connection is) live here; what only one of them does (the push consumer's listener
threads, rebalancing and retries; the lite pull consumer's polls and auto-commit) stays a
keyword of its constructor, since it means nothing to the other.

``PushConsumer(settings=ConsumerSettings(...), consume_concurrency=4)`` and the keyword form
``PushConsumer("group", addr, consume_from="first", consume_concurrency=4)`` are the same
consumer: the keyword form builds a :class:`ConsumerSettings`, whose field defaults are the
constructors' defaults. The ``rocketkube bench consumer`` builds its own from its flags.
"""

from __future__ import annotations

import dataclasses

from rocketkube.client.consumer.core import FROM_WHERE, ConsumeFrom
from rocketkube.client.consumer.pull import DEFAULT_MAX_INFLATED_BODY_SIZE
from rocketkube.common import acl
from rocketkube.common.remoting.tls import TlsConfig

__all__ = ["ConsumerSettings"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ConsumerSettings:
    """The options both consumers take; ValueError for a ``consume_from`` that is not one
    of ``last``, ``first`` and ``timestamp``, for ``timestamp`` without
    ``consume_timestamp_ms``, and for a size below 1."""

    group: str
    """The consumer group."""
    namesrv_addr: str = "127.0.0.1:9876"
    """Name servers, separated by ``;``."""
    consume_from: ConsumeFrom = "last"
    """Where a group that never committed an offset starts in a queue (Java's
    ``ConsumeFromWhere``): its end, its start, or ``consume_timestamp_ms``. The lite pull
    consumer's keyword for it is ``consume_from_where``."""
    consume_timestamp_ms: int | None = None
    """Epoch milliseconds, for ``consume_from="timestamp"``."""
    pull_batch_size: int = 32
    """The ``maxMsgNums`` of each pull."""
    request_timeout: float = 3.0
    """Bounds every request but the long-polling pulls (seconds)."""
    client_ip: str = "127.0.0.1"
    """Goes into the client id."""
    max_inflated_body_size: int = DEFAULT_MAX_INFLATED_BODY_SIZE
    """A compressed body is inflated up to this many bytes; one that inflates further is
    handed over as stored (see :mod:`rocketkube.client.consumer.pull`)."""
    tls: TlsConfig | bool | None = None
    """``True`` (the system's CAs) or a :class:`TlsConfig`: connect with TLS."""
    credentials: acl.CredentialsLike | None = None
    """``(access_key, secret_key)`` or :class:`~rocketkube.common.acl.Credentials`: sign
    every request (a broker with ``aclEnable=true``)."""

    def __post_init__(self) -> None:
        if self.consume_from not in FROM_WHERE:
            raise ValueError(f"consume_from must be one of {sorted(FROM_WHERE)}")
        if self.consume_from == "timestamp" and self.consume_timestamp_ms is None:
            raise ValueError('consume_from="timestamp" needs consume_timestamp_ms')
        for name, value in (
            ("pull_batch_size", self.pull_batch_size),
            ("max_inflated_body_size", self.max_inflated_body_size),
        ):
            if value < 1:
                raise ValueError(f"{name} must be positive")
