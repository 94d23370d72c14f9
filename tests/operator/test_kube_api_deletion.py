"""The emulated API server over real HTTP, deleting: finalizers, garbage collection of
dependents (background, foreground, orphan), a StatefulSet's claims under its retention
policy, and deleting namespaces and CRDs with their objects."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import ClientSession
from kube_api import KubeApiServer, running_kube_api
from kube_api_rest_client import (
    CONFIGMAPS,
    MERGE,
    WIDGET_CRD,
    Api,
    configmap,
    fresh,
)
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.config import new_client_from_config


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiServer]:
    with running_kube_api(tmp_path_factory.mktemp("kube") / "kubeconfig") as server:
        server.cluster.create_object(WIDGET_CRD)
        yield server


@pytest_asyncio.fixture
async def api(kube: KubeApiServer) -> AsyncIterator[Api]:
    async with ClientSession() as session:
        yield Api(session, kube.url)


async def test_finalizers_hold_a_deleted_object(api: Api) -> None:
    name = fresh("cm")
    body = {**configmap(name), "metadata": {"name": name, "finalizers": ["example.com/hold"]}}
    await api.ok("POST", CONFIGMAPS, body)
    held = await api.ok("DELETE", f"{CONFIGMAPS}/{name}")
    assert held["metadata"]["deletionTimestamp"]
    assert (await api.ok("GET", f"{CONFIGMAPS}/{name}"))["metadata"]["finalizers"] == [
        "example.com/hold"
    ]
    status, added = await api.call(
        "PATCH",
        f"{CONFIGMAPS}/{name}",
        {"metadata": {"finalizers": ["a", "example.com/hold"]}},
        MERGE,
    )
    assert (status, added["reason"]) == (422, "Invalid")
    await api.ok("PATCH", f"{CONFIGMAPS}/{name}", {"metadata": {"finalizers": None}}, MERGE)
    status, _ = await api.call("GET", f"{CONFIGMAPS}/{name}")
    assert status == 404


async def test_deleting_an_owner_collects_its_dependents(api: Api) -> None:
    owner = await api.ok("POST", CONFIGMAPS, configmap(fresh("owner")))
    other = await api.ok("POST", CONFIGMAPS, configmap(fresh("other")))

    def ref(obj: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"],
        }

    async def dependent(*owners: dict[str, Any]) -> str:
        name = fresh("dep")
        await api.ok(
            "POST",
            "/api/v1/namespaces/default/secrets",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "ownerReferences": [ref(o) for o in owners]},
            },
        )
        return name

    only, shared = await dependent(owner), await dependent(owner, other)
    answer = await api.ok("DELETE", f"{CONFIGMAPS}/{owner['metadata']['name']}")
    assert answer["kind"] == "Status"
    assert answer["status"] == "Success"
    status, _ = await api.call("GET", f"/api/v1/namespaces/default/secrets/{only}")
    assert status == 404
    kept = await api.ok("GET", f"/api/v1/namespaces/default/secrets/{shared}")
    assert [r["uid"] for r in kept["metadata"]["ownerReferences"]] == [other["metadata"]["uid"]]


async def test_foreground_and_orphan_propagation(api: Api) -> None:
    owner = await api.ok("POST", CONFIGMAPS, configmap(fresh("owner")))
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
    held = fresh("held")
    await api.ok(
        "POST",
        CONFIGMAPS,
        {
            **configmap(held),
            "metadata": {
                "name": held,
                "ownerReferences": [ref],
                "finalizers": ["example.com/hold"],
            },
        },
    )
    path = f"{CONFIGMAPS}/{owner['metadata']['name']}"
    waiting = await api.ok("DELETE", path, {"propagationPolicy": "Foreground"})
    assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert (await api.ok("GET", f"{CONFIGMAPS}/{held}"))["metadata"]["deletionTimestamp"]
    await api.ok("PATCH", f"{CONFIGMAPS}/{held}", {"metadata": {"finalizers": []}}, MERGE)
    assert (await api.call("GET", path))[0] == 404

    owner = await api.ok("POST", CONFIGMAPS, configmap(fresh("owner")))
    orphan = fresh("orphan")
    await api.ok(
        "POST",
        CONFIGMAPS,
        {
            **configmap(orphan),
            "metadata": {
                "name": orphan,
                "ownerReferences": [
                    {**ref, "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}
                ],
            },
        },
    )
    await api.ok("DELETE", f"{CONFIGMAPS}/{owner['metadata']['name']}?propagationPolicy=Orphan")
    assert "ownerReferences" not in (await api.ok("GET", f"{CONFIGMAPS}/{orphan}"))["metadata"]


@pytest.mark.parametrize(("when_deleted", "kept"), [("Retain", True), ("Delete", False)])
async def test_a_statefulsets_claims_follow_its_retention_policy(
    api: Api, when_deleted: str, kept: bool
) -> None:
    """Under ``whenDeleted: Delete`` the set's claims go with it, as the StatefulSet
    controller and the garbage collector do; under ``Retain`` they stay. Claims of another
    set, or not named for one of its pods, stay either way."""
    base = "/apis/apps/v1/namespaces/default/statefulsets"
    claims = "/api/v1/namespaces/default/persistentvolumeclaims"
    name = fresh("set")
    statefulset = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
            "volumeClaimTemplates": [{"metadata": {"name": "data"}}],
            "persistentVolumeClaimRetentionPolicy": {
                "whenDeleted": when_deleted,
                "whenScaled": "Retain",
            },
        },
    }
    await api.ok("POST", base, statefulset)
    mine, others = [f"data-{name}-0", f"data-{name}-1"], [f"data-{name}x-0", f"data-{name}-a"]
    for claim in mine + others:
        body = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1"}}},
        }
        await api.ok("POST", claims, body)
    await api.ok("DELETE", f"{base}/{name}")
    for claim in mine:
        assert (await api.call("GET", f"{claims}/{claim}"))[0] == (200 if kept else 404)
    for claim in others:
        assert (await api.call("GET", f"{claims}/{claim}"))[0] == 200


async def test_deleting_a_namespace_deletes_its_objects(api: Api) -> None:
    space = fresh("ns")
    await api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": space}})
    await api.ok("POST", f"/api/v1/namespaces/{space}/configmaps", configmap("x"))
    await api.ok("DELETE", f"/api/v1/namespaces/{space}")
    assert (await api.call("GET", f"/api/v1/namespaces/{space}"))[0] == 404
    assert (await api.call("GET", f"/api/v1/namespaces/{space}/configmaps/x"))[0] == 404


async def test_the_asyncio_client_works(kube: KubeApiServer) -> None:
    name = fresh("cm")
    async with await new_client_from_config(config_file=str(kube.kubeconfig)) as client:
        core = k8s.CoreV1Api(client)
        await core.create_namespaced_config_map(
            "default", k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name=name), data={"a": "1"})
        )
        await core.patch_namespaced_config_map(name, "default", {"data": {"b": "2"}})
        read = await core.read_namespaced_config_map(name, "default")
        assert read.data == {"a": "1", "b": "2"}
        listed = await core.list_namespaced_config_map(
            "default", field_selector=f"metadata.name={name}"
        )
        assert [c.metadata.name for c in listed.items] == [name]
        custom = k8s.CustomObjectsApi(client)
        widget = {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": name},
            "spec": {"size": 2},
        }
        await custom.create_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", widget
        )
        got = await custom.get_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", name
        )
        assert got["spec"] == {"size": 2, "color": "blue"}
        with pytest.raises(k8s.ApiException) as refused:
            await core.read_namespaced_config_map(fresh("missing"), "default")
        assert refused.value.status == 404


async def test_deleting_a_crd_deletes_its_objects_and_stops_serving_it(
    kube: KubeApiServer, api: Api
) -> None:
    crd = json.loads(json.dumps(WIDGET_CRD).replace("widget", "doodad").replace("Widget", "Doodad"))
    crd["spec"]["names"]["shortNames"] = ["dd"]
    await api.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    doodads = "/apis/example.com/v1/namespaces/default/doodads"
    body = {"apiVersion": "example.com/v1", "kind": "Doodad", "metadata": {"name": "d"}}
    await api.ok("POST", doodads, {**body, "spec": {"size": 1}})
    changes, stop = kube.cluster.changes()
    try:
        await api.ok(
            "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/doodads.example.com"
        )
    finally:
        stop()
    assert (await api.call("GET", doodads))[0] == 404
    assert [(c.type, c.resource, c.object["metadata"]["name"]) for c in changes] == [
        ("MODIFIED", ("apiextensions.k8s.io", "customresourcedefinitions"), "doodads.example.com"),
        ("DELETED", ("example.com", "doodads"), "d"),
        ("DELETED", ("apiextensions.k8s.io", "customresourcedefinitions"), "doodads.example.com"),
    ]
