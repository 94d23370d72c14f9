"""The emulated API server's HTTP face (aiohttp): paths and verbs to cluster operations.

Resource paths, for the core group (``/api/v1``) and named groups (``/apis/<g>/<v>``)::

    GET|POST|DELETE  /<gv>/<plural>                        (all namespaces / cluster scope)
    GET|POST|DELETE  /<gv>/namespaces/<ns>/<plural>
    GET|PUT|PATCH|DELETE  /<gv>[/namespaces/<ns>]/<plural>/<name>[/status|/scale]

GET of a collection lists or, with ``watch=true``, watches (``kube_api_watch``). Query
parameters honoured: ``labelSelector``, ``fieldSelector``, ``resourceVersion``,
``timeoutSeconds``, ``allowWatchBookmarks``, ``sendInitialEvents``, ``dryRun``,
``fieldValidation``, ``propagationPolicy``; ``limit`` and ``continue`` are ignored (one
page). Bodies are JSON, YAML, or protobuf for Secrets and ConfigMaps (``kube_api_protobuf``:
Helm's release storage). ``Accept: ...;as=Table`` gets a Table,
``as=PartialObjectMetadata[List]`` metadata only; everything else is JSON. A wrong bearer
token is refused (401); none at all is let in, as on an insecure port: kubectl sends no
token over plain HTTP.
Warnings (pruned unknown fields) go out as ``Warning: 299 - "..."`` headers.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import kube_api_discovery as discovery
import kube_api_protobuf as protobuf
import yaml
from aiohttp import web
from kube_api_cluster import Cluster, Outcome
from kube_api_errors import ApiError, bad_request, method_not_allowed, not_found, unauthorized
from kube_api_resources import ResourceType
from kube_api_table import table
from kube_api_watch import Watches, WatchRequest, serve_watch

__all__ = ["make_app"]

_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_SUBRESOURCES = ("status", "scale")


def _json(body: Any, status: int = 200, warnings: list[str] | None = None) -> web.Response:
    response = web.Response(text=json.dumps(body), status=status, content_type="application/json")
    for warning in warnings or []:
        response.headers.add("Warning", f'299 - "{warning}"')
    return response


def _error(error: ApiError) -> web.Response:
    return _json(error.status(), error.code)


async def _body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw:
        return {}
    try:
        if request.content_type == protobuf.MEDIA_TYPE:
            return protobuf.decode(raw)
        if "yaml" in request.content_type:
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as error:
        raise bad_request(f"the request body is not valid: {error}") from error


def _accepts(request: web.Request, what: str) -> bool:
    return f"as={what}" in request.headers.get("Accept", "").replace(" ", "")


class _Routes:
    """Request handling for one server."""

    def __init__(self, cluster: Cluster, watches: Watches, token: str | None) -> None:
        self.cluster, self.watches, self.token = cluster, watches, token

    @web.middleware
    async def middleware(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        try:
            offered = request.headers.get("Authorization")
            if self.token and offered is not None and offered != f"Bearer {self.token}":
                raise unauthorized()
            return await handler(request)
        except ApiError as error:
            return _error(error)

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        fixed = self._fixed(request, parts)
        if fixed is not None:
            return fixed
        if parts[:1] == ["api"] and len(parts) >= 3:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
            namespace, rest = rest[1], rest[2:]
        if len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        rt = self.cluster.resolve(group, version, rest[0])
        name = rest[1] if len(rest) > 1 else ""
        subresource = rest[2] if len(rest) > 2 else ""
        if subresource and subresource not in rt.subresources():
            raise not_found(f"{rt.plural}/{subresource}", rt.group, name)
        if name:
            return await self._item(request, rt, namespace, name, subresource)
        return await self._collection(request, rt, namespace or None)

    def _fixed(self, request: web.Request, parts: list[str]) -> web.Response | None:
        """The documents at fixed paths (version, discovery, OpenAPI, health)."""
        catalog, path = self.cluster.catalog, "/".join(parts)
        if request.method != "GET":
            return None
        if path in ("healthz", "readyz", "livez"):
            return web.Response(text="ok")
        if path == "version":
            return _json(discovery.version_info())
        if path == "api":
            return _json(discovery.api_versions(f"{request.host}"))
        if path == "apis":
            return _json(discovery.api_groups(catalog))
        if path == "openapi/v3":
            return _json(discovery.openapi_index(catalog, self.cluster.builtin_schemas))
        if parts[:2] == ["openapi", "v3"]:
            group, version = (parts[3], parts[4]) if parts[2] == "apis" else ("", parts[3])
            doc = discovery.openapi_document(catalog, self.cluster.builtin_schemas, group, version)
            return _json(doc) if doc else None
        if parts[:1] == ["apis"] and len(parts) == 2:
            versions = catalog.groups().get(parts[1])
            return _json(discovery.api_group(parts[1], versions)) if versions else None
        if (len(parts) == 2 and parts[0] == "api") or (len(parts) == 3 and parts[0] == "apis"):
            group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
            listed = discovery.api_resources(catalog, group, version)
            return _json(listed) if listed else None
        return None

    async def _collection(
        self, request: web.Request, rt: ResourceType, namespace: str | None
    ) -> web.StreamResponse:
        query = request.query
        if request.method == "GET" and query.get("watch") in ("true", "1"):
            wanted = WatchRequest(
                rt,
                namespace,
                query.get("labelSelector"),
                query.get("fieldSelector"),
                query.get("resourceVersion"),
                query.get("sendInitialEvents") == "true",
                query.get("allowWatchBookmarks") == "true",
                float(query.get("timeoutSeconds") or self.watches.default_timeout),
            )
            return await serve_watch(
                request,
                self.cluster,
                self.watches,
                wanted,
                lambda obj: self._render_one(request, rt, obj),
            )
        if request.method == "GET":
            items, revision = self.cluster.query(
                rt, namespace, query.get("labelSelector"), query.get("fieldSelector")
            )
            return _json(self._render_list(request, rt, items, revision))
        if request.method == "POST" and (namespace or not rt.namespaced):
            outcome = self.cluster.create(
                rt, namespace or "", await _body(request), **self._write_options(request)
            )
            return _json(outcome.object, 201, outcome.warnings)
        if request.method == "DELETE":
            deleted = self.cluster.delete_collection(
                rt,
                namespace,
                query.get("labelSelector"),
                query.get("fieldSelector"),
                self._delete_options(request, await _body(request)),
            )
            return _json(self._render_list(request, rt, deleted, self.cluster.store.revision))
        raise method_not_allowed()

    async def _item(
        self, request: web.Request, rt: ResourceType, namespace: str, name: str, subresource: str
    ) -> web.Response:
        method, cluster = request.method, self.cluster
        if method == "GET":
            obj = cluster.read(rt, namespace, name, subresource)
            return _json(self._render_one(request, rt, obj) if not subresource else obj)
        if method == "DELETE" and not subresource:
            options = self._delete_options(request, await _body(request))
            return _json(cluster.delete(rt, namespace, name, options))
        if method == "PUT":
            outcome = cluster.update(
                rt,
                namespace,
                name,
                await _body(request),
                subresource=subresource,
                **self._write_options(request),
            )
        elif method == "PATCH":
            outcome = cluster.patch(
                rt,
                namespace,
                name,
                request.content_type,
                await request.read(),
                subresource=subresource,
                **self._write_options(request),
            )
        else:
            raise method_not_allowed()
        return self._written(rt, outcome, subresource, name, namespace)

    def _written(
        self, rt: ResourceType, outcome: Outcome, subresource: str, name: str, namespace: str
    ) -> web.Response:
        body = outcome.object
        if subresource == "scale":
            body = self.cluster.read(rt, namespace, name, "scale")
        return _json(body, 201 if outcome.created else 200, outcome.warnings)

    @staticmethod
    def _write_options(request: web.Request) -> dict[str, Any]:
        return {
            "dry_run": request.query.get("dryRun") == "All",
            "validation": request.query.get("fieldValidation", "Warn"),
        }

    @staticmethod
    def _delete_options(request: web.Request, body: Any) -> dict[str, Any]:
        options = dict(body) if isinstance(body, dict) else {}
        if "propagationPolicy" in request.query:
            options["propagationPolicy"] = request.query["propagationPolicy"]
        if request.query.get("dryRun") == "All":
            options["dryRun"] = ["All"]
        return options

    def _render_one(
        self, request: web.Request, rt: ResourceType, obj: dict[str, Any]
    ) -> dict[str, Any]:
        if _accepts(request, "Table"):
            revision = obj["metadata"].get("resourceVersion", "")
            return table(rt, [obj], revision, self.cluster.now)
        if _accepts(request, "PartialObjectMetadata"):
            return {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj["metadata"],
            }
        return obj

    def _render_list(
        self, request: web.Request, rt: ResourceType, items: list[dict[str, Any]], revision: int
    ) -> dict[str, Any]:
        if _accepts(request, "Table"):
            return table(rt, items, str(revision), self.cluster.now)
        if _accepts(request, "PartialObjectMetadataList"):
            return {
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": str(revision)},
                "items": [
                    {
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": o["metadata"],
                    }
                    for o in items
                ],
            }
        return {
            "kind": f"{rt.kind}List",
            "apiVersion": rt.api_version,
            "metadata": {"resourceVersion": str(revision)},
            "items": items,
        }


def make_app(cluster: Cluster, watches: Watches, token: str | None) -> web.Application:
    """The aiohttp application serving ``cluster``."""
    routes = _Routes(cluster, watches, token)
    app = web.Application(middlewares=[routes.middleware], client_max_size=16 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", routes.dispatch)
    return app
