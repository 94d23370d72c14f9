"""The harness's stand-in for the ``kubernetes`` Service and a pod's service account: the
Kubernetes client's own in-cluster configuration, given the files and variables a pod
gets, reaches the emulated API server through the TLS front (on 127.0.0.1 here; the
harness puts it on its bridge's address, the one a pod reaches)."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web
from kube_api import KubeApiServer
from kubelet_apiserver import ApiServer, Front, service_env, write_account
from kubernetes_asyncio.client import ApiClient, Configuration, CoreV1Api
from kubernetes_asyncio.config.incluster_config import InClusterConfigLoader


async def test_in_cluster_config_reaches_the_emulated_server_through_the_front(
    tmp_path: Path,
) -> None:
    seen: list[str | None] = []

    def observe(request: web.Request) -> None:
        seen.append(request.headers.get("Authorization"))

    async with KubeApiServer(tmp_path / "kubeconfig", on_request=observe) as server:
        front = Front(ApiServer(server.url, server.token), "127.0.0.1", tmp_path / "ca", port=0)
        await front.start()
        try:
            access = front.access
            account = write_account(tmp_path / "account", "team-a", access)
            env = service_env(access)
            configuration = Configuration()
            loader = InClusterConfigLoader(
                token_filename=str(account / "token"),
                cert_filename=str(account / "ca.crt"),
                environ=env,
            )
            loader.load_and_set(configuration)
            async with ApiClient(configuration) as api:
                listed = await CoreV1Api(api).list_namespace()
        finally:
            await front.stop()
    assert configuration.host == f"https://127.0.0.1:{access.port}"
    assert "default" in {n.metadata.name for n in listed.items}
    assert seen == [f"Bearer {server.token}"]
    assert (account / "namespace").read_text() == "team-a"
    assert env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    assert env["KUBERNETES_PORT"] == f"tcp://127.0.0.1:{access.port}"
