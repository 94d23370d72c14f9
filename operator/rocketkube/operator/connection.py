"""The operator's credentials, read once for both of its API clients: the asyncio Kubernetes
client its handlers write objects with, and kopf's own (watches, patches, Events).

Where they come from: ``--kubeconfig`` when given; else the pod's service account when
running in a cluster (``KUBERNETES_SERVICE_HOST`` set); else ``$KUBECONFIG`` or
``~/.kube/config``, as kubectl does. kopf asks :meth:`Connection.login` again whenever
the API server says the credentials expired; the client's refresh hooks run there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import kopf
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client.api_client import ApiClient
from kubernetes_asyncio.client.configuration import Configuration

__all__ = ["Connection", "connect"]


@dataclass(frozen=True)
class Connection:
    api: ApiClient

    async def login(self) -> kopf.ConnectionInfo:
        """The same credentials, as kopf takes them."""
        cfg = self.api.configuration
        scheme, _, token = str(await cfg.get_api_key_with_prefix("BearerToken") or "").partition(
            " "
        )
        if not token:
            scheme, token = ("Bearer", scheme) if scheme else ("", "")
        return kopf.ConnectionInfo(
            server=cfg.host or "",
            ca_path=cfg.ssl_ca_cert or None,
            insecure=not cfg.verify_ssl,
            username=cfg.username or None,
            password=cfg.password or None,
            scheme=scheme or None,
            token=token or None,
            certificate_path=cfg.cert_file or None,
            private_key_path=cfg.key_file or None,
        )

    async def close(self) -> None:
        await self.api.close()


async def connect(kubeconfig: str | None) -> Connection:
    """Credentials from ``kubeconfig``, the service account, or the default kubeconfig."""
    configuration = Configuration()
    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        kube_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        await kube_config.load_kube_config(
            config_file=kubeconfig, client_configuration=configuration, persist_config=False
        )
    return Connection(ApiClient(configuration))
