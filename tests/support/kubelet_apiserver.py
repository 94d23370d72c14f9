"""How the harness's pods reach the API server: the ``kubernetes`` Service and the service
account's files, as a cluster gives them to every pod.

In a cluster a pod finds the API server at ``https://$KUBERNETES_SERVICE_HOST:
$KUBERNETES_SERVICE_PORT`` (the ``default/kubernetes`` Service's virtual IP, which
kube-proxy sends on to the API server) and shows who it is with the files mounted at
``/var/run/secrets/kubernetes.io/serviceaccount/``: ``token`` (its service account's),
``ca.crt`` (the CA that signed the API server's certificate) and ``namespace``. The
Kubernetes clients' in-cluster configuration, and so kopf's login, read exactly those.
The emulated API server speaks plain HTTP on 127.0.0.1, which no pod reaches (a pod's
namespace routes only the bridge's /24), so the harness stands in::

    pod namespace                     host (the run's bridge address)
    https://10.244.X.1:443  ─bridge─▶ Front: TLS ended with a certificate for that
                                      address, signed by the run's CA (the pods' ca.crt)
                                        └─▶ http://127.0.0.1:<port>, the emulated server

- :class:`Front` listens on the bridge's host address, port 443, ends TLS and passes each
  connection's bytes on to the emulated server: the Service's virtual IP and the API
  server's own TLS in one;
- :func:`write_account` writes a pod's ``token``, ``ca.crt`` and ``namespace``; the token
  is the emulated server's bearer token (it enforces no RBAC: every service account gets
  the same one). The kubelet mounts them read-only at :data:`MOUNT_PATH` in each
  container, unless the pod says ``automountServiceAccountToken: false``
  (:func:`wants_account`), as the ServiceAccount admission plugin adds its projected
  volume; a ServiceAccount object need not exist here;
- :func:`service_env`: the variables the kubelet gives every container for that Service.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from certs import ServingCerts, make_serving_certs

__all__ = [
    "MOUNT_PATH",
    "ApiServer",
    "Front",
    "InCluster",
    "service_env",
    "wants_account",
    "write_account",
]

MOUNT_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
SERVICE_PORT: Final = 443
_SERVICE_NAMES: Final = (
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
_CHUNK: Final = 1 << 16
_CLOSE_SECONDS: Final = 1.0
"""How long a closing connection waits for its peer's TLS close (a dead pod sends none)."""


@dataclass(frozen=True)
class ApiServer:
    """The emulated API server as the host reaches it (``KubeApiServer.url``, ``.token``)."""

    url: str
    token: str


@dataclass(frozen=True)
class InCluster:
    """Where the pods find the API server, and what they show it."""

    host: str
    port: int
    ca: Path
    token: str


def wants_account(pod: Mapping[str, Any]) -> bool:
    """Whether the pod gets its service account's files."""
    return (pod.get("spec") or {}).get("automountServiceAccountToken") is not False


def write_account(directory: Path, namespace: str, access: InCluster) -> Path:
    """The pod's ``token``, ``ca.crt`` and ``namespace`` in ``directory`` (made here)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(access.token, encoding="ascii")
    (directory / "ca.crt").write_bytes(access.ca.read_bytes())
    (directory / "namespace").write_text(namespace, encoding="utf-8")
    return directory


def service_env(access: InCluster) -> dict[str, str]:
    """The ``kubernetes`` Service's variables, as the kubelet sets them in every container."""
    host, port = access.host, str(access.port)
    url = f"tcp://{host}:{port}"
    return {
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": port,
        "KUBERNETES_SERVICE_PORT_HTTPS": port,
        "KUBERNETES_PORT": url,
        f"KUBERNETES_PORT_{port}_TCP": url,
        f"KUBERNETES_PORT_{port}_TCP_PROTO": "tcp",
        f"KUBERNETES_PORT_{port}_TCP_PORT": port,
        f"KUBERNETES_PORT_{port}_TCP_ADDR": host,
    }


class Front:
    """TLS on ``host``:443 (or ``port``; 0: any free one) in front of the emulated API
    server (see the module docstring)."""

    def __init__(
        self, upstream: ApiServer, host: str, workdir: Path, port: int = SERVICE_PORT
    ) -> None:
        self.upstream = upstream
        self.host = host
        self._port = port
        self._workdir = workdir
        self._certs: ServingCerts | None = None
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[Any]] = set()
        self._ends: set[asyncio.StreamWriter] = set()

    @property
    def access(self) -> InCluster:
        """What a pod is given (once started)."""
        assert self._certs is not None
        assert self._server is not None
        port = int(self._server.sockets[0].getsockname()[1])
        return InCluster(self.host, port, self._certs.ca, self.upstream.token)

    async def start(self) -> None:
        self._certs = make_serving_certs(self._workdir, [self.host], list(_SERVICE_NAMES))
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self._certs.cert, self._certs.key)
        self._server = await asyncio.start_server(self._serve, self.host, self._port, ssl=context)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for end in list(self._ends):
            end.transport.abort()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One pod's connection: its bytes to the emulated server and back, until either
        side closes."""
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        target = urlsplit(self.upstream.url)
        upstream: asyncio.StreamWriter | None = None
        self._ends.add(writer)
        try:
            up_reader, upstream = await asyncio.open_connection(target.hostname, target.port)
            self._ends.add(upstream)
            pipes = [
                asyncio.create_task(_pipe(reader, upstream)),
                asyncio.create_task(_pipe(up_reader, writer)),
            ]
            try:
                await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pipe in pipes:
                    pipe.cancel()
                await asyncio.gather(*pipes, return_exceptions=True)
        except OSError:
            pass  # the emulated server is going: the pod sees its connection close
        finally:
            self._connections.discard(task)
            for end in (writer, upstream):
                if end is not None:
                    self._ends.discard(end)
                    end.close()
                    with contextlib.suppress(OSError, TimeoutError):
                        await asyncio.wait_for(end.wait_closed(), _CLOSE_SECONDS)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
