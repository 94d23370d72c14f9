"""The HTTP side port of a server: ``/metrics`` (Prometheus), ``/healthz``, ``/readyz``.

``/readyz`` answers 200 ``ready`` or 503 ``not ready``, followed by one line per condition
the server reports (a broker whose disk is full: ready, as it serves reads, and why it
refuses writes)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

import prometheus_client
from aiohttp import web

log = logging.getLogger(__name__)


class HttpEndpoint:
    """Serves one registry's metrics and the process's health on ``host:port``."""

    def __init__(
        self,
        registry: prometheus_client.CollectorRegistry,
        host: str,
        port: int,
        ready: Callable[[], bool],
        details: Callable[[], Iterable[str]] = tuple,
    ) -> None:
        self._registry = registry
        self._host = host
        self._port = port
        self._ready = ready
        self._details = details
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None

    @property
    def port(self) -> int:
        if self._runner is not None:
            for address in self._runner.addresses:
                if isinstance(address, tuple):
                    return int(address[1])
        return self._port

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        self._site = web.TCPSite(self._runner, self._host, self._port, reuse_address=True)
        await self._site.start()
        log.info("HTTP endpoint on %s:%d (/metrics /healthz /readyz)", self._host, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _metrics(self, request: web.Request) -> web.Response:
        body = prometheus_client.generate_latest(self._registry)
        return web.Response(
            body=body, headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST}
        )

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        ready = self._ready()
        lines = ["ready" if ready else "not ready", *self._details()]
        return web.Response(status=200 if ready else 503, text="".join(f"{x}\n" for x in lines))
