"""The emulated API server's storage: objects, one resourceVersion counter, a change log.

Emulates etcd as the API server uses it: every write takes the next value of one global
counter as the object's ``metadata.resourceVersion`` and appends a :class:`Change` to a
bounded history, from which a watch resumes after any still-retained version (older ones
are "compacted": 410 Gone). A watch registers and reads its backlog under the same lock
the writers take, so no write falls between the backlog and the live events.

Objects are plain JSON dicts, copied on the way in and out. The store is synchronous and
thread-safe (one re-entrant lock): tests may call it from any thread while the HTTP
server runs in another. Subscribers are called under the lock, in commit order; they must
be quick and must not write.
"""

from __future__ import annotations

import copy
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from kube_api_errors import gone
from kube_api_resources import GroupResource

__all__ = ["Change", "ChangeType", "Store", "Subscriber"]

ChangeType = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclass(frozen=True)
class Change:
    """One committed write. ``object`` is the object after it (before it, for DELETED, with
    the deletion's resourceVersion); ``old`` the object before it (None when ADDED)."""

    type: ChangeType
    resource: GroupResource
    object: dict[str, Any]
    old: dict[str, Any] | None
    revision: int

    @property
    def namespace(self) -> str:
        return str(self.object["metadata"].get("namespace", ""))


#: Called with each change, under the store's lock.
Subscriber = Callable[[Change], None]
_Key = tuple[str, str]


def _key(obj: dict[str, Any]) -> _Key:
    metadata = obj["metadata"]
    return (metadata.get("namespace", ""), metadata["name"])


class Store:
    """Objects by (group, plural) and (namespace, name), and the history of their changes."""

    def __init__(self, history: int = 10_000) -> None:
        self._lock = threading.RLock()
        self._revision = 0
        self._objects: dict[GroupResource, dict[_Key, dict[str, Any]]] = {}
        self._history: deque[Change] = deque(maxlen=history)
        self._compacted = 0
        self._subscribers: list[Subscriber] = []

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store still: for a read-modify-write spanning several calls."""
        with self._lock:
            yield

    @property
    def revision(self) -> int:
        with self._lock:
            return self._revision

    def get(self, resource: GroupResource, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._objects.get(resource, {}).get((namespace, name))
            return copy.deepcopy(found) if found is not None else None

    def objects(
        self, resource: GroupResource, namespace: str | None = None
    ) -> list[dict[str, Any]]:
        """Objects of ``resource`` (in ``namespace`` unless None), by namespace and name."""
        with self._lock:
            objects = self._objects.get(resource, {})
            return [
                copy.deepcopy(objects[k])
                for k in sorted(objects)
                if namespace is None or k[0] == namespace
            ]

    def resources(self) -> list[GroupResource]:
        with self._lock:
            return [r for r, objects in self._objects.items() if objects]

    def put(self, resource: GroupResource, obj: dict[str, Any]) -> dict[str, Any]:
        """Write ``obj`` (ADDED or MODIFIED), stamped with the next resourceVersion."""
        with self._lock:
            self._revision += 1
            stored = copy.deepcopy(obj)
            stored["metadata"]["resourceVersion"] = str(self._revision)
            objects = self._objects.setdefault(resource, {})
            old = objects.get(_key(stored))
            objects[_key(stored)] = stored
            self._commit(
                Change("MODIFIED" if old else "ADDED", resource, stored, old, self._revision)
            )
            return copy.deepcopy(stored)

    def remove(
        self,
        resource: GroupResource,
        namespace: str,
        name: str,
        final: dict[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """Delete an object (DELETED), as it was or as ``final`` (an update that removes it);
        what it was, or None if it was not there."""
        with self._lock:
            old = self._objects.get(resource, {}).pop((namespace, name), None)
            if old is None:
                return None
            self._revision += 1
            gone_obj = copy.deepcopy(final if final is not None else old)
            gone_obj["metadata"]["resourceVersion"] = str(self._revision)
            self._commit(Change("DELETED", resource, gone_obj, old, self._revision))
            return copy.deepcopy(gone_obj)

    def _commit(self, change: Change) -> None:
        if len(self._history) == self._history.maxlen:
            self._compacted = self._history[0].revision
        self._history.append(change)
        for subscriber in list(self._subscribers):
            subscriber(change)

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Call ``subscriber`` with every change from now on; returns the unsubscriber."""
        with self._lock:
            self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            with self._lock:
                if subscriber in self._subscribers:
                    self._subscribers.remove(subscriber)

        return unsubscribe

    def watch(self, since: int, subscriber: Subscriber) -> Callable[[], None]:
        """Replay the retained changes after revision ``since`` to ``subscriber``, then
        subscribe it, all under the lock; 410 Gone if changes after ``since`` are lost."""
        with self._lock:
            if since < self._compacted:
                raise gone(f"too old resource version: {since} ({self._compacted + 1})")
            for change in self._history:
                if change.revision > since:
                    subscriber(change)
            return self.subscribe(subscriber)

    def compact(self) -> None:
        """Forget the history (as etcd compaction does): older watches get 410 Gone."""
        with self._lock:
            self._history.clear()
            self._compacted = self._revision
