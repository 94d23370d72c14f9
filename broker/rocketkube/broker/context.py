"""Everything a processor may use, in one place, passed in (no globals)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from rocketkube.broker.consumers.clients import ClientManager
from rocketkube.broker.consumers.groups import SubscriptionGroupManager
from rocketkube.broker.consumers.offsets import ConsumerOffsetManager
from rocketkube.broker.ha.master import HAService
from rocketkube.broker.settings import BrokerSettings
from rocketkube.broker.stats import BrokerStats
from rocketkube.broker.store import MessageStore
from rocketkube.broker.topics import TopicConfigManager


class RoutePublisher(Protocol):
    async def published(self) -> bool:
        """Wait (bounded) until the name servers route every topic change made so far."""
        ...


@dataclass(slots=True)
class BrokerContext:
    settings: BrokerSettings
    store: MessageStore
    topics: TopicConfigManager
    groups: SubscriptionGroupManager
    offsets: ConsumerOffsetManager
    clients: ClientManager
    stats: BrokerStats
    clock: Callable[[], int]
    broker_addr: str
    """``brokerIP1:port`` as bound: the STOREHOST of records and the host of msgIds."""
    permission: int
    """The broker's own permission (``brokerPermission``; the name server can wipe W)."""
    replicas: HAService | None = None
    """The master's replication service (None on a slave)."""
    routes: RoutePublisher | None = None
    """Registration with the name servers; processors that create a topic await it before
    they answer (None where a test runs processors without name servers)."""
