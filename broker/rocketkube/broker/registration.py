"""Registering this broker with every name server: at start, every
``registerNameServerPeriod`` (30 s), soon after any topic change, and unregistering at
shutdown. Name server addresses may be host names (Kubernetes Service DNS names).

A created topic is routable when its creation is answered, as in Apache's broker: the
processors that create a topic (UPDATE_AND_CREATE_TOPIC, a send that auto-creates one) await
:meth:`Registrar.published` before they answer. It waits for a registration round that began
after the change, so creations arriving while a round is in flight share the next one; a name
server that does not answer holds the answer no longer than :data:`PUBLISH_WAIT_SECONDS` (or
``registerBrokerTimeoutMills`` when shorter), below the 5 s that admin tools wait.

A slave learns its master's remoting and HA addresses from the answers; until it has
them (its master may start later) it registers every ``MASTER_UNKNOWN_SECONDS``, and so
does any broker while a name server has not taken its registration yet: in Kubernetes a
cluster's name servers and brokers start at once, and a broker is ready only once
registered, so a broker that came up first would otherwise wait a whole period."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import zlib
from collections.abc import Callable

from rocketkube.broker.settings import BrokerSettings
from rocketkube.broker.topics import TopicConfigManager
from rocketkube.common import errors
from rocketkube.common.protocol import namesrv_headers as h
from rocketkube.common.protocol import permission
from rocketkube.common.protocol.topic_config import RegisterBrokerBody, TopicConfigWrapper
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.tasks import cancel_and_wait

log = logging.getLogger(__name__)

#: The longest a topic creation's answer waits for the name servers to route the topic.
PUBLISH_WAIT_SECONDS = 3.0

#: A slave that has not learnt its master's address, or a broker some name server has not
#: registered yet, registers again this often.
MASTER_UNKNOWN_SECONDS = 2.0


class Registrar:
    def __init__(
        self,
        settings: BrokerSettings,
        broker_addr: str,
        topics: TopicConfigManager,
        permission_of_broker: Callable[[], int],
        client: RemotingClient | None = None,
        *,
        ha_server_addr: str | None = None,
    ) -> None:
        self.settings = settings
        self.broker_addr = broker_addr
        self.ha_server_addr = ha_server_addr or settings.ha_server_addr()
        self.topics = topics
        self.permission_of_broker = permission_of_broker
        self.client = client or RemotingClient(tls=settings.tls_client())
        self.master_addr: str | None = None
        self.master_ha_addr: str | None = None
        self.registered: set[str] = set()
        self._wakeup = asyncio.Event()
        self._changes = 0
        """Topic changes requested so far."""
        self._published = 0
        """Changes that the last finished round carried."""
        self._round_ended = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def ready(self) -> bool:
        """Registered with at least one name server (or none is configured)."""
        return bool(self.registered) or not self.settings.namesrv_addrs

    def _body(self) -> bytes:
        wrapper = self.topics.wrapper()
        perm = self.permission_of_broker()
        if not perm & permission.PERM_WRITE:
            wrapper = TopicConfigWrapper(
                wrapper.data_version,
                {
                    name: dataclasses.replace(cfg, perm=cfg.perm & perm)
                    for name, cfg in wrapper.topic_config_table.items()
                },
            )
        return RegisterBrokerBody(wrapper).encode()

    def _header(self, body: bytes) -> dict[str, str]:
        return h.RegisterBrokerRequestHeader(
            broker_name=self.settings.broker_name,
            broker_addr=self.broker_addr,
            cluster_name=self.settings.broker_cluster_name,
            ha_server_addr=self.ha_server_addr,
            broker_id=self.settings.broker_id,
            compressed=False,
            body_crc32=zlib.crc32(body) & 0x7FFFFFFF,
        ).encode()

    async def register_all(self) -> None:
        body = self._body()
        header = self._header(body)
        timeout = self.settings.register_broker_timeout_mills / 1000
        results = await asyncio.gather(
            *(
                self._register_one(addr, header, body, timeout)
                for addr in self.settings.namesrv_addrs
            )
        )
        del results

    async def _register_one(
        self, addr: str, header: dict[str, str], body: bytes, timeout: float
    ) -> None:
        request = RemotingCommand.request(RequestCode.REGISTER_BROKER, dict(header), body)
        try:
            resp = await self.client.invoke(addr, request, timeout)
        except errors.RemotingError as exc:
            if addr in self.registered:
                log.warning("registration with name server %s failed: %s", addr, exc)
            else:
                log.info("name server %s not reachable yet: %s", addr, exc)
            self.registered.discard(addr)
            return
        if resp.code != ResponseCode.SUCCESS:
            log.warning("name server %s refused registration: %s %s", addr, resp.code, resp.remark)
            self.registered.discard(addr)
            return
        result = h.RegisterBrokerResponseHeader.decode(resp.ext_fields)
        if not self.settings.is_master:
            # As Java: the master's address follows the answer (none while it is away, so
            # registration turns quick until it is back); its HA address is kept until a
            # new one comes.
            self.master_addr = result.master_addr or None
            if result.ha_server_addr:
                self.master_ha_addr = result.ha_server_addr
        if addr not in self.registered:
            log.info("registered with name server %s as %s", addr, self.broker_addr)
        self.registered.add(addr)

    async def unregister_all(self) -> None:
        header = h.UnregisterBrokerRequestHeader(
            broker_name=self.settings.broker_name,
            broker_addr=self.broker_addr,
            cluster_name=self.settings.broker_cluster_name,
            broker_id=self.settings.broker_id,
        ).encode()
        for addr in self.settings.namesrv_addrs:
            with contextlib.suppress(errors.RemotingError):
                await self.client.invoke(
                    addr, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, dict(header)), 3.0
                )
        self.registered.clear()

    def request_registration(self) -> None:
        """A topic changed: register again soon (changes made during a round share the next)."""
        self._changes += 1
        self._wakeup.set()

    async def published(self) -> bool:
        """Wait until a round carrying every change requested so far has ended (bounded: see
        the module docstring); True when it ended and every name server took it."""
        if not self.settings.namesrv_addrs:
            return True
        wanted = self._changes
        self._wakeup.set()
        try:
            bound = min(PUBLISH_WAIT_SECONDS, self.settings.register_broker_timeout_mills / 1000)
            async with asyncio.timeout(bound):
                while self._published < wanted:
                    await self._round_ended.wait()
        except TimeoutError:
            log.warning("name servers did not take the new routes in time")
            return False
        return self.registered == set(self.settings.namesrv_addrs)

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="broker-registration")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        await self.unregister_all()
        await self.client.close()

    async def _loop(self) -> None:
        period = self.settings.register_name_server_period / 1000
        while True:
            self._wakeup.clear()
            carried = self._changes
            try:
                await self.register_all()
            except Exception:
                log.exception("registration round failed")
            self._published = carried
            self._round_ended.set()
            self._round_ended = asyncio.Event()
            wait = period
            unregistered = set(self.settings.namesrv_addrs) - self.registered
            if unregistered or (not self.settings.is_master and self.master_addr is None):
                wait = min(period, MASTER_UNKNOWN_SECONDS)  # they may come up soon
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), wait)
