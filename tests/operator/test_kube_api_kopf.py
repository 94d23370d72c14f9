"""kopf 1.45 runs against the emulated API server as against a real cluster: its
create, update, delete (with its finalizer) and timer handlers each run as they should."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import kopf
import pytest
from kube_api import KubeApiServer, running_kube_api
from waiting import wait_until

FINALIZER = "example.com/kopf-finalizer"
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}


class Journal:
    """What the operator's handlers did, in order (written from kopf's thread)."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, str, Any]] = []
        self._lock = threading.Lock()

    def add(self, what: str, name: str, detail: Any = None) -> None:
        with self._lock:
            self.entries.append((what, name, detail))

    def count(self, what: str, name: str) -> int:
        with self._lock:
            return sum(1 for w, n, _ in self.entries if (w, n) == (what, name))

    def details(self, what: str, name: str) -> list[Any]:
        with self._lock:
            return [d for w, n, d in self.entries if (w, n) == (what, name)]


def operator_registry(journal: Journal) -> kopf.OperatorRegistry:
    """A small operator: status on create, a record on update, cleanup on delete, a timer."""
    registry = kopf.OperatorRegistry()
    resource = ("example.com", "v1", "gadgets")

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.persistence.finalizer = FINALIZER
        settings.watching.server_timeout = 5
        settings.posting.level = 100  # no Events: keep the journal of writes small

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return kopf.login_with_kubeconfig(**kwargs)

    @kopf.on.create(*resource, registry=registry)
    def created(name: str, spec: Any, patch: kopf.Patch, **_: Any) -> None:
        journal.add("create", name, spec.get("size"))
        patch.status["phase"] = "Created"

    @kopf.on.update(*resource, registry=registry)
    def updated(name: str, old: Any, new: Any, **_: Any) -> None:
        journal.add("update", name, (old["spec"]["size"], new["spec"]["size"]))

    @kopf.on.delete(*resource, registry=registry)
    def deleted(name: str, **_: Any) -> None:
        journal.add("delete", name)

    @kopf.timer(*resource, registry=registry, interval=0.2)
    def ticked(name: str, patch: kopf.Patch, status: Any, **_: Any) -> None:
        journal.add("timer", name)
        patch.status["ticks"] = int(status.get("ticks", 0)) + 1

    return registry


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiServer]:
    with running_kube_api(tmp_path_factory.mktemp("kube") / "kubeconfig") as server:
        server.cluster.create_object(CRD)
        yield server


@pytest.fixture
def journal(kube: KubeApiServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Journal]:
    """kopf running the operator in a thread (standalone, namespace default)."""
    monkeypatch.setenv("KUBECONFIG", str(kube.kubeconfig))
    journal = Journal()
    stop, ready = threading.Event(), threading.Event()
    registry = operator_registry(journal)

    def run() -> None:
        asyncio.run(
            kopf.operator(
                registry=registry,
                standalone=True,
                namespaces=["default"],
                stop_flag=stop,
                ready_flag=ready,
            )
        )

    thread = threading.Thread(target=run, name="kopf")
    thread.start()
    try:
        assert ready.wait(30), "kopf did not start"
        yield journal
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()


def gadget(name: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": size},
    }


async def test_handlers_run_once_each_as_on_a_real_cluster(
    kube: KubeApiServer, journal: Journal
) -> None:
    cluster = kube.cluster
    cluster.create_object(gadget("g1", 1))
    await wait_until(
        lambda: (cluster.get_object("gadgets", "g1").get("status") or {}).get("phase") == "Created",
        "the create handler's status",
    )
    assert FINALIZER in cluster.get_object("gadgets", "g1")["metadata"]["finalizers"]
    await wait_until(lambda: journal.count("timer", "g1") >= 2, "the timer ticking")

    cluster.patch_object("gadgets", "g1", {"spec": {"size": 2}})
    await wait_until(lambda: journal.count("update", "g1") == 1, "the update handler")

    cluster.delete_object("gadgets", "g1")
    await wait_until(lambda: cluster.find_object("gadgets", "g1") is None, "g1 gone")
    assert journal.count("create", "g1") == 1
    assert journal.details("create", "g1") == [1]
    assert journal.details("update", "g1") == [(1, 2)]
    assert journal.count("delete", "g1") == 1
