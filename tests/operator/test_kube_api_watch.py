"""Watches of the emulated API server over real HTTP: resumed from a list's
resourceVersion they miss nothing written meanwhile, bookmarks, selectors, 410 Gone."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import ClientSession
from kube_api import KubeApiServer, running_kube_api

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiServer]:
    with running_kube_api(
        tmp_path_factory.mktemp("kube") / "kubeconfig", bookmark_interval=0.2
    ) as server:
        yield server


@pytest_asyncio.fixture
async def session() -> AsyncIterator[ClientSession]:
    async with ClientSession() as session:
        yield session


def configmap(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}},
        "data": {"n": "0"},
    }


async def events(
    session: ClientSession, url: str, stop: int | None = None, until: str = ""
) -> list[dict[str, Any]]:
    """The events of one watch request: all of them until the server ends it, or the
    first ``stop`` events, or those up to the first of type ``until``."""
    seen: list[dict[str, Any]] = []
    async with session.get(url) as response:
        assert response.status == 200
        async for line in response.content:
            seen.append(json.loads(line))
            if len(seen) == stop or seen[-1]["type"] == until:
                break
    return seen


async def test_a_watch_from_a_list_misses_nothing_written_meanwhile(
    kube: KubeApiServer, session: ClientSession
) -> None:
    """A writer in another thread keeps going while the test lists, then watches from the
    list's resourceVersion: every write after the list arrives, once, in order."""
    tag, writes = uuid.uuid4().hex[:8], 300
    cluster = kube.cluster
    started, listing = threading.Event(), threading.Event()

    def writer() -> None:
        for i in range(writes):
            name = f"{tag}-{i % 10}"
            if cluster.find_object("configmaps", name) is None:
                cluster.create_object({**configmap(name), "metadata": {"name": name}})
            else:
                cluster.patch_object("configmaps", name, {"data": {"n": str(i)}})
            if i == writes // 3:
                started.set()
                listing.wait(30)  # the rest is written while the list is served, and after

    thread = threading.Thread(target=writer)
    thread.start()
    await asyncio.to_thread(started.wait, 30)
    async with session.get(kube.url + CONFIGMAPS) as response:
        listing.set()
        since = (await response.json())["metadata"]["resourceVersion"]
    await asyncio.to_thread(thread.join, 60)
    assert int(since) < cluster.store.revision
    last = str(cluster.store.revision)
    url = f"{kube.url}{CONFIGMAPS}?watch=true&resourceVersion={since}"
    got: list[dict[str, Any]] = []
    async with asyncio.timeout(60), session.get(url) as response:
        async for line in response.content:
            got.append(json.loads(line))
            if got[-1]["object"]["metadata"]["resourceVersion"] == last:
                break
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in got]
    assert versions == list(range(int(since) + 1, int(last) + 1))
    assert {e["type"] for e in got} <= {"ADDED", "MODIFIED"}


async def test_a_watch_streams_live_changes_then_times_out(
    kube: KubeApiServer, session: ClientSession
) -> None:
    name = f"live-{uuid.uuid4().hex[:8]}"
    since = kube.cluster.store.revision
    url = (
        f"{kube.url}{CONFIGMAPS}?watch=true&resourceVersion={since}&timeoutSeconds=2"
        f"&fieldSelector=metadata.name={name}"
    )
    watching = asyncio.create_task(events(session, url))
    await asyncio.sleep(0.2)
    cluster = kube.cluster
    await asyncio.to_thread(cluster.create_object, configmap(name))
    await asyncio.to_thread(cluster.patch_object, "configmaps", name, {"data": {"n": "1"}})
    await asyncio.to_thread(cluster.delete_object, "configmaps", name)
    seen = await watching  # the server ends the stream after timeoutSeconds
    assert [e["type"] for e in seen] == ["ADDED", "MODIFIED", "DELETED"]
    assert seen[1]["object"]["data"] == {"n": "1"}
    assert seen[0]["object"]["kind"] == "ConfigMap"


async def test_bookmarks_carry_the_latest_resource_version(
    kube: KubeApiServer, session: ClientSession
) -> None:
    since = kube.cluster.store.revision
    url = (
        f"{kube.url}/api/v1/namespaces/default/secrets?watch=true&resourceVersion={since}"
        "&allowWatchBookmarks=true"
    )
    await asyncio.to_thread(kube.cluster.create_object, configmap(f"bm-{uuid.uuid4().hex[:8]}"))
    seen = await events(session, url, until="BOOKMARK")
    assert [e["type"] for e in seen] == ["BOOKMARK"]
    assert int(seen[0]["object"]["metadata"]["resourceVersion"]) == since + 1
    assert seen[0]["object"]["kind"] == "Secret"


async def test_initial_events_end_with_a_bookmark(
    kube: KubeApiServer, session: ClientSession
) -> None:
    url = (
        f"{kube.url}/api/v1/namespaces?watch=true&sendInitialEvents=true"
        "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    )
    seen = await events(session, url, until="BOOKMARK")
    assert {"default", "kube-system"} <= {e["object"]["metadata"]["name"] for e in seen[:-1]}
    assert {e["type"] for e in seen[:-1]} == {"ADDED"}
    assert seen[-1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_objects_leaving_a_selector_are_reported_deleted(
    kube: KubeApiServer, session: ClientSession
) -> None:
    tag = uuid.uuid4().hex[:8]
    since = kube.cluster.store.revision
    url = f"{kube.url}/api/v1/configmaps?watch=true&resourceVersion={since}&labelSelector=t={tag}"
    cluster = kube.cluster
    await asyncio.to_thread(cluster.create_object, configmap(f"{tag}-a", {"t": tag}))
    await asyncio.to_thread(cluster.create_object, configmap(f"{tag}-b"))
    await asyncio.to_thread(
        cluster.patch_object, "configmaps", f"{tag}-b", {"metadata": {"labels": {"t": tag}}}
    )
    await asyncio.to_thread(
        cluster.patch_object, "configmaps", f"{tag}-a", {"metadata": {"labels": {"t": "other"}}}
    )
    seen = await events(session, url, stop=3)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen] == [
        ("ADDED", f"{tag}-a"),
        ("ADDED", f"{tag}-b"),
        ("DELETED", f"{tag}-a"),
    ]


async def test_a_compacted_resource_version_is_gone(
    kube: KubeApiServer, session: ClientSession
) -> None:
    since = kube.cluster.store.revision
    await asyncio.to_thread(kube.cluster.create_object, configmap(f"gc-{uuid.uuid4().hex[:8]}"))
    kube.cluster.store.compact()
    seen = await events(session, f"{kube.url}{CONFIGMAPS}?watch=true&resourceVersion={since}")
    assert [e["type"] for e in seen] == ["ERROR"]
    assert seen[0]["object"]["code"] == 410
    assert seen[0]["object"]["reason"] == "Expired"
