"""The emulated API server over real HTTP: CRUD, conflicts, patches, selectors, CRDs,
status and scale subresources, finalizers, garbage collection, and the asyncio client."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import ClientSession
from kube_api import KubeApiServer, running_kube_api
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.config import new_client_from_config

JSON = "application/json"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "shortNames": ["wd"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.size",
                        "statusReplicasPath": ".status.size",
                    },
                },
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "integer", "minimum": 1},
                                    "color": {"type": "string", "default": "blue"},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "phase": {"type": "string"},
                                    "size": {"type": "integer"},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


class Api:
    """JSON over HTTP to the server: ``await api.call("GET", path)`` → (status, body)."""

    def __init__(self, session: ClientSession, url: str) -> None:
        self.session, self.url = session, url

    async def call(
        self, method: str, path: str, body: Any = None, content_type: str = JSON
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body)
        async with self.session.request(
            method, self.url + path, data=data, headers={"Content-Type": content_type}
        ) as response:
            return response.status, await response.json()

    async def ok(
        self, method: str, path: str, body: Any = None, content_type: str = JSON
    ) -> dict[str, Any]:
        status, answer = await self.call(method, path, body, content_type)
        assert status in (200, 201), answer
        assert isinstance(answer, dict)
        return answer


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiServer]:
    with running_kube_api(tmp_path_factory.mktemp("kube") / "kubeconfig") as server:
        server.cluster.create_object(WIDGET_CRD)
        yield server


@pytest_asyncio.fixture
async def api(kube: KubeApiServer) -> AsyncIterator[Api]:
    async with ClientSession() as session:
        yield Api(session, kube.url)


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


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
