"""The emulated API server over real HTTP: CRUD, conflicts, patches, selectors, CRDs,
status and scale subresources, and the asyncio client (deletion: test_kube_api_deletion.py)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from aiohttp import ClientSession
from kube_api import KubeApiServer, running_kube_api
from kube_api_rest_client import (
    CONFIGMAPS,
    JSON_PATCH,
    MERGE,
    STRATEGIC,
    WIDGET_CRD,
    WIDGETS,
    Api,
    configmap,
    fresh,
)


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiServer]:
    with running_kube_api(tmp_path_factory.mktemp("kube") / "kubeconfig") as server:
        server.cluster.create_object(WIDGET_CRD)
        yield server


@pytest_asyncio.fixture
async def api(kube: KubeApiServer) -> AsyncIterator[Api]:
    async with ClientSession() as session:
        yield Api(session, kube.url)


async def test_objects_get_identity_and_versions(api: Api) -> None:
    name = fresh("cm")
    created = await api.ok("POST", CONFIGMAPS, configmap(name, a="1"))
    metadata = created["metadata"]
    assert metadata["namespace"] == "default"
    assert metadata["uid"]
    assert metadata["creationTimestamp"].endswith("Z")
    assert int(metadata["resourceVersion"]) > 0
    read = await api.ok("GET", f"{CONFIGMAPS}/{name}")
    assert read == created
    listed = await api.ok("GET", CONFIGMAPS)
    assert listed["kind"] == "ConfigMapList"
    assert listed["apiVersion"] == "v1"
    assert int(listed["metadata"]["resourceVersion"]) >= int(metadata["resourceVersion"])
    assert name in [item["metadata"]["name"] for item in listed["items"]]


async def test_errors_are_status_objects(api: Api) -> None:
    name = fresh("cm")
    status, missing = await api.call("GET", f"{CONFIGMAPS}/{name}")
    assert status == 404
    assert missing["kind"] == "Status"
    assert missing["reason"] == "NotFound"
    assert missing["message"] == f'configmaps "{name}" not found'
    await api.ok("POST", CONFIGMAPS, configmap(name))
    status, duplicate = await api.call("POST", CONFIGMAPS, configmap(name))
    assert (status, duplicate["reason"]) == (409, "AlreadyExists")
    status, nowhere = await api.call(
        "POST", "/api/v1/namespaces/nowhere/configmaps", configmap(name)
    )
    assert (status, nowhere["message"]) == (404, 'namespaces "nowhere" not found')


async def test_put_with_a_stale_resource_version_conflicts(api: Api) -> None:
    name = fresh("cm")
    first = await api.ok("POST", CONFIGMAPS, configmap(name, a="1"))
    second = await api.ok("PUT", f"{CONFIGMAPS}/{name}", {**first, "data": {"a": "2"}})
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    status, stale = await api.call("PUT", f"{CONFIGMAPS}/{name}", {**first, "data": {"a": "3"}})
    assert (status, stale["reason"]) == (409, "Conflict")
    assert (await api.ok("GET", f"{CONFIGMAPS}/{name}"))["data"] == {"a": "2"}


async def test_an_unchanged_write_keeps_the_resource_version(api: Api) -> None:
    name = fresh("cm")
    first = await api.ok("POST", CONFIGMAPS, configmap(name, a="1"))
    again = await api.ok("PATCH", f"{CONFIGMAPS}/{name}", {"data": {"a": "1"}}, MERGE)
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


async def test_merge_and_json_patches(api: Api) -> None:
    name = fresh("cm")
    created = await api.ok("POST", CONFIGMAPS, configmap(name, a="1", b="2"))
    merged = await api.ok("PATCH", f"{CONFIGMAPS}/{name}", {"data": {"a": None, "c": "3"}}, MERGE)
    assert merged["data"] == {"b": "2", "c": "3"}
    stale = [
        {
            "op": "test",
            "path": "/metadata/resourceVersion",
            "value": created["metadata"]["resourceVersion"],
        },
        {"op": "add", "path": "/data/d", "value": "4"},
    ]
    status, refused = await api.call("PATCH", f"{CONFIGMAPS}/{name}", stale, JSON_PATCH)
    assert status == 422, refused
    fresh_ops = [{**stale[0], "value": merged["metadata"]["resourceVersion"]}, stale[1]]
    patched = await api.ok("PATCH", f"{CONFIGMAPS}/{name}", fresh_ops, JSON_PATCH)
    assert patched["data"] == {"b": "2", "c": "3", "d": "4"}


async def test_strategic_merge_patch_merges_lists_by_their_keys(api: Api) -> None:
    name = fresh("web")
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "a",
                            "image": "a:1",
                            "env": [{"name": "X", "value": "1"}],
                            "ports": [{"containerPort": 80}],
                        },
                        {"name": "b", "image": "b:1"},
                    ]
                },
            },
        },
    }
    path = f"/apis/apps/v1/namespaces/default/statefulsets/{name}"
    created = await api.ok("POST", "/apis/apps/v1/namespaces/default/statefulsets", sts)
    assert created["spec"]["replicas"] == 1
    assert created["metadata"]["generation"] == 1
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "a",
                            "env": [{"name": "Y", "value": "2"}],
                            "ports": [{"containerPort": 81}],
                        },
                        {"name": "b", "$patch": "delete"},
                    ]
                }
            }
        }
    }
    patched = await api.ok("PATCH", path, patch, STRATEGIC)
    containers = patched["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["a"]
    assert containers[0]["image"] == "a:1"
    assert containers[0]["env"] == [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]
    assert containers[0]["ports"] == [{"containerPort": 80}, {"containerPort": 81}]
    assert patched["metadata"]["generation"] == 2


async def test_statefulset_status_and_scale_subresources(api: Api) -> None:
    name = fresh("web")
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": 3,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "a", "image": "a"}]},
            },
        },
        "status": {"replicas": 9},
    }
    path = f"/apis/apps/v1/namespaces/default/statefulsets/{name}"
    created = await api.ok("POST", "/apis/apps/v1/namespaces/default/statefulsets", sts)
    assert created["status"]["replicas"] == 0
    status = await api.ok(
        "PATCH", f"{path}/status", {"status": {"readyReplicas": 3, "replicas": 3}}, MERGE
    )
    assert status["status"]["readyReplicas"] == 3
    assert status["metadata"]["generation"] == 1
    ignored = await api.ok("PATCH", path, {"status": {"readyReplicas": 0}}, MERGE)
    assert ignored["status"]["readyReplicas"] == 3
    scale = await api.ok("GET", f"{path}/scale")
    assert scale["kind"] == "Scale"
    assert scale["spec"]["replicas"] == 3
    assert scale["status"] == {"replicas": 3, "selector": f"app={name}"}
    await api.ok("PATCH", f"{path}/scale", {"spec": {"replicas": 5}}, MERGE)
    scaled = await api.ok("GET", path)
    assert scaled["spec"]["replicas"] == 5
    assert scaled["metadata"]["generation"] == 2


async def test_label_and_field_selectors(api: Api) -> None:
    tag = fresh("t")
    for name, tier in (("a", "web"), ("b", "db"), ("c", None)):
        labels = {"run": tag, **({"tier": tier} if tier else {})}
        await api.ok(
            "POST",
            CONFIGMAPS,
            {**configmap(f"{tag}-{name}"), "metadata": {"name": f"{tag}-{name}", "labels": labels}},
        )

    async def names(query: str) -> list[str]:
        listed = await api.ok("GET", f"{CONFIGMAPS}?{query}")
        return [i["metadata"]["name"].removeprefix(f"{tag}-") for i in listed["items"]]

    assert await names(f"labelSelector=run={tag},tier=web") == ["a"]
    assert await names(f"labelSelector=run={tag},tier!=web") == ["b", "c"]
    assert await names(f"labelSelector=run={tag},tier in (web,db)") == ["a", "b"]
    assert await names(f"labelSelector=run={tag},tier notin (web)") == ["b", "c"]
    assert await names(f"labelSelector=run={tag},tier") == ["a", "b"]
    assert await names(f"labelSelector=run={tag},!tier") == ["c"]
    assert await names(f"fieldSelector=metadata.name={tag}-b") == ["b"]
    everywhere = await api.ok(
        "GET", f"/api/v1/configmaps?fieldSelector=metadata.namespace=default,metadata.name={tag}-c"
    )
    assert [i["metadata"]["name"] for i in everywhere["items"]] == [f"{tag}-c"]


async def test_discovery_lists_the_kinds(api: Api) -> None:
    assert (await api.ok("GET", "/version"))["major"] == "1"
    assert (await api.ok("GET", "/api"))["versions"] == ["v1"]
    core = await api.ok("GET", "/api/v1")
    names = {r["name"] for r in core["resources"]}
    assert {
        "namespaces",
        "pods",
        "services",
        "configmaps",
        "secrets",
        "events",
        "persistentvolumeclaims",
        "serviceaccounts",
    } <= names
    groups = {g["name"] for g in (await api.ok("GET", "/apis"))["groups"]}
    assert {
        "apps",
        "policy",
        "coordination.k8s.io",
        "events.k8s.io",
        "apiextensions.k8s.io",
        "example.com",
    } <= groups
    apps = await api.ok("GET", "/apis/apps/v1")
    assert {"statefulsets", "statefulsets/status", "statefulsets/scale"} <= {
        r["name"] for r in apps["resources"]
    }
    namespaces = await api.ok("GET", "/api/v1/namespaces")
    assert {"default", "kube-system"} <= {n["metadata"]["name"] for n in namespaces["items"]}


async def test_a_crd_is_served_once_created(api: Api) -> None:
    crd = json.loads(json.dumps(WIDGET_CRD).replace("widget", "gizmo").replace("Widget", "Gizmo"))
    crd["spec"]["names"]["shortNames"] = ["gz"]
    status, _ = await api.call("GET", "/apis/example.com/v1/namespaces/default/gizmos")
    assert status == 404
    created = await api.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    conditions = {c["type"]: c["status"] for c in created["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    served = await api.ok("GET", "/apis/example.com/v1")
    assert {"gizmos", "gizmos/status", "gizmos/scale"} <= {r["name"] for r in served["resources"]}
    listed = await api.ok("GET", "/apis/example.com/v1/namespaces/default/gizmos")
    assert listed["kind"] == "GizmoList"
    assert listed["items"] == []


async def test_custom_objects_are_pruned_defaulted_and_validated(api: Api) -> None:
    name = fresh("w")
    body = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": 1, "stray": True},
        "extra": 1,
    }
    created = await api.ok("POST", WIDGETS, body)
    assert created["spec"] == {"size": 1, "color": "blue"}
    assert "extra" not in created
    status, refused = await api.call("POST", WIDGETS, {**body, "spec": {"size": 0}})
    assert (status, refused["reason"]) == (422, "Invalid")
    assert refused["details"]["causes"][0]["field"] == "spec.size"
    assert "greater than or equal to 1" in refused["message"]
    status, missing = await api.call("POST", WIDGETS, {**body, "spec": {}})
    assert status == 422
    assert missing["details"]["causes"][0] == {
        "reason": "FieldValueRequired",
        "message": "Required value",
        "field": "spec.size",
    }
    status, strict = await api.call("POST", f"{WIDGETS}?fieldValidation=Strict", body)
    assert status == 400
    assert 'unknown field "spec.stray"' in strict["message"]


async def test_custom_status_subresource_and_generation(api: Api) -> None:
    name = fresh("w")
    body = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": 1},
        "status": {"phase": "Ignored"},
    }
    created = await api.ok("POST", WIDGETS, body)
    assert "status" not in created
    assert created["metadata"]["generation"] == 1
    ready = await api.ok(
        "PATCH",
        f"{WIDGETS}/{name}/status",
        {"status": {"phase": "Ready"}, "spec": {"size": 7}},
        MERGE,
    )
    assert ready["status"] == {"phase": "Ready"}
    assert ready["spec"]["size"] == 1
    assert ready["metadata"]["generation"] == 1
    labelled = await api.ok(
        "PATCH", f"{WIDGETS}/{name}", {"metadata": {"labels": {"a": "b"}}}, MERGE
    )
    assert labelled["metadata"]["generation"] == 1
    grown = await api.ok(
        "PATCH", f"{WIDGETS}/{name}", {"spec": {"size": 2}, "status": {"phase": "X"}}, MERGE
    )
    assert grown["metadata"]["generation"] == 2
    assert grown["status"] == {"phase": "Ready"}
    status, strategic = await api.call("PATCH", f"{WIDGETS}/{name}", {"spec": {}}, STRATEGIC)
    assert (status, strategic["reason"]) == (415, "UnsupportedMediaType")
