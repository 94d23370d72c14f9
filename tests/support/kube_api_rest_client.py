"""Talking JSON over HTTP to the emulated API server in its own tests: content types, paths,
a Widget CRD with status and scale subresources, and small object builders."""

from __future__ import annotations

import json
import uuid
from typing import Any

from aiohttp import ClientSession

__all__ = [
    "CONFIGMAPS",
    "JSON",
    "JSON_PATCH",
    "MERGE",
    "STRATEGIC",
    "WIDGETS",
    "WIDGET_CRD",
    "Api",
    "configmap",
    "fresh",
]

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


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}
