"""The broker process: wires settings, store, managers, processors, registration,
housekeeping and the HTTP side port. Only wiring lives here."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import prometheus_client

from rocketkube.broker import compiled_modules
from rocketkube.broker.acl import AccessGuard
from rocketkube.broker.acl import admin as acl_admin
from rocketkube.broker.consumers.clients import ClientManager
from rocketkube.broker.consumers.groups import SubscriptionGroupManager
from rocketkube.broker.consumers.long_polling import PullRequestHoldService
from rocketkube.broker.consumers.offsets import ConsumerOffsetManager
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.ha import HAClient, HAService, SlaveSynchronizer
from rocketkube.broker.metrics import BrokerCollector
from rocketkube.broker.processors import (
    admin,
    client,
    consumer_running_info,
    delay_offsets,
    end_transaction,
    locks,
    offsets,
    pull,
    query,
    reset_offset,
    send,
    send_back,
)
from rocketkube.broker.registration import Registrar
from rocketkube.broker.schedule import DelayCollector, ScheduleService
from rocketkube.broker.settings import BrokerSettings
from rocketkube.broker.stats import BrokerStats
from rocketkube.broker.store import MessageStore
from rocketkube.broker.topics import TopicConfigManager
from rocketkube.broker.transactions.checker import TransactionCheckService
from rocketkube.broker.transactions.half import TransactionalMessageService
from rocketkube.common.http_endpoint import HttpEndpoint
from rocketkube.common.metrics import RequestMetrics
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer
from rocketkube.common.tasks import cancel_and_wait

log = logging.getLogger(__name__)

#: How often silent client channels are looked for (RocketMQ: every 10 s).
CLIENT_SCAN_SECONDS = 10.0


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class _Gate:
    """Answers SYSTEM_BUSY until the broker is wired, then hands requests on."""

    def __init__(self) -> None:
        self.dispatcher: Dispatcher | None = None

    def handle(self, conn: Connection, request: RemotingCommand) -> Reply:
        if self.dispatcher is None:
            return RemotingCommand.response(
                ResponseCode.SYSTEM_BUSY, "[REJECTREQUEST]system busy, broker is starting"
            )
        return self.dispatcher.handle(conn, request)

    def handle_many(self, conn: Connection, requests: Sequence[RemotingCommand]) -> Sequence[Reply]:
        """The requests of one received chunk: pipelined sends are stored together."""
        if self.dispatcher is None:
            return [self.handle(conn, request) for request in requests]
        return self.dispatcher.handle_many(conn, requests)


class BrokerApp:
    """A running broker; ``port`` is the bound port once started."""

    def __init__(self, settings: BrokerSettings, clock: Callable[[], int] = wall_clock_ms) -> None:
        self.settings = settings
        self.clock = clock
        self.registry = prometheus_client.CollectorRegistry()
        self._gate = _Gate()
        self.clients = ClientManager()
        self.server = RemotingServer(
            self._gate,
            settings.bind_address,
            settings.listen_port,
            idle_timeout=settings.server_channel_max_idle_time_seconds,
            on_close=self.clients.on_channel_closed,
            tls=settings.tls_server(),
            limits=settings.server_limits(),
        )
        self.http = HttpEndpoint(
            self.registry,
            settings.bind_address,
            settings.effective_http_port,
            self._is_ready,
            self._conditions,
        )
        self.ctx: BrokerContext | None = None
        self.registrar: Registrar | None = None
        self.holds: PullRequestHoldService | None = None
        self.schedule: ScheduleService | None = None
        self.transactions: TransactionCheckService | None = None
        self.replicas: HAService | None = None
        """The master's replication server."""
        self.replica_client: HAClient | None = None
        """A slave's replication connection."""
        self.slave_sync: SlaveSynchronizer | None = None
        self.acl: AccessGuard | None = None
        """The ACL in front of the processors (``aclEnable``)."""
        self._tasks: list[asyncio.Task[None]] = []
        self._ready = False

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def address(self) -> str:
        return f"{self.settings.broker_ip1}:{self.port}"

    def _is_ready(self) -> bool:
        return self._ready and self.registrar is not None and self.registrar.ready

    def _conditions(self) -> list[str]:
        """``/readyz``'s detail lines: why writes are refused (reads go on)."""
        refusal = self.ctx.store.write_refusal if self.ctx is not None else None
        return [] if refusal is None else [f"writes refused: {refusal}"]

    async def start(self) -> None:
        acl_file = self.settings.acl_file()
        if acl_file is not None:  # a bad file stops the broker before it listens
            self.acl = AccessGuard(acl_file)
        await self.server.start()
        port = self.port
        settings = self.settings
        store = MessageStore(settings.store_config(listen_port=port), clock=self.clock)
        report = store.open()
        log.info("store opened: %s", report)
        await store.start()
        config_dir = Path(settings.store_path_root_dir) / "config"
        topics = TopicConfigManager(settings, config_dir / "topics.json", self.clock)
        topics.load()
        groups = SubscriptionGroupManager(
            config_dir / "subscriptionGroup.json",
            self.clock,
            auto_create=settings.auto_create_subscription_group,
        )
        groups.load()
        consumer_offsets = ConsumerOffsetManager(config_dir / "consumerOffset.json")
        consumer_offsets.load()
        if settings.is_master:
            self.replicas = HAService(store, settings)
            await self.replicas.start()
        ctx = BrokerContext(
            settings=settings,
            store=store,
            topics=topics,
            groups=groups,
            offsets=consumer_offsets,
            clients=self.clients,
            stats=BrokerStats(self.registry),
            clock=self.clock,
            broker_addr=f"{settings.broker_ip1}:{port}",
            permission=settings.broker_permission,
            replicas=self.replicas,
        )
        self.ctx = ctx
        ha_port = None if self.replicas is None else self.replicas.port
        registrar = Registrar(settings, ctx.broker_addr, topics, lambda: ctx.permission,
                              ha_server_addr=settings.ha_server_addr(ha_port))  # fmt: skip
        self.registrar = registrar
        ctx.routes = registrar
        topics.on_change = registrar.request_registration
        client.install(ctx)
        self.holds = PullRequestHoldService(ctx.store)
        holds = self.holds
        if not settings.is_master:
            self.replica_client = HAClient(store, settings, lambda: registrar.master_ha_addr,
                                           registrar.request_registration)  # fmt: skip
        replication = self.replicas or self.replica_client
        assert replication is not None
        self.registry.register(BrokerCollector(ctx, holds.held_count, replication.gauges))
        store.add_flush_listener(ctx.stats.flush_latency.observe)
        prometheus_client.ProcessCollector("rocketkube_broker", registry=self.registry)
        table = {}
        table.update(send.table(ctx))
        table.update(pull.table(ctx, holds))
        table.update(offsets.table(ctx))
        table.update(client.table(ctx))
        table.update(query.table(ctx))
        table.update(admin.table(ctx))
        table.update(reset_offset.table(ctx))
        table.update(consumer_running_info.table(ctx))
        table.update(send_back.table(ctx))
        table.update(locks.table(ctx))
        schedule = ScheduleService(
            store, config_dir / "delayOffset.json", settings.message_delay_level, self.clock
        )
        schedule.load()
        self.schedule = schedule
        self.registry.register(DelayCollector(schedule))
        table.update(delay_offsets.table(schedule))
        tx_service = TransactionalMessageService(ctx.store, ctx.topics, ctx.clock, ctx.broker_addr)
        table.update(end_transaction.table(ctx, tx_service))
        self.transactions = TransactionCheckService(
            tx_service,
            settings=ctx.settings,
            store=ctx.store,
            topics=ctx.topics,
            offsets=ctx.offsets,
            clients=ctx.clients,
            clock=ctx.clock,
        )
        if self.acl is not None:
            identity = acl_admin.BrokerIdentity(
                settings.broker_name, ctx.broker_addr, settings.broker_cluster_name
            )
            table.update(acl_admin.table(self.acl, identity))
            table = self.acl.guard(table)
            self._spawn(self.acl.watch(), "acl-watch")
        self._gate.dispatcher = Dispatcher(
            table, RequestMetrics(self.registry, "rocketkube_broker", self.server.faults)
        )
        await self.http.start()
        registrar.start()
        if settings.is_master:
            schedule.start()
        self._spawn(self._every(settings.flush_delay_offset_interval / 1000,
                                schedule.persist_if_dirty), "delay-offset-persist")  # fmt: skip
        if settings.is_master:
            self.transactions.start()
        elif self.replica_client is not None:
            self.replica_client.start()
            self.slave_sync = SlaveSynchronizer(
                lambda: registrar.master_addr, topics, groups, consumer_offsets, schedule,
                RemotingClient(tls=settings.tls_client()),
            )  # fmt: skip
            self.slave_sync.start()
        self._spawn(self._every(settings.flush_consumer_offset_interval / 1000,
                                consumer_offsets.persist_if_dirty), "offset-persist")  # fmt: skip
        self._spawn(self._every(CLIENT_SCAN_SECONDS, self._expire_clients), "client-expiry")
        self._ready = True
        log.info("broker %s (%s, id %d) serving on %s, cluster %s, name servers %s, "
                 "compiled modules %s",
                 settings.broker_name, settings.broker_role, settings.broker_id, ctx.broker_addr,
                 settings.broker_cluster_name, settings.namesrv_addr or "none",
                 ", ".join(compiled_modules.in_use()) or "none")  # fmt: skip

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        self._tasks.append(asyncio.create_task(coro, name=name))

    async def _every(self, seconds: float, action: Callable[[], object]) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                action()
            except Exception:
                log.exception("periodic task %s failed", getattr(action, "__name__", action))

    def _expire_clients(self) -> None:
        for conn in self.clients.expire(self.clock(), self.settings.channel_expired_timeout):
            conn.close()

    async def stop(self) -> None:
        self._ready = False
        await cancel_and_wait(*self._tasks)
        self._tasks.clear()
        if self.registrar is not None:
            await self.registrar.stop()
        if self.transactions is not None:
            await self.transactions.stop()
        for part in (self.slave_sync, self.replica_client, self.replicas):
            if part is not None:
                await part.stop()
        await self.http.stop()
        await self.server.stop()
        if self.holds is not None:
            self.holds.close()
        if self.ctx is not None:
            saves = [
                self.ctx.offsets.saved,
                self.ctx.topics.saver.flush,
                self.ctx.groups.saver.flush,
            ]
            if self.schedule is not None:
                saves.append(self.schedule.stop)
            for save in saves:
                try:
                    await save()
                except OSError as exc:  # logged; the store must still shut down cleanly
                    log.error("stopping with a config file not saved: %s", exc)
            await self.ctx.store.shutdown()
        log.info("broker stopped")
