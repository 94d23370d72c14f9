"""The real operator (``rocketkube.operator.main.operate``) against the emulated API server,
for the handler tests: the CRDs applied, kopf in a thread with short timers, clusters
pointed at name servers the test runs on 127.0.0.1; and the StatefulSet controller's and
the kubelet's part, which nothing plays here: creating a StatefulSet's pods from its
template and marking them Ready.

::

    with running_kube_api(path) as kube, running_operator(kube) as operator:
        operator.addresses["demo"] = namesrv.address     # cluster demo's name servers
        statefulset_pods(kube.cluster, "demo-namesrv")   # its pods exist and are Ready

    async with operator_running(kube) as operator:       # the same, from an async test
        ...

Each pod is named ``<statefulset>-<ordinal>``, carries the template's labels and
annotations (the template hash among them) and an owner reference to its StatefulSet.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import subprocess
import threading
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kube_api import Cluster, KubeApiServer

from rocketkube.broker.app import BrokerApp
from rocketkube.operator import main, metrics
from rocketkube.operator.api import crds, models
from rocketkube.operator.handlers.context import AddressOf, Timing

__all__ = [
    "API",
    "UNREACHABLE",
    "Kubectl",
    "RunningOperator",
    "StartBroker",
    "apply_crds",
    "condition",
    "conditions",
    "create_pod",
    "events_of",
    "mark_ready",
    "operator_running",
    "pod_from_template",
    "resource",
    "running_operator",
    "statefulset_pods",
]

API = f"{models.GROUP}/{models.VERSION}"
StartBroker = Callable[..., Awaitable[BrokerApp]]
"""The ``start_broker`` fixture (``tests/conftest.py``): a broker of this process."""

UNREACHABLE = "127.0.0.1:1"
"""A name server address that refuses at once: a cluster whose brokers do not run."""

FAST = Timing(timer_interval=0.5, retry_delay=0.5, conflict_delay=0.2, backoff_limit=2.0)
"""Timers and retries short enough for tests (no timed assertions depend on them)."""


def apply_crds(cluster: Cluster) -> None:
    """The operator's CRDs, as ``rocketkube operator --print-crds | kubectl apply`` would
    (those already there are left as they are)."""
    for kind in crds.KINDS:
        crd = crds.crd(kind)
        if cluster.find_object("customresourcedefinitions", crd["metadata"]["name"]) is None:
            cluster.create_object(crd)


@dataclass
class RunningOperator:
    """The operator running in a thread; ``addresses`` maps a BrokerCluster's name to the
    name server address its admin client uses (others: :data:`UNREACHABLE`), unless
    ``resolve`` is given: then every cluster's name servers are found through it."""

    kube: KubeApiServer
    metrics: metrics.Metrics = field(default_factory=metrics.Metrics)
    addresses: dict[str, str] = field(default_factory=dict)
    resolve: AddressOf | None = None

    def address_of(self, cluster: str, namespace: str, replicas: int) -> str:
        if self.resolve is not None:
            return self.resolve(cluster, namespace, replicas)
        return self.addresses.get(cluster, UNREACHABLE)

    def sample(self, name: str, **labels: str) -> float:
        """A metric's value (0 when it has not been counted yet)."""
        return self.metrics.registry.get_sample_value(name, labels) or 0.0


@contextlib.contextmanager
def running_operator(
    kube: KubeApiServer,
    timing: Timing = FAST,
    *,
    with_crds: bool = True,
    resolve: AddressOf | None = None,
) -> Iterator[RunningOperator]:
    """The operator watching every namespace of ``kube`` (its CRDs applied first, unless
    the test applied them: ``with_crds=False``); ``resolve``: see :class:`RunningOperator`."""
    if with_crds:
        apply_crds(kube.cluster)
    operator = RunningOperator(kube, resolve=resolve)
    stop, ready = threading.Event(), threading.Event()
    options = main.Options(kubeconfig=str(kube.kubeconfig), timing=timing)

    def run() -> None:
        asyncio.run(
            main.operate(
                options,
                address_of=operator.address_of,
                operator_metrics=operator.metrics,
                stop_flag=stop,
                ready_flag=ready,
            )
        )

    thread = threading.Thread(target=run, name="operator")
    thread.start()
    try:
        assert ready.wait(30), "the operator did not start"
        yield operator
    finally:
        stop.set()
        thread.join(30)
        _collect_kopfs_last_session()
    assert not thread.is_alive(), "the operator did not stop"


def _collect_kopfs_last_session() -> None:
    """kopf closes its API sessions when it stops, but a timer still in its pass then
    patches its object afterwards, through a session opened anew and never closed
    (kopf's shutdown race, harmless in a process that exits). A test process starts and
    stops many operators: collect that session now, quietly, as the exit would."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


@contextlib.asynccontextmanager
async def operator_running(kube: KubeApiServer) -> AsyncIterator[RunningOperator]:
    """:func:`running_operator` inside a test's event loop: started and stopped from a
    worker thread, so name servers and brokers of the test's loop keep answering the
    operator while it starts and stops (tests that stop one operator and start another)."""
    manager = running_operator(kube)
    running = await asyncio.to_thread(manager.__enter__)
    try:
        yield running
    finally:
        await asyncio.to_thread(manager.__exit__, None, None, None)


def pod_from_template(
    statefulset: dict[str, Any], ordinal: int, *, ready: bool = True
) -> dict[str, Any]:
    """Pod ``ordinal`` of ``statefulset`` as its controller creates it, Running (and
    Ready, as a kubelet whose probes pass would report it, when ``ready``)."""
    meta = statefulset["metadata"]
    template = statefulset["spec"]["template"]
    status = "True" if ready else "False"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{meta['name']}-{ordinal}",
            "namespace": meta["namespace"],
            "labels": dict(template["metadata"].get("labels", {})),
            "annotations": dict(template["metadata"].get("annotations", {})),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": template["spec"],
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": status}],
        },
    }


def statefulset_pods(
    cluster: Cluster, name: str, namespace: str = "default", *, ready: bool = True
) -> list[str]:
    """Create every missing pod of StatefulSet ``name``; the pods' names."""
    statefulset = cluster.get_object("statefulsets", name, namespace)
    created = []
    for ordinal in range(statefulset["spec"]["replicas"]):
        pod = pod_from_template(statefulset, ordinal, ready=ready)
        if cluster.find_object("pods", pod["metadata"]["name"], namespace) is None:
            create_pod(cluster, pod)
            created.append(pod["metadata"]["name"])
    return created


def create_pod(cluster: Cluster, pod: dict[str, Any]) -> None:
    """Create ``pod``, then write its status as its kubelet would (a create ignores it)."""
    cluster.create_object(pod)
    meta = pod["metadata"]
    status = {"status": pod["status"]}
    cluster.patch_object("pods", meta["name"], status, meta["namespace"], subresource="status")


def mark_ready(cluster: Cluster, pod: str, namespace: str = "default") -> None:
    """The kubelet's report that ``pod``'s readiness probe passes."""
    status = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    cluster.patch_object("pods", pod, status, namespace, subresource="status")


def resource(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    """A BrokerCluster, Topic or ConsumerGroup named ``name`` (in ``default``)."""
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name}, "spec": spec}


def condition(
    cluster: Cluster, plural: str, name: str, type_: str = "Ready"
) -> tuple[str, str, str]:
    """Condition ``type_`` of an object: (status, reason, message); empty when absent."""
    return conditions(cluster.find_object(plural, name)).get(type_, ("", "", ""))


def conditions(obj: dict[str, Any] | None) -> dict[str, tuple[str, str, str]]:
    """An object's conditions: type -> (status, reason, message)."""
    found = ((obj or {}).get("status") or {}).get("conditions") or ()
    return {c["type"]: (c["status"], c.get("reason", ""), c.get("message", "")) for c in found}


def events_of(
    cluster: Cluster, kind: str, name: str, namespace: str = "default"
) -> list[tuple[str, str, str]]:
    """The Events posted about an object: (type, reason, message), oldest first."""
    return [
        (event.get("type", ""), event.get("reason", ""), event.get("message", ""))
        for event in cluster.list_objects("events", namespace)
        if event.get("involvedObject", {}).get("kind") == kind
        and event.get("involvedObject", {}).get("name") == name
    ]


class Kubectl:
    """The real kubectl against the emulated API server, with its own cache and home."""

    def __init__(self, server: KubeApiServer, home: Path) -> None:
        self.home = home
        self.env = {
            **os.environ,
            "KUBECONFIG": str(server.kubeconfig),
            "KUBECACHEDIR": str(home / "cache"),
            "HOME": str(home),
        }

    def __call__(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["kubectl", *args],
            input=stdin,
            env=self.env,
            text=True,
            capture_output=True,
            timeout=60,
            check=False,
        )
