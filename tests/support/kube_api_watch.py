"""Watch streams: ``?watch=true`` answered with one JSON event per line.

A watch from ``resourceVersion=N`` gets every change after N (``ADDED``, ``MODIFIED``,
``DELETED``) from the store's history, then live ones: the store replays and subscribes
under one lock, so nothing written meanwhile is lost. Without a resourceVersion (or with
``0``, or ``sendInitialEvents=true``) the stream opens with an ``ADDED`` per existing
object, read under the same lock. Selectors apply as on the real server: an object that
stops matching is reported ``DELETED``, one that starts matching ``ADDED``.

``allowWatchBookmarks=true`` adds ``BOOKMARK`` events (every ``bookmark_interval``
seconds and, with ``sendInitialEvents``, one annotated ``k8s.io/initial-events-end`` after
the initial objects). The stream ends after ``timeoutSeconds`` (or the server's default),
or when the server stops. A resourceVersion older than the retained history gets an
``ERROR`` event with a 410 Gone Status, as kopf and client-go expect.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from kube_api_cluster import Cluster
from kube_api_errors import ApiError, bad_request
from kube_api_resources import ResourceType
from kube_api_selectors import Selector, field_selector, label_selector
from kube_api_store import Change

__all__ = ["WatchRequest", "Watches", "changed_event", "serve_watch"]

#: An event's object as the client asked for it (plain, or a Table of one row).
Render = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class WatchRequest:
    """What one watch asked for."""

    type: ResourceType
    namespace: str | None
    labels: str | None
    fields: str | None
    resource_version: str | None
    send_initial: bool
    bookmarks: bool
    timeout: float


class Watches:
    """The open watch streams of one server, ended together when it stops."""

    def __init__(self, bookmark_interval: float, default_timeout: float) -> None:
        self.bookmark_interval = bookmark_interval
        self.default_timeout = default_timeout
        self._queues: set[asyncio.Queue[Change | None]] = set()

    def open(self) -> asyncio.Queue[Change | None]:
        queue: asyncio.Queue[Change | None] = asyncio.Queue()
        self._queues.add(queue)
        return queue

    def close(self, queue: asyncio.Queue[Change | None]) -> None:
        self._queues.discard(queue)

    def stop_all(self) -> None:
        for queue in self._queues:
            queue.put_nowait(None)


def changed_event(change: Change, matches: Selector) -> tuple[str, dict[str, Any]] | None:
    """The event a change makes in a watch filtered by ``matches``, if any."""
    now = matches(change.object)
    before = change.old is not None and matches(change.old)
    if change.type == "DELETED":
        return ("DELETED", change.object) if now or before else None
    if change.type == "ADDED":
        return ("ADDED", change.object) if now else None
    if now:
        return ("MODIFIED" if before else "ADDED", change.object)
    return ("DELETED", change.object) if before else None


def _line(event_type: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": event_type, "object": obj}).encode() + b"\n"


def _bookmark(rt: ResourceType, revision: int, initial_end: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"resourceVersion": str(revision)}
    if initial_end:
        metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
    return {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": metadata}


async def serve_watch(
    request: web.Request, cluster: Cluster, watches: Watches, wanted: WatchRequest, render: Render
) -> web.StreamResponse:
    labels, fields = label_selector(wanted.labels), field_selector(wanted.fields)
    loop, queue = asyncio.get_running_loop(), watches.open()

    def deliver(change: Change) -> None:  # every change: each one moves the bookmarks on
        loop.call_soon_threadsafe(queue.put_nowait, change)

    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    await response.prepare(request)
    try:
        unsubscribe, initial, revision = _subscribe(cluster, wanted, deliver)
    except ApiError as error:
        watches.close(queue)
        await response.write(_line("ERROR", error.status()))
        return response
    try:
        await _stream(
            response,
            queue,
            wanted,
            initial,
            revision,
            render,
            lambda c: changed_event(c, lambda o: labels(o) and fields(o)),
            watches.bookmark_interval,
        )
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        unsubscribe()
        watches.close(queue)
    return response


def _subscribe(
    cluster: Cluster, wanted: WatchRequest, deliver: Callable[[Change], None]
) -> tuple[Callable[[], None], list[dict[str, Any]], int]:
    """Subscribe and read what comes before live events, atomically."""
    rt, version = wanted.type, wanted.resource_version
    with cluster.store.locked():
        if version in (None, "", "0") or wanted.send_initial:
            initial, revision = cluster.query(rt, wanted.namespace, wanted.labels, wanted.fields)
            return cluster.store.subscribe(deliver), initial, revision
        if not version.isdigit():
            raise bad_request(f"invalid resource version {version!r}")
        return cluster.store.watch(int(version), deliver), [], int(version)


async def _stream(
    response: web.StreamResponse,
    queue: asyncio.Queue[Change | None],
    wanted: WatchRequest,
    initial: list[dict[str, Any]],
    revision: int,
    render: Render,
    event_of: Callable[[Change], tuple[str, dict[str, Any]] | None],
    interval: float,
) -> None:
    rt, loop, seen = wanted.type, asyncio.get_running_loop(), revision
    for obj in initial:
        await response.write(_line("ADDED", render(obj)))
    if wanted.send_initial and wanted.bookmarks:
        await response.write(_line("BOOKMARK", _bookmark(rt, revision, initial_end=True)))
    deadline = loop.time() + wanted.timeout
    while (remaining := deadline - loop.time()) > 0:
        wait = min(remaining, interval) if wanted.bookmarks else remaining
        try:
            change = await asyncio.wait_for(queue.get(), wait)
        except TimeoutError:
            if wanted.bookmarks:
                await response.write(_line("BOOKMARK", _bookmark(rt, seen)))
            continue
        if change is None:
            return
        seen = change.revision
        if change.resource != rt.group_resource or wanted.namespace not in (None, change.namespace):
            continue
        event = event_of(change)
        if event is not None:
            obj = {**event[1], "apiVersion": rt.api_version}
            await response.write(_line(event[0], render(obj)))
