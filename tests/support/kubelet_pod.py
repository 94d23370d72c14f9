"""One pod on the harness's node: its sandbox, its containers, the status it reports.

A pod's life here::

    sandbox     a network namespace with its own IP (``kubelet_net``), written to the
                pod's status at once (``status.podIP``: the downward API needs it)
    volumes     set up (``kubelet_volumes``); a missing ConfigMap or claim keeps the pod
                Pending, retried, as the kubelet does; with the API server given, the
                service account's files too (``kubelet_apiserver``), mounted in each
                container beside the ``KUBERNETES_SERVICE_*`` variables
    containers  run side by side (``kubelet_container``), each in a mount namespace of
                its own inside the pod's network namespace
    stop        when the pod object is deleted (or the harness stops): every container
                stopped within the grace period, the namespace and emptyDirs removed;
                then the kubelet lets the object go (its finalizer)

Status is written through the emulator's ``status`` subresource whenever it changes
(:func:`pod_status`, pure): phase, ``PodScheduled``/``Initialized``/``ContainersReady``/
``Ready`` conditions (transition times kept while unchanged), IPs, start time,
``containerStatuses``. A JSON patch that tests the pod's uid guards every write: a pod
recreated under the same name is never written by its predecessor.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubelet_apiserver as apiserver
import kubelet_spec as spec_reading
import kubelet_volumes as volumes
from kube_api_cluster import Cluster
from kube_api_errors import ApiError
from kubelet_container import Backoff, ContainerRuntime, Launch, StopSignal
from kubelet_net import Network, PodNet
from kubelet_spec import Lookup

__all__ = ["Node", "PodRuntime", "describe", "pod_status"]

_CONDITIONS = ("PodScheduled", "Initialized", "ContainersReady", "Ready")


@dataclass(frozen=True)
class Node:
    """What a pod needs of the kubelet that runs it."""

    cluster: Cluster
    network: Network
    workdir: Path
    lookup: Lookup
    entrypoints: Mapping[str, str]
    image_entrypoint: tuple[str, ...]
    image_env: Mapping[str, str]
    backoff: Backoff
    period_cap: float | None
    now: Callable[[], str]
    changed: Callable[[], None]
    """Wake the kubelet (a pod got its IP, became ready, stopped)."""
    mount_points: Callable[[list[Path]], None]
    """Record host paths created as mount points."""
    api: apiserver.InCluster | None = None
    """Where pods reach the API server; None: they do not."""

    @property
    def claims(self) -> Path:
        return self.workdir / "claims"


def pod_status(
    previous: Mapping[str, Any],
    *,
    phase: str,
    host_ip: str,
    pod_ip: str | None,
    start_time: str | None,
    containers: list[dict[str, Any]],
    now: str,
) -> dict[str, Any]:
    """A pod's status; conditions keep their ``lastTransitionTime`` from ``previous``
    while their status is unchanged."""
    ready = phase == "Running" and bool(containers) and all(c["ready"] for c in containers)
    states = {
        "PodScheduled": True,
        "Initialized": True,
        "ContainersReady": ready,
        "Ready": ready,
    }
    before = {c["type"]: c for c in previous.get("conditions") or []}
    conditions = []
    for kind in _CONDITIONS:
        value = "True" if states[kind] else "False"
        old = before.get(kind)
        since = old["lastTransitionTime"] if old and old.get("status") == value else now
        conditions.append({"type": kind, "status": value, "lastTransitionTime": since})
    out: dict[str, Any] = {
        "phase": phase,
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "containerStatuses": containers,
    }
    if pod_ip is not None:
        out |= {"podIP": pod_ip, "podIPs": [{"ip": pod_ip}]}
    if start_time is not None:
        out["startTime"] = start_time
    return out


class PodRuntime:
    """A pod object being run (see the module docstring)."""

    def __init__(self, node: Node, pod: dict[str, Any]) -> None:
        self.node = node
        self.pod = pod
        metadata = pod["metadata"]
        self.uid = str(metadata["uid"])
        self.namespace = str(metadata.get("namespace", "default"))
        self.name = str(metadata["name"])
        self.directory = node.workdir / "pods" / f"{self.namespace}_{self.name}_{self.uid[:8]}"
        self.logs = node.workdir / "logs" / f"{self.namespace}_{self.name}_{self.uid[:8]}"
        self.net: PodNet | None = None
        self.stop = StopSignal()
        self.hosts_text = ""
        self.finished = False
        self._sources: dict[str, Path] | None = None
        self._account: Path | None = None
        self._start_time: str | None = None
        self._reported: dict[str, Any] | None = None
        restart = str((pod.get("spec") or {}).get("restartPolicy") or "Always")
        self.containers = [
            ContainerRuntime(
                container,
                restart_policy=restart,
                launch=self._launcher(container),
                pod_ip=self.pod_ip,
                changed=self._container_changed,
                now=node.now,
                backoff=node.backoff,
                period_cap=node.period_cap,
            )
            for container in (pod.get("spec") or {}).get("containers") or []
        ]

    def pod_ip(self) -> str:
        return str(self.net.ip) if self.net is not None else ""

    @property
    def grace(self) -> float:
        return float((self.pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30))

    def view(self) -> dict[str, Any]:
        """The pod object with what this runtime knows of its status filled in."""
        pod = copy.deepcopy(self.pod)
        status = pod.setdefault("status", {})
        status["hostIP"] = str(self.node.network.host_ip)
        if self.net is not None:
            status["podIP"] = str(self.net.ip)
        return pod

    def container(self, name: str | None) -> ContainerRuntime:
        for runtime in self.containers:
            if name is None or runtime.name == name:
                return runtime
        raise LookupError(f"pod {self.namespace}/{self.name} has no container {name!r}")

    def terminate(self, grace: float) -> None:
        self.stop.set(grace)

    async def run(self) -> None:
        """The pod's whole life; returns once everything it made is gone."""
        try:
            self.net = await self.node.network.add_pod(self.namespace, self.name)
            self._start_time = self.node.now()
            self.report()
            if await self._volumes_ready():
                await asyncio.gather(*(c.run(self.stop) for c in self.containers))
                self.report()
                await self.stop.event.wait()
        finally:
            self.finished = True
            if self.net is not None:
                await self.node.network.remove_pod(self.net)
            shutil.rmtree(self.directory, ignore_errors=True)
            self.node.changed()

    async def _volumes_ready(self) -> bool:
        """Set up the volumes, retrying while something is missing; False if stopped."""
        while not self.stop.event.is_set():
            try:
                self._sources = volumes.prepare(
                    self.pod, self.directory, self.node.claims, self.node.lookup
                )
                self._account = self._write_account()
                return True
            except volumes.VolumeError as error:
                for container in self.containers:
                    container.state = {"waiting": {"reason": "ContainerCreating",
                                                   "message": str(error)}}  # fmt: skip
                self.report()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.event.wait(), 1.0)
        return False

    def _write_account(self) -> Path | None:
        """The service account's files, if the pod gets them."""
        api = self.node.api
        if api is None or not apiserver.wants_account(self.pod):
            return None
        return apiserver.write_account(self.directory / "serviceaccount", self.namespace, api)

    def _account_mounts(self, container: Mapping[str, Any]) -> list[volumes.Mount]:
        """The service account's mount, unless the container mounts a volume there."""
        taken = {m.get("mountPath") for m in container.get("volumeMounts") or []}
        if self._account is None or apiserver.MOUNT_PATH in taken:
            return []
        return [volumes.Mount(self._account, apiserver.MOUNT_PATH, read_only=True)]

    def _image_env(self) -> Mapping[str, str]:
        """The image's environment and, when pods reach the API server, its Service's."""
        api = self.node.api
        return self.node.image_env if api is None else {
            **self.node.image_env, **apiserver.service_env(api)
        }  # fmt: skip

    def refresh_volumes(self) -> None:
        """Rewrite ConfigMap and Secret volumes from their objects (as the kubelet syncs
        them); a source gone missing keeps the files it had."""
        if self._sources is None or self.finished:
            return
        with contextlib.suppress(volumes.VolumeError):
            self._sources = volumes.prepare(
                self.pod, self.directory, self.node.claims, self.node.lookup
            )

    def _launcher(self, container: Mapping[str, Any]) -> Callable[[], Launch]:
        def launch() -> Launch:
            net, sources = self.net, self._sources
            if net is None or sources is None:
                raise volumes.VolumeError("the pod's sandbox is not ready")
            pod = self.view()
            env = spec_reading.environment(container, pod, self._image_env(), self.node.lookup)
            argv = spec_reading.argv(
                container, env, list(self.node.image_entrypoint), self.node.entrypoints
            )
            mounts = volumes.mounts(container, sources) + self._account_mounts(container)
            self.node.mount_points(volumes.create_mount_points(mounts))
            hostname = (pod.get("spec") or {}).get("hostname") or self.name
            script = volumes.mount_script(
                mounts, hostname, container.get("workingDir") or "/",
                self.directory / "stage" / container["name"],
            )  # fmt: skip
            return Launch(
                argv=[
                    *("ip", "netns", "exec", net.netns),
                    *("unshare", "--mount", "--uts", "--propagation", "private"),
                    *("sh", "-c", script, "sh", *argv),
                ],
                env=env,
                log=self.logs / f"{container['name']}.log",
            )

        return launch

    def _container_changed(self) -> None:
        self.report()
        self.node.changed()

    def _phase(self) -> str:
        containers = self.containers
        if containers and all(c.done for c in containers) and not self.stop.event.is_set():
            codes = [c.state.get("terminated", {}).get("exitCode", 0) for c in containers]
            return "Failed" if any(codes) else "Succeeded"
        if any("waiting" not in c.state or c.restart_count for c in containers):
            return "Running"
        return "Pending"

    def report(self) -> None:
        """Write the pod's status if it changed (never to a namesake with another uid)."""
        if self.finished:
            return
        status = pod_status(
            (self.pod.get("status") or {}),
            phase=self._phase(),
            host_ip=str(self.node.network.host_ip),
            pod_ip=self.pod_ip() or None,
            start_time=self._start_time,
            containers=[c.status() for c in self.containers],
            now=self.node.now(),
        )
        if status == self._reported:
            return
        patch = [
            {"op": "test", "path": "/metadata/uid", "value": self.uid},
            {"op": "add", "path": "/status", "value": status},
        ]
        try:
            self.pod = self.node.cluster.patch_object(
                "pods", self.name, patch, self.namespace, "status",
                content_type="application/json-patch+json",
            )  # fmt: skip
            self._reported = status
        except ApiError as error:
            if error.code not in (404, 409, 422):
                raise


def describe(pod: dict[str, Any]) -> str:
    """One line for a pod: namespace/name, phase, readiness, restarts, IP."""
    metadata, status = pod["metadata"], pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    ready = sum(1 for c in containers if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in containers)
    waiting = [c["state"]["waiting"].get("reason", "") for c in containers
               if "waiting" in c.get("state", {})]  # fmt: skip
    phase = "Terminating" if metadata.get("deletionTimestamp") else status.get("phase", "?")
    return (
        f"{metadata['namespace']}/{metadata['name']}: {phase} {' '.join(waiting)} "
        f"ready {ready}/{len(containers)} restarts {restarts} ip {status.get('podIP', '-')}"
    )
