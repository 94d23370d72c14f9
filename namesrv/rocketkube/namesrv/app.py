"""The name server process: wires settings, tables, processors, server, expiry and HTTP."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import prometheus_client
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from rocketkube.common.http_endpoint import HttpEndpoint
from rocketkube.common.metrics import RequestMetrics
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.faults import FaultLog
from rocketkube.common.remoting.server import RemotingServer
from rocketkube.common.tasks import cancel_and_wait
from rocketkube.namesrv.kvconfig import KVConfig
from rocketkube.namesrv.processors import NamesrvProcessors
from rocketkube.namesrv.routes import RouteTables
from rocketkube.namesrv.settings import NamesrvSettings

log = logging.getLogger(__name__)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class _RouteCollector(Collector):
    def __init__(self, routes: RouteTables) -> None:
        self._routes = routes

    def collect(self) -> list[GaugeMetricFamily]:
        brokers = GaugeMetricFamily("rocketkube_namesrv_live_brokers", "Registered live brokers")
        brokers.add_metric([], len(self._routes.broker_live_table))
        topics = GaugeMetricFamily("rocketkube_namesrv_topics", "Topics with routes")
        topics.add_metric([], len(self._routes.topic_queue_table))
        clusters = GaugeMetricFamily("rocketkube_namesrv_clusters", "Known clusters")
        clusters.add_metric([], len(self._routes.cluster_addr_table))
        return [brokers, topics, clusters]


class NamesrvApp:
    """A running name server; ``port``/``http_port`` are the bound ports once started."""

    def __init__(self, settings: NamesrvSettings, clock: Callable[[], int] = wall_clock_ms) -> None:
        self.settings = settings
        self.clock = clock
        self.routes = RouteTables(settings.broker_channel_expired_time)
        self.kv = KVConfig(settings.kv_config_path)
        self.processors = NamesrvProcessors(self.routes, self.kv, settings, clock)
        self.registry = prometheus_client.CollectorRegistry()
        self.registry.register(_RouteCollector(self.routes))
        faults = FaultLog()
        dispatcher = Dispatcher(
            self.processors.table(), RequestMetrics(self.registry, "rocketkube_namesrv", faults)
        )
        self.server = RemotingServer(
            dispatcher,
            settings.bind_address,
            settings.listen_port,
            idle_timeout=settings.server_channel_max_idle_time_seconds,
            on_close=self._on_connection_closed,
            faults=faults,
            tls=settings.tls_server(),
            limits=settings.server_limits(),
        )
        self.http = HttpEndpoint(
            self.registry, settings.bind_address, settings.http_port, lambda: self._started
        )
        self._scanner: asyncio.Task[None] | None = None
        self._started = False

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self) -> None:
        self.kv.load()
        await self.server.start()
        await self.http.start()
        self._scanner = asyncio.create_task(self._scan_loop(), name="namesrv-expiry")
        self._started = True
        log.info("name server ready on port %d", self.port)

    async def stop(self) -> None:
        self._started = False
        await cancel_and_wait(self._scanner)
        await self.http.stop()
        await self.server.stop()
        try:
            await self.kv.saver.flush()  # a change whose write failed gets one more try
        except OSError as exc:
            log.error("stopping with the KV config not saved: %s", exc)

    def scan_not_active_brokers(self) -> list[str]:
        """One expiry pass: remove brokers silent past the timeout and close their channels."""
        expired = self.routes.expire(self.clock())
        for _, channel in expired:
            if isinstance(channel, Connection):
                channel.close()
        return [addr for addr, _ in expired]

    async def _scan_loop(self) -> None:
        interval = self.processors.settings.scan_not_active_broker_interval / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                self.scan_not_active_brokers()
            except Exception:
                log.exception("broker expiry scan failed")

    def _on_connection_closed(self, conn: Connection) -> None:
        self.routes.on_channel_closed(conn)
