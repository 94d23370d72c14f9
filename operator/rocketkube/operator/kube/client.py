"""The operator's Kubernetes client: plain dicts in and out over the asyncio client's
connection (kubeconfig or in-cluster service account, TLS and token handled there).

Errors are :class:`ApiError` with the HTTP status and the server's ``Status`` reason, so
handlers can tell a conflict (409, retry with the fresh object) from a missing object
(404) from anything else (retry later with backoff).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from kubernetes_asyncio.client.api_client import ApiClient
from kubernetes_asyncio.client.rest import ApiException

from rocketkube.operator.kube import diff, paths

__all__ = ["ApiError", "Kube", "Obj"]

Obj = dict[str, Any]
"""A Kubernetes object as the API gives it (JSON)."""

MERGE_PATCH: Final = "application/merge-patch+json"
FIELD_MANAGER: Final = "rocketkube-operator"


class ApiError(Exception):
    """The API server refused a request."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        """409: a stale resourceVersion, or the object exists already."""
        return self.status == 409


def _error(code: int, reason: str, body: str) -> ApiError:
    """The server's ``Status`` (or whatever it answered) as an :class:`ApiError`."""
    try:
        status = json.loads(body or "{}")
    except ValueError:
        status = {}
    if not isinstance(status, dict):
        status = {}
    return ApiError(
        code,
        str(status.get("reason") or reason or ""),
        str(status.get("message") or body or ""),
    )


class Kube:
    """Typed access to the objects the operator owns; one per operator process."""

    def __init__(self, api: ApiClient) -> None:
        self._api = api

    async def _call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        try:
            response = await self._api.call_api(
                path,
                method,
                {},
                list((query or {}).items()),
                {"Accept": "application/json", "Content-Type": content_type},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
            )
        except ApiException as exc:
            raise _error(int(exc.status or 0), str(exc.reason or ""), str(exc.body or "")) from exc
        if not 200 <= response.status <= 299:  # unread content: the client raises nothing
            raise _error(response.status, str(response.reason or ""), await response.text())
        return await response.json()

    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> Obj | None:
        """The object, or None when there is none."""
        try:
            found: Obj = await self._call("GET", paths.item(api_version, kind, namespace, name))
        except ApiError as exc:
            if exc.not_found:
                return None
            raise
        return found

    async def serves(self, api_version: str, kind: str) -> bool:
        """Whether the API server serves ``kind`` of ``api_version`` (a CRD installed);
        any answer but the list or a 404 raises :class:`ApiError`, so a flaky server
        never reads as "not served"."""
        try:
            found = await self._call("GET", paths.group_version(api_version))
        except ApiError as exc:
            if exc.not_found:
                return False
            raise
        return any(resource.get("kind") == kind for resource in found.get("resources") or ())

    async def list(
        self, api_version: str, kind: str, namespace: str | None, labels: Mapping[str, str]
    ) -> list[Obj]:
        """Objects of ``kind`` in ``namespace`` (all: None) carrying all of ``labels``."""
        selector = ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
        query = {"labelSelector": selector} if selector else {}
        found = await self._call("GET", paths.collection(api_version, kind, namespace), query=query)
        items: list[Obj] = found.get("items", [])
        return items

    async def create(self, obj: Obj) -> Obj:
        meta = obj["metadata"]
        created: Obj = await self._call(
            "POST",
            paths.collection(obj["apiVersion"], obj["kind"], meta.get("namespace")),
            body=obj,
            query={"fieldManager": FIELD_MANAGER},
        )
        return created

    async def replace(self, obj: Obj) -> Obj:
        """PUT: ``obj`` must carry the resourceVersion it was read at (409 if stale)."""
        meta = obj["metadata"]
        replaced: Obj = await self._call(
            "PUT",
            paths.item(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"]),
            body=obj,
            query={"fieldManager": FIELD_MANAGER},
        )
        return replaced

    async def patch(
        self,
        api_version: str,
        kind: str,
        namespace: str,
        name: str,
        patch: Obj,
        *,
        subresource: str = "",
    ) -> Obj:
        """A JSON merge patch (of the ``status`` subresource when given)."""
        patched: Obj = await self._call(
            "PATCH",
            paths.item(api_version, kind, namespace, name, subresource),
            body=patch,
            content_type=MERGE_PATCH,
            query={"fieldManager": FIELD_MANAGER},
        )
        return patched

    async def delete(
        self, api_version: str, kind: str, namespace: str, name: str, *, orphan: bool = False
    ) -> bool:
        """Delete (its dependents in the background, or orphaned); False if it was gone."""
        body = {"propagationPolicy": "Orphan" if orphan else "Background"}
        try:
            await self._call("DELETE", paths.item(api_version, kind, namespace, name), body=body)
        except ApiError as exc:
            if exc.not_found:
                return False
            raise
        return True

    async def ensure(self, desired: Obj) -> tuple[Obj, bool]:
        """Create ``desired``, or bring the live object to it when it does not already
        hold every value ``desired`` states; the object and whether anything was written.
        Raises :class:`ApiError` (a 409 when someone else wrote it meanwhile: retry)."""
        meta = desired["metadata"]
        live = await self.get(desired["apiVersion"], desired["kind"], meta["namespace"],
                              meta["name"])  # fmt: skip
        if live is None:
            return await self.create(desired), True
        if diff.holds(live, desired):
            return live, False
        merged = {**live, **{k: v for k, v in desired.items() if k != "metadata"}}
        merged["metadata"] = {
            **live["metadata"],
            "labels": {**live["metadata"].get("labels", {}), **meta.get("labels", {})},
            "annotations": {
                **live["metadata"].get("annotations", {}),
                **meta.get("annotations", {}),
            },
            "ownerReferences": meta.get(
                "ownerReferences", live["metadata"].get("ownerReferences", [])
            ),
        }
        merged.pop("status", None)
        return await self.replace(merged), True
