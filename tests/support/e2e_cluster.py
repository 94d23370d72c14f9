"""The end-to-end scenario's view of the emulated cluster and its kubelet harness: cluster
DNS as the host sees it, bounded waits that explain themselves, and the history of pods.

- :func:`cluster_dns` answers a name as the pods' hosts files do (the harness writes them
  from the same records, ``kubelet_dns``); :func:`resolve` turns a name server address
  of DNS names (``a:9876;b:9876``) into the pods' IPs, for the test's clients and for
  the operator, which run on the host and not in a pod.
- :class:`Scene` waits for conditions up to a bound, and a step of the scenario that fails
  fails with the state of the cluster: conditions of the custom resources, pods, the
  harness's errors, the latest Events and the tail of every pod's log.
- :class:`ConditionLog` keeps every condition a custom resource went through (each
  status and reason once per change), so a step can check what was reported on the way
  as well as where it ended.
- :class:`PodHistory` replays the emulator's change log: which pods were deleted, in
  which order, and which other pods were away (missing, terminating, not Ready) then.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import kubelet_dns as dns
from kube_api_cluster import Cluster
from kube_api_store import Change
from kubelet import RunningKubelet
from kubelet_pod import describe
from operator_harness import UNREACHABLE, conditions

__all__ = [
    "CUSTOM_KINDS",
    "ConditionLog",
    "Deletion",
    "PodHistory",
    "Scene",
    "cluster_dns",
    "pod_ready",
    "resolve",
]

T = TypeVar("T")

CUSTOM_KINDS = ("brokerclusters", "topics", "consumergroups")
LOG_LINES = 12
"""Lines of each pod's log a failed wait shows."""
EVENTS = 15
"""How many of the latest Events a failed wait shows."""


def cluster_dns(cluster: Cluster) -> dict[str, str]:
    """Every ``<svc>.<ns>.svc`` and ``<host>.<svc>.<ns>.svc`` name with the address a pod
    resolves it to (a Service's first endpoint, as the hosts files list it first)."""
    entries = [e for pod in cluster.list_objects("pods") if (e := dns.pod_entry(pod))]
    answers: dict[str, str] = {}
    for ip, relatives in dns.records(cluster.list_objects("services"), entries):
        for namespace, relative in relatives:
            answers.setdefault(f"{relative}.{namespace}.svc", ip)
    return answers


def resolve(cluster: Cluster, address: str) -> str:
    """``address`` (``host:port;...``) with each host name resolved through the cluster's
    DNS; a name that does not resolve now becomes an address that refuses at once (never
    a lookup by the host's own resolver, which could leave the machine)."""
    answers = cluster_dns(cluster)
    resolved = []
    for part in address.split(";"):
        host, _, port = part.strip().rpartition(":")
        ip = answers.get(host)
        resolved.append(f"{ip}:{port}" if ip is not None else UNREACHABLE)
    return ";".join(resolved)


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """Whether the pod's Ready condition is True (being deleted or not)."""
    found = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in found)


@dataclass(frozen=True)
class Transition:
    """A condition of a custom resource reported with a new status or reason."""

    plural: str
    name: str
    type: str
    status: str
    reason: str
    message: str


@dataclass
class ConditionLog:
    """The conditions of the custom resources, each time one changed status or reason."""

    seen: list[Transition] = field(default_factory=list)
    _last: dict[tuple[str, str, str], tuple[str, str]] = field(default_factory=dict)

    def note(self, change: Change) -> None:
        """The cluster's write hook (under its lock: quick, no writes)."""
        plural = change.resource[1]
        if plural not in CUSTOM_KINDS or change.type == "DELETED":
            return
        name = change.object["metadata"]["name"]
        for type_, (status, reason, message) in conditions(change.object).items():
            if self._last.get((plural, name, type_)) != (status, reason):
                self._last[plural, name, type_] = (status, reason)
                self.seen.append(Transition(plural, name, type_, status, reason, message))

    def mark(self) -> int:
        return len(self.seen)

    def since(self, mark: int, plural: str, name: str, type_: str) -> list[Transition]:
        """One condition's transitions after ``mark``, in order."""
        return [t for t in self.seen[mark:] if (t.plural, t.name, t.type) == (plural, name, type_)]


@dataclass
class Scene:
    """The cluster the scenario plays in: ``namespace`` of ``cluster``, run by ``harness``
    (its pods' logs under ``workdir``)."""

    cluster: Cluster
    harness: RunningKubelet
    namespace: str
    workdir: Path
    log: ConditionLog = field(default_factory=ConditionLog)

    @contextlib.contextmanager
    def logging(self) -> Iterator[ConditionLog]:
        """:attr:`log` filled with every condition change while the block runs."""
        stop = self.cluster.on_change(self.log.note)
        try:
            yield self.log
        finally:
            stop()

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        return self.cluster.find_object(kind, name, self.namespace)

    def condition(self, kind: str, name: str, type_: str) -> tuple[str, str, str]:
        """(status, reason, message) of one condition ("" each while it is not reported)."""
        return conditions(self.get(kind, name)).get(type_, ("", "", ""))

    def settled(self, kind: str, name: str) -> bool:
        """Ready, and its status of the object's current generation."""
        found = self.get(kind, name)
        if found is None:
            return False
        observed = (found.get("status") or {}).get("observedGeneration")
        current = found["metadata"].get("generation")
        return observed == current and self.condition(kind, name, "Ready")[0] == "True"

    def pods(self, labels: str | None = None) -> dict[str, dict[str, Any]]:
        found = self.cluster.list_objects("pods", self.namespace, labels)
        return {pod["metadata"]["name"]: pod for pod in found}

    @contextlib.asynccontextmanager
    async def step(self, title: str) -> AsyncIterator[None]:
        """A step of the scenario: what fails in it fails with its title and :meth:`dump`."""
        try:
            yield
        except Exception as exc:
            raise AssertionError(f"step {title!r}: {exc}\n{self.dump()}") from exc

    async def until(self, condition: Callable[[], object], what: str, timeout: float = 60) -> None:
        """Return once ``condition()`` holds; AssertionError after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"not in {timeout:g} s: {what}")
            await asyncio.sleep(0.05)

    async def value(
        self, probe: Callable[[], Awaitable[T | None]], what: str, timeout: float = 60
    ) -> T:
        """Await ``probe()`` until it gives something other than None; that value."""
        deadline = time.monotonic() + timeout
        while (found := await probe()) is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"not in {timeout:g} s: {what}")
            await asyncio.sleep(0.2)
        return found

    def dump(self) -> str:
        """The state a failed step is judged by."""
        lines = ["-- custom resources"]
        for kind in CUSTOM_KINDS:
            for obj in self.cluster.list_objects(kind, self.namespace):
                lines += _resource_lines(kind, obj)
        lines.append("-- pods")
        lines += [describe(pod) for pod in self.cluster.list_objects("pods", self.namespace)]
        lines += ["-- harness errors", *self.harness.errors]
        lines.append(f"-- the latest {EVENTS} Events")
        events = self.cluster.list_objects("events", self.namespace)
        for event in events[-EVENTS:]:
            about = event.get("involvedObject", {})
            lines.append(
                f"{about.get('kind')}/{about.get('name')} {event.get('type')} "
                f"{event.get('reason')}: {event.get('message')}"
            )
        for log in sorted((self.workdir / "logs").glob("*/*.log"), key=_modified):
            tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-LOG_LINES:]
            lines += [f"-- {log.parent.name}/{log.name}", *tail]
        return "\n".join(lines)


def _modified(path: Path) -> float:
    return path.stat().st_mtime


def _resource_lines(kind: str, obj: dict[str, Any]) -> list[str]:
    meta, status = obj["metadata"], obj.get("status") or {}
    head = (
        f"{kind}/{meta['name']} generation {meta.get('generation')} observed "
        f"{status.get('observedGeneration')}"
        f"{' (deleting)' if meta.get('deletionTimestamp') else ''}"
    )
    shown = [f"  {t}: {s} {r}: {m}" for t, (s, r, m) in conditions(obj).items()]
    extra = {k: v for k, v in status.items() if k not in ("conditions", "observedGeneration")}
    return [head, *shown, f"  {extra}"]


@dataclass(frozen=True)
class Deletion:
    """Pod ``pod`` was deleted while the pods ``away`` (of those followed) were missing,
    terminating or not Ready."""

    pod: str
    away: tuple[str, ...]


@dataclass
class PodHistory:
    """Replays pod changes (the emulator's change log) for the pods named ``followed``,
    from ``pods``, their state when the log began."""

    followed: frozenset[str]
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def recording(cls, cluster: Cluster, namespace: str, followed: Iterable[str]) -> tuple[
        PodHistory, list[Change], Callable[[], None]
    ]:  # fmt: skip
        """A history of the pods as they are now, the change log from now on (atomically:
        no write falls in between) and the log's unsubscriber."""
        names = frozenset(followed)
        with cluster.store.locked():
            changes, stop = cluster.changes()
            pods = {
                pod["metadata"]["name"]: pod
                for pod in cluster.list_objects("pods", namespace)
                if pod["metadata"]["name"] in names
            }
        return cls(names, pods), changes, stop

    def replay(self, changes: Iterable[Change]) -> list[Deletion]:
        """The deletions among ``changes`` (in order), each with who was away then."""
        deletions: list[Deletion] = []
        for change in changes:
            name = change.object["metadata"]["name"]
            if change.resource[1] != "pods" or name not in self.followed:
                continue
            was = (change.old or {}).get("metadata", {}).get("deletionTimestamp")
            now = change.type != "DELETED" and change.object["metadata"].get("deletionTimestamp")
            if now and not was:
                deletions.append(Deletion(name, self._away(but=name)))
            if change.type == "DELETED":
                self.pods.pop(name, None)
            else:
                self.pods[name] = change.object
        return deletions

    def _away(self, but: str) -> tuple[str, ...]:
        return tuple(
            sorted(
                name
                for name in self.followed
                if name != but and (name not in self.pods or _away(self.pods[name]))
            )
        )


def _away(pod: Mapping[str, Any]) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp")) or not pod_ready(pod)
