"""Discovery and OpenAPI documents of the emulated server, built from its catalog.

- ``/version``, ``/api``, ``/api/v1``, ``/apis``, ``/apis/<group>``, ``/apis/<g>/<v>``:
  the legacy discovery documents (kubectl asks for the aggregated form first and, answered
  the legacy form, uses that; kopf reads only these).
- ``/openapi/v3`` and ``/openapi/v3/<api|apis/g>/<v>``: one document per group-version,
  with a ``get`` and ``patch`` path per kind (the ``patch`` naming ``fieldValidation``
  among its parameters, which tells kubectl the server validates fields itself) and the
  kinds' schemas under ``components.schemas``: built-in ones from the 1.32 definitions
  (``x-kubernetes-patch-merge-key`` and all, which kubectl's strategic merge needs), custom
  ones from their CRD. ``/openapi/v2`` is not served (kubectl 1.32 prefers v3).
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from kube_api_builtin_schema import KUBERNETES_VERSION, BuiltinSchemas
from kube_api_cluster import PATCH_TYPES
from kube_api_resources import Catalog, ResourceType

__all__ = [
    "api_group",
    "api_groups",
    "api_resources",
    "api_versions",
    "openapi_document",
    "openapi_index",
    "version_info",
]

_MAJOR, _MINOR, _PATCH = KUBERNETES_VERSION.split(".")


def version_info() -> dict[str, str]:
    return {
        "major": _MAJOR,
        "minor": _MINOR,
        "gitVersion": f"v{KUBERNETES_VERSION}",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2024-12-11T00:00:00Z",
        "goVersion": "go1.23.4",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def api_group(name: str, versions: list[str]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": name,
        "versions": listed,
        "preferredVersion": listed[0],
    }


def api_groups(catalog: Catalog) -> dict[str, Any]:
    groups = [api_group(g, v) for g, v in catalog.groups().items() if g]
    for group in groups:
        del group["kind"], group["apiVersion"]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_resources(catalog: Catalog, group: str, version: str) -> dict[str, Any] | None:
    types = catalog.in_group_version(group, version)
    if not types:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": [entry for rt in types for entry in rt.discovery()],
    }


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_index(catalog: Catalog, schemas: BuiltinSchemas) -> dict[str, Any]:
    paths = {}
    for group, versions in catalog.groups().items():
        for version in versions:
            document = openapi_document(catalog, schemas, group, version)
            digest = hashlib.sha512(json.dumps(document, sort_keys=True).encode()).hexdigest()
            path = _gv_path(group, version)
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest.upper()}"}
    return {"paths": paths}


def _custom_name(rt: ResourceType) -> str:
    return ".".join([*reversed(rt.group.split(".")), rt.version, rt.kind])


def _custom_schema(rt: ResourceType) -> dict[str, Any]:
    schema: dict[str, Any] = copy.deepcopy(rt.schema or {})
    properties = schema.setdefault("properties", {})
    properties.setdefault("apiVersion", {"type": "string"})
    properties.setdefault("kind", {"type": "string"})
    properties["metadata"] = {
        "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
    }
    schema["x-kubernetes-group-version-kind"] = [
        {"group": rt.group, "version": rt.version, "kind": rt.kind}
    ]
    return schema


def _operations(rt: ResourceType, schema_name: str) -> dict[str, Any]:
    gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    body = {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema_name}"}}}
    answer = {"200": {"description": "OK", "content": body}}
    query = [
        {"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
        for n in ("dryRun", "fieldManager", "fieldValidation", "force")
    ]
    # kubectl computes a strategic merge patch only where the path accepts one
    accepted = [t for t in PATCH_TYPES if rt.builtin or PATCH_TYPES[t] != "strategic"]
    patch_body = {"content": {t: {"schema": {"type": "object"}} for t in accepted}}
    return {
        "get": {
            "operationId": f"read{rt.kind}",
            "x-kubernetes-action": "get",
            "x-kubernetes-group-version-kind": gvk,
            "responses": answer,
        },
        "patch": {
            "operationId": f"patch{rt.kind}",
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": gvk,
            "parameters": query,
            "requestBody": patch_body,
            "responses": answer,
        },
    }


def _path(rt: ResourceType) -> str:
    where = "/namespaces/{namespace}" if rt.namespaced else ""
    return f"/{_gv_path(rt.group, rt.version)}{where}/{rt.plural}/{{name}}"


def openapi_document(
    catalog: Catalog, schemas: BuiltinSchemas, group: str, version: str
) -> dict[str, Any] | None:
    """The OpenAPI v3 document of one group-version (None if nothing is served there)."""
    types = catalog.in_group_version(group, version)
    if not types:
        return None
    paths, components, builtin_roots = {}, {}, ["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
    for rt in types:
        name = schemas.definition_name(rt.group, rt.version, rt.kind) if rt.builtin else None
        if name is not None:
            builtin_roots.append(name)
        else:
            name = _custom_name(rt)
            components[name] = _custom_schema(rt)
        paths[_path(rt)] = _operations(rt, name)
    components |= schemas.openapi_components(builtin_roots)
    info = {"title": "Kubernetes", "version": f"v{KUBERNETES_VERSION}"}
    return {"openapi": "3.0.0", "info": info, "paths": paths, "components": {"schemas": components}}
