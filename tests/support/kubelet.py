"""A kubelet harness: the emulated API server's pods become real processes on this machine.

Plays, against the emulated cluster (``kube_api``), the parts of Kubernetes that make a
StatefulSet or a Deployment run: their controllers, a volume provisioner, the kubelet of
one node, cluster DNS and, when given the API server (``KubeletOptions.api_server``), the
``kubernetes`` Service and the service accounts' credentials. Each pod gets a network
namespace with its own IP on a bridge (so every broker listens on 10911, as in
Kubernetes), its volumes bind-mounted at the template's paths, its containers' commands
run (``rocketkube`` being this checkout's ``.venv/bin/rocketkube``), its probes run, and
its status written back. Needs root, ``ip``, ``unshare`` and ``nsenter``;
:class:`Unavailable` says why not otherwise.

Module map::

    kubelet                 Kubelet (the control loop), running_kubelet (a thread),
                            RunningKubelet (what a test calls), KubeletOptions
    kubelet_statefulsets    pods and claims from StatefulSets, their status
    kubelet_deployments     pods from Deployments (rolled on a template change), their status
    kubelet_apiserver       the API server as pods reach it: TLS on the bridge, the service
                            account's token, CA and namespace, KUBERNETES_SERVICE_* variables
    kubelet_pod             one pod: sandbox, volumes, containers, status
    kubelet_container       one container: process, restarts, back-off, probes' effects
    kubelet_probes          startup, liveness, readiness probes
    kubelet_spec            argv, environment (downward API), named ports
    kubelet_volumes         ConfigMap, Secret, emptyDir, claim, hostPath volumes; mounts
    kubelet_net             the bridge, pod namespaces, veths, addresses
    kubelet_dns             each pod's /etc/hosts
    kubelet_host            host-wide leases (subnets, ids), mount points, dead runs

The loop: the cluster's write hook wakes it (and it wakes every ``resync`` seconds
anyway); each pass syncs StatefulSets and Deployments (those of
``KubeletOptions.workloads``), binds new claims, starts a runtime for each pod
it has not seen, stops those whose object is deleted, refreshes ConfigMap volumes and
hosts files, and removes claim directories whose claim is gone. A pod the harness runs
carries its finalizer, released once the pod's processes and namespace are gone (the
emulator has no graceful deletion; see ``kubelet_statefulsets``).

Teardown stops every process (its grace period capped by ``teardown_grace``) and
removes every namespace, veth, the bridge and every hosts file the run made, whatever
failed before; a run killed before its teardown is swept by the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import logging
import os
import shutil
import sysconfig
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

import kubelet_apiserver as apiserver
import kubelet_deployments as deployments
import kubelet_dns as dns
import kubelet_net as net
import kubelet_statefulsets as statefulsets
import kubelet_volumes as volumes
from kube_api_cluster import Cluster
from kube_api_errors import ApiError
from kube_api_store import Change
from kubelet_container import Backoff
from kubelet_host import Lease, Registry
from kubelet_net import Network, Unavailable
from kubelet_pod import Node, PodRuntime

__all__ = ["Kubelet", "KubeletOptions", "RunningKubelet", "Unavailable", "running_kubelet"]

T = TypeVar("T")
log = logging.getLogger("kubelet")

_WATCHED: Final = frozenset(
    (
        "pods",
        "statefulsets",
        "deployments",
        "services",
        "configmaps",
        "secrets",
        "persistentvolumeclaims",
    )
)
_RETRY_SECONDS: Final = 1.0


def default_entrypoints() -> dict[str, str]:
    """``rocketkube`` → the ``rocketkube`` script beside the running interpreter (this
    checkout's ``.venv/bin``)."""
    return {"rocketkube": str(Path(sysconfig.get_path("scripts")) / "rocketkube")}


def default_image_env() -> dict[str, str]:
    """The "image's" environment: PATH with this checkout's scripts first, and
    ``ROCKETKUBE_NO_EXTENSIONS`` when the harness runs with it (an image built so)."""
    scripts = sysconfig.get_path("scripts")
    env = {
        "PATH": f"{scripts}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
    }
    if "ROCKETKUBE_NO_EXTENSIONS" in os.environ:
        env["ROCKETKUBE_NO_EXTENSIONS"] = os.environ["ROCKETKUBE_NO_EXTENSIONS"]
    return env


@dataclass(frozen=True)
class KubeletOptions:
    """How the harness runs pods. The defaults are Kubernetes'; tests shorten
    ``probe_period_cap`` and ``backoff`` to keep scenarios in seconds."""

    workdir: Path
    """Pods' volumes, claims' directories and logs."""
    entrypoints: Mapping[str, str] = field(default_factory=default_entrypoints)
    image_entrypoint: tuple[str, ...] = ("rocketkube",)
    image_env: Mapping[str, str] = field(default_factory=default_image_env)
    probe_period_cap: float | None = None
    backoff: Backoff = field(default_factory=Backoff)
    teardown_grace: float = 10.0
    resync: float = 1.0
    node_name: str = "kubelet-harness"
    api_server: apiserver.ApiServer | None = None
    """The emulated API server, for the pods to reach through the ``kubernetes`` Service
    and their service account (``kubelet_apiserver``); None: pods get neither."""
    workloads: frozenset[str] = frozenset(("statefulsets", "deployments"))
    """The controllers the harness plays; a kind left out keeps its objects, podless."""
    state_dir: Path = Path("/run/rocketkube-kubelet")


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Kubelet:
    """The harness's control loop, on the event loop it is started on."""

    def __init__(self, cluster: Cluster, options: KubeletOptions) -> None:
        self.cluster = cluster
        self.options = options
        self.registry = Registry(options.state_dir)
        self.network: Network | None = None
        self.errors: list[str] = []
        """What went wrong in the loop or a pod (for tests to show)."""
        self._lease: Lease | None = None
        self._front: apiserver.Front | None = None
        self._pods: dict[str, PodRuntime] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._retry_at: dict[str, float] = {}
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: asyncio.Task[None] | None = None
        self._unsubscribe: Callable[[], None] | None = None

    # -- start and stop ------------------------------------------------------------------

    async def start(self) -> None:
        await net.preflight()
        self._loop = asyncio.get_running_loop()
        with self.registry.locked():
            _, dead = self.registry.runs()
            for record in dead:
                await net.sweep(record.run_id)
                self.registry.forget(record)
            self._lease = self.registry.lease(await net.host_routes())
            self.registry.note_created(_missing(net.NETNS_ETC))
            net.NETNS_ETC.mkdir(parents=True, exist_ok=True)
        record = self._lease.record
        self.network = Network(record.run_id, record.subnet)
        await self.network.up()
        if self.options.api_server is not None:
            self._front = apiserver.Front(
                self.options.api_server, str(self.network.host_ip), self.options.workdir / "api"
            )
            await self._front.start()
        self._unsubscribe = self.cluster.on_change(self._on_change)
        self._runner = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """Stop everything and remove what the run made; safe after a failed start."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)
        for runtime in self._pods.values():
            runtime.terminate(min(runtime.grace, self.options.teardown_grace))
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        if self._front is not None:
            await self._front.stop()
        if self.network is not None:
            await self.network.down()
        if self._lease is not None:
            with self.registry.locked():
                self.registry.release(self._lease)
                if not self.registry.runs()[0]:
                    for problem in self.registry.remove_created():
                        log.warning("mount point kept: %s", problem)
            self._lease = None

    def _on_change(self, change: Change) -> None:
        """The cluster's write hook (under its lock, maybe from another thread)."""
        loop = self._loop
        if change.resource[1] in _WATCHED and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._wake.set)

    def _note_mount_points(self, paths: list[Path]) -> None:
        if paths:
            with self.registry.locked():
                self.registry.note_created(paths)

    # -- the loop ------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            try:
                self._reconcile()
            except Exception as error:  # the loop must outlive one bad pass
                log.exception("kubelet pass failed")
                self.errors.append(f"pass: {error!r}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.options.resync)

    def _reconcile(self) -> None:
        workloads, node = self.options.workloads, self.options.node_name
        if "statefulsets" in workloads:
            statefulsets.sync(self.cluster, node)
        if "deployments" in workloads:
            deployments.sync(self.cluster, node, _now())
        claims = self.cluster.list_objects("persistentvolumeclaims")
        self._bind(claims)
        pods = self.cluster.list_objects("pods")
        seen = {p["metadata"]["uid"] for p in pods}
        for pod in pods:
            self._sync_pod(pod)
        for uid, runtime in self._pods.items():
            if uid not in seen:
                runtime.terminate(runtime.grace)
        self._write_hosts(pods)
        self._release_claims(claims, pods)

    def _sync_pod(self, pod: dict[str, Any]) -> None:
        metadata = pod["metadata"]
        uid, deleting = metadata["uid"], bool(metadata.get("deletionTimestamp"))
        runtime = self._pods.get(uid)
        if runtime is None:
            if deleting:
                self._release(pod)
            elif time.monotonic() >= self._retry_at.get(uid, 0.0):
                self._start_pod(pod)
            return
        runtime.pod = pod
        if deleting:
            runtime.terminate(runtime.grace)
        else:
            runtime.refresh_volumes()

    def _start_pod(self, pod: dict[str, Any]) -> None:
        metadata = pod["metadata"]
        adopted = self._adopt(pod)
        if adopted is None:
            return
        runtime = PodRuntime(self._node(), adopted)
        self._pods[metadata["uid"]] = runtime
        task = asyncio.create_task(runtime.run(), name=f"pod {metadata['name']}")
        self._tasks[metadata["uid"]] = task
        task.add_done_callback(functools.partial(self._pod_done, runtime))

    def _adopt(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        """Bind ``pod`` to this node and hold it with the finalizer (if not yet)."""
        metadata = pod["metadata"]
        finalizers = list(metadata.get("finalizers") or [])
        if statefulsets.POD_FINALIZER in finalizers and pod.get("spec", {}).get("nodeName"):
            return pod
        patch = [
            {"op": "test", "path": "/metadata/uid", "value": metadata["uid"]},
            {"op": "add", "path": "/metadata/finalizers",
             "value": sorted({*finalizers, statefulsets.POD_FINALIZER})},
            {"op": "add", "path": "/spec/nodeName", "value": self.options.node_name},
        ]  # fmt: skip
        try:
            return self.cluster.patch_object(
                "pods", metadata["name"], patch, metadata["namespace"],
                content_type="application/json-patch+json",
            )  # fmt: skip
        except ApiError:
            return None

    def _pod_done(self, runtime: PodRuntime, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            problem = f"pod {runtime.namespace}/{runtime.name}: {task.exception()!r}"
            log.error("%s", problem)
            self.errors.append(problem)
            self._retry_at[runtime.uid] = time.monotonic() + _RETRY_SECONDS
        self._pods.pop(runtime.uid, None)
        self._tasks.pop(runtime.uid, None)
        if runtime.stop.event.is_set():
            self._release(runtime.pod)
        self._wake.set()

    def _release(self, pod: dict[str, Any]) -> None:
        """Let a deleted pod go: drop the harness's finalizer."""
        metadata = pod["metadata"]
        try:
            current = self.cluster.get_object("pods", metadata["name"], metadata["namespace"])
        except ApiError:
            return
        finalizers = current["metadata"].get("finalizers") or []
        if current["metadata"]["uid"] != metadata["uid"] or not current["metadata"].get(
            "deletionTimestamp"
        ):
            return
        if statefulsets.POD_FINALIZER in finalizers:
            kept = [f for f in finalizers if f != statefulsets.POD_FINALIZER]
            patch = [
                {"op": "test", "path": "/metadata/uid", "value": metadata["uid"]},
                {"op": "replace", "path": "/metadata/finalizers", "value": kept},
            ]
            with contextlib.suppress(ApiError):
                self.cluster.patch_object(
                    "pods", metadata["name"], patch, metadata["namespace"],
                    content_type="application/json-patch+json",
                )  # fmt: skip

    def _node(self) -> Node:
        assert self.network is not None
        return Node(
            cluster=self.cluster,
            network=self.network,
            workdir=self.options.workdir,
            lookup=self._lookup,
            entrypoints=self.options.entrypoints,
            image_entrypoint=self.options.image_entrypoint,
            image_env=self.options.image_env,
            backoff=self.options.backoff,
            period_cap=self.options.probe_period_cap,
            now=_now,
            changed=self._wake.set,
            mount_points=self._note_mount_points,
            api=self._front.access if self._front is not None else None,
        )

    def _lookup(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.cluster.find_object(kind, name, namespace)

    # -- DNS and claims ------------------------------------------------------------------

    def _write_hosts(self, pods: list[dict[str, Any]]) -> None:
        entries = [e for p in pods if (e := dns.pod_entry(p)) is not None]
        known = dns.records(self.cluster.list_objects("services"), entries)
        for runtime in self._pods.values():
            own = dns.pod_entry(runtime.view())
            if runtime.net is None or runtime.finished or own is None:
                continue
            text = dns.hosts_file(own, known)
            if text != runtime.hosts_text:
                with contextlib.suppress(FileNotFoundError):
                    dns.write_in_place(runtime.net.etc / "hosts", text)
                    runtime.hosts_text = text

    def _bind(self, claims: list[dict[str, Any]]) -> None:
        """Provision every Pending claim at once (a directory, made when first mounted)."""
        for claim in claims:
            metadata, spec = claim["metadata"], claim.get("spec") or {}
            if (claim.get("status") or {}).get("phase") == "Bound" or metadata.get(
                "deletionTimestamp"
            ):
                continue
            status = {
                "phase": "Bound",
                "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                "capacity": dict((spec.get("resources") or {}).get("requests") or {}),
            }
            with contextlib.suppress(ApiError):
                self.cluster.patch_object(
                    "persistentvolumeclaims", metadata["name"], {"status": status},
                    metadata["namespace"], "status",
                )  # fmt: skip

    def _release_claims(self, claims: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        """A deleted claim no pod uses loses its directory, then its protection."""
        used = {
            (p["metadata"]["namespace"], v["persistentVolumeClaim"]["claimName"])
            for p in [*pods, *(r.pod for r in self._pods.values())]
            for v in (p.get("spec") or {}).get("volumes") or []
            if "persistentVolumeClaim" in v
        }
        present = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in claims}
        root = self.options.workdir / "claims"
        on_disk = {(d.parent.name, d.name) for d in root.glob("*/*") if d.is_dir()}
        for key in sorted(on_disk - used):
            claim = present.get(key)
            if claim is None or claim["metadata"].get("deletionTimestamp"):
                shutil.rmtree(volumes.claim_dir(root, *key), ignore_errors=True)
        for key, claim in present.items():
            finalizers = claim["metadata"].get("finalizers") or []
            gone = claim["metadata"].get("deletionTimestamp")
            if gone and key not in used and statefulsets.PVC_PROTECTION in finalizers:
                kept = [f for f in finalizers if f != statefulsets.PVC_PROTECTION]
                with contextlib.suppress(ApiError):
                    self.cluster.patch_object(
                        "persistentvolumeclaims", key[1], {"metadata": {"finalizers": kept}},
                        key[0],
                    )  # fmt: skip

    # -- what tests ask (on the loop) ----------------------------------------------------

    def runtime(self, name: str, namespace: str) -> PodRuntime:
        """The running (not terminating) pod ``namespace/name``."""
        for runtime in self._pods.values():
            if (runtime.namespace, runtime.name) == (namespace, name) and not (
                runtime.stop.event.is_set()
            ):
                return runtime
        raise LookupError(f"no running pod {namespace}/{name}")


def _missing(path: Path) -> list[Path]:
    """``path`` and its missing parents, outermost first (those a mkdir would create)."""
    return [p for p in [*reversed(path.parents), path] if not p.exists()]


class RunningKubelet:
    """A :class:`Kubelet` on its own thread, for tests and scripts (thread-safe)."""

    def __init__(self, kubelet: Kubelet, loop: asyncio.AbstractEventLoop) -> None:
        self.kubelet = kubelet
        self._loop = loop
        network = kubelet.network
        assert network is not None
        self.subnet = network.subnet
        self.host_ip = str(network.host_ip)
        self.bridge = network.bridge

    def _call(self, function: Callable[[], T]) -> T:
        async def call() -> T:
            return function()

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result(30)

    def _await(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(60)

    @property
    def errors(self) -> list[str]:
        return self._call(lambda: list(self.kubelet.errors))

    def kill(self, pod: str, namespace: str = "default", container: str | None = None) -> int:
        """SIGKILL a pod's container process (a crash); its pid."""

        def kill() -> int:
            pid = self.kubelet.runtime(pod, namespace).container(container).kill()
            if pid is None:
                raise LookupError(f"{namespace}/{pod} has no process running")
            return pid

        return self._call(kill)

    def pid(self, pod: str, namespace: str = "default", container: str | None = None) -> int | None:
        return self._call(lambda: self.kubelet.runtime(pod, namespace).container(container).pid)

    def netns(self, pod: str, namespace: str = "default") -> str:
        def netns() -> str:
            runtime = self.kubelet.runtime(pod, namespace)
            if runtime.net is None:
                raise LookupError(f"{namespace}/{pod} has no network namespace yet")
            return runtime.net.netns

        return self._call(netns)

    def routes(self, pod: str, namespace: str = "default") -> list[str]:
        """The pod's IPv4 routes, as ``ip route`` prints them."""
        name = self.netns(pod, namespace)
        return self._await(net.run("ip", "-n", name, "-4", "route", "show")).splitlines()

    def log_path(self, pod: str, namespace: str = "default", container: str | None = None) -> Path:
        def path() -> Path:
            runtime = self.kubelet.runtime(pod, namespace)
            return runtime.logs / f"{runtime.container(container).name}.log"

        return self._call(path)

    def claim_dir(self, claim: str, namespace: str = "default") -> Path:
        """Where claim ``namespace/claim`` keeps its data (while it exists)."""
        return volumes.claim_dir(self.kubelet.options.workdir / "claims", namespace, claim)


@contextlib.contextmanager
def running_kubelet(cluster: Cluster, options: KubeletOptions) -> Iterator[RunningKubelet]:
    """Run a :class:`Kubelet` over ``cluster`` on its own event loop in a thread for the
    block's duration; :class:`Unavailable` if this machine cannot run pods."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="kubelet", daemon=True)
    thread.start()
    kubelet = Kubelet(cluster, options)

    def wait(coroutine: Coroutine[Any, Any, None], timeout: float) -> None:
        asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout)

    try:
        wait(kubelet.start(), 60)
        yield RunningKubelet(kubelet, loop)
    finally:
        try:
            wait(kubelet.stop(), options.teardown_grace + 60)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(30)
            loop.close()
