"""An emulated Kubernetes API server for tests: real HTTP on 127.0.0.1, no etcd, no nodes.

Enough of the API server for kopf, kubectl 1.32 and kubernetes_asyncio: discovery and
OpenAPI v3, the built-in kinds an operator touches (namespaces, pods, services,
configmaps, secrets, events, persistentvolumeclaims, serviceaccounts, statefulsets with
``status`` and ``scale``, poddisruptionbudgets, leases, CRDs), CRDs served as soon as they
are created (schema pruning, defaulting and validation, CEL rules, printer columns,
``status``/``scale`` subresources), resourceVersion/uid/generation, optimistic
concurrency, the three patch formats, finalizers, owner-reference garbage collection, and
gapless watches with bookmarks. Nothing runs pods: controllers' effects (a StatefulSet's
pods, its status) are for the test to write.

Module map::

    kube_api              KubeApiServer (asyncio), running_kube_api (a thread), kubeconfig
    kube_api_http         paths and verbs → cluster operations, content negotiation
    kube_api_watch        watch streams
    kube_api_discovery    /version, /api, /apis, /openapi/v3
    kube_api_cluster      Cluster: reads, writes, deletion, GC; the in-process API
    kube_api_admission    metadata, generation, status subresource rules
    kube_api_collector    garbage collection and namespace/CRD cleanup plans
    kube_api_crd          CRD → served kinds; kube_api_schema, kube_api_cel: their checks
    kube_api_patch        merge, JSON and strategic merge patches
    kube_api_scale        the scale subresource
    kube_api_store        objects, the resourceVersion counter, the change history
    kube_api_resources    served kinds; kube_api_builtin_schema: built-in schemas
    kube_api_selectors    label and field selectors; kube_api_table: Tables, JSONPath
    kube_api_errors       Status errors

Use :func:`running_kube_api` for a module-scoped fixture (the server runs on its own event
loop in a thread, so synchronous tests, subprocesses and other loops can all use it), or
``async with KubeApiServer(...)`` inside a test's loop. ``server.cluster`` reads and
writes objects in-process and ``server.cluster.on_change`` observes every write;
``on_request`` sees every HTTP request as it arrives (reads and watches too).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

import yaml
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from kube_api_cluster import Cluster
from kube_api_http import make_app
from kube_api_watch import Watches

__all__ = ["Cluster", "KubeApiServer", "RequestHook", "running_kube_api", "write_kubeconfig"]

RequestHook = Callable[[web.Request], None]
"""Called with each request before it is served (on the server's loop: be quick)."""


def write_kubeconfig(path: Path, url: str, token: str, namespace: str = "default") -> Path:
    """A kubeconfig for ``url`` over plain HTTP with a bearer token (kubectl, kopf,
    kubernetes_asyncio all read it)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "emulated", "cluster": {"server": url}}],
        "users": [{"name": "tester", "user": {"token": token}}],
        "contexts": [
            {
                "name": "emulated",
                "context": {"cluster": "emulated", "user": "tester", "namespace": namespace},
            }
        ],
        "current-context": "emulated",
        "preferences": {},
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


class KubeApiServer:
    """The emulated API server on 127.0.0.1 (an ephemeral port unless told), with a
    kubeconfig for it written to ``kubeconfig_path``."""

    def __init__(
        self,
        kubeconfig_path: Path,
        *,
        port: int = 0,
        token: str | None = None,
        cluster: Cluster | None = None,
        bookmark_interval: float = 5.0,
        watch_timeout: float = 1800.0,
        on_request: RequestHook | None = None,
    ) -> None:
        self.cluster = cluster or Cluster()
        self._on_request = on_request
        self.kubeconfig = kubeconfig_path
        self.token = token or secrets.token_hex(16)
        self._port = port
        self._watches = Watches(bookmark_interval, watch_timeout)
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = make_app(self.cluster, self._watches, self.token)
        if self._on_request is not None:
            app.middlewares.append(_observing(self._on_request))
        self._runner = web.AppRunner(app, shutdown_timeout=1.0, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self._port)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        write_kubeconfig(self.kubeconfig, self.url, self.token)

    async def stop(self) -> None:
        self._watches.stop_all()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> KubeApiServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.stop()


def _observing(hook: RequestHook) -> Middleware:
    @web.middleware
    async def observe(request: web.Request, handler: Handler) -> web.StreamResponse:
        hook(request)
        return await handler(request)

    return observe


@contextlib.contextmanager
def running_kube_api(
    kubeconfig_path: Path,
    *,
    cluster: Cluster | None = None,
    bookmark_interval: float = 5.0,
    on_request: RequestHook | None = None,
) -> Iterator[KubeApiServer]:
    """Run a :class:`KubeApiServer` on its own event loop in a thread for the block's
    duration."""
    loop = asyncio.new_event_loop()
    server = KubeApiServer(
        kubeconfig_path,
        cluster=cluster,
        bookmark_interval=bookmark_interval,
        on_request=on_request,
    )
    thread = threading.Thread(target=loop.run_forever, name="kube-api", daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(server.start(), loop).result(30)
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()
