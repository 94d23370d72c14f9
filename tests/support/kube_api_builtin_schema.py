"""The built-in kinds' schemas, from the Kubernetes 1.32 OpenAPI definitions that PyPI
``kubernetes-validate`` ships (a test dependency) as JSON Schema.

They serve two purposes: strategic merge patches find each list's merge key and strategy
here (:class:`SchemaNode`, the ``PatchSchema`` of ``kube_api_patch``), and ``/openapi/v3``
publishes them back in OpenAPI form (:meth:`BuiltinSchemas.openapi_components`), which is
what kubectl's client-side apply reads to compute a strategic merge patch.

Not done: validating built-in objects against these schemas (the real server's typed
decoding and validation); unknown fields of built-in kinds are kept as sent.
"""

from __future__ import annotations

import importlib.resources
import json
from collections.abc import Iterable
from typing import Any

__all__ = ["KUBERNETES_VERSION", "BuiltinSchemas", "SchemaNode"]

#: The Kubernetes release whose built-in schemas are served.
KUBERNETES_VERSION = "1.32.0"
_REF = "#/$defs/"


class SchemaNode:
    """One place in a built-in kind's schema, walked along a patch (``PatchSchema``)."""

    def __init__(self, definitions: dict[str, Any], schema: dict[str, Any] | None) -> None:
        self._definitions = definitions
        self._schema = self._resolve(schema or {})

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            schema = {
                **self._definitions.get(schema["$ref"][len(_REF) :], {}),
                **{k: v for k, v in schema.items() if k != "$ref"},
            }
        return schema

    def field(self, name: str) -> SchemaNode:
        properties = self._schema.get("properties") or {}
        if name in properties:
            return SchemaNode(self._definitions, properties[name])
        extra = self._schema.get("additionalProperties")
        return SchemaNode(self._definitions, extra if isinstance(extra, dict) else None)

    def item(self) -> SchemaNode:
        return SchemaNode(self._definitions, self._schema.get("items"))

    def list_merge(self) -> tuple[bool, str | None]:
        strategy = str(self._schema.get("x-kubernetes-patch-strategy", "")).split(",")
        return "merge" in strategy, self._schema.get("x-kubernetes-patch-merge-key")


def _openapi(schema: Any) -> Any:
    """A JSON Schema of kubernetes-validate turned back into OpenAPI v3 form."""
    if not isinstance(schema, dict):
        return schema
    one_of = schema.get("oneOf")
    if isinstance(one_of, list):
        types = {t for option in one_of for t in _types(option)}
        if types >= {"string", "integer"}:
            return {"x-kubernetes-int-or-string": True, **_rest(schema)}
        return {"type": "string", **_rest(schema)}  # resource.Quantity: a string on the wire
    converted: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties":
            converted[key] = {name: _openapi(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            converted[key] = _openapi(value)
        elif key in ("allOf", "anyOf"):
            converted[key] = [_openapi(sub) for sub in value]
        elif key != "type":
            converted[key] = value
    non_null = [t for t in _types(schema) if t != "null"]
    if non_null:
        converted["type"] = non_null[0]
    ref = converted.pop("$ref", None)
    if isinstance(ref, str):
        return {"allOf": [{"$ref": "#/components/schemas/" + ref[len(_REF) :]}], **converted}
    return converted


def _types(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("type", [])
    return [kind] if isinstance(kind, str) else list(kind)


def _rest(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k in ("description",)}


class BuiltinSchemas:
    """The built-in definitions, loaded once per server (1.3 MB of JSON)."""

    def __init__(self) -> None:
        package = importlib.resources.files("kubernetes_validate")
        path = package / "kubernetes-json-schema" / f"v{KUBERNETES_VERSION}-local"
        document = json.loads((path / "_definitions.json").read_text(encoding="utf-8"))
        self._definitions: dict[str, Any] = document["$defs"]
        self._by_kind: dict[tuple[str, str, str], str] = {}
        for name, schema in self._definitions.items():
            for gvk in schema.get("x-kubernetes-group-version-kind", []):
                self._by_kind[(gvk["group"], gvk["version"], gvk["kind"])] = name

    def definition_name(self, group: str, version: str, kind: str) -> str | None:
        return self._by_kind.get((group, version, kind))

    def node(self, group: str, version: str, kind: str) -> SchemaNode:
        """The root of a kind's schema; an empty one (merge patch semantics) if unknown."""
        name = self.definition_name(group, version, kind)
        return SchemaNode(self._definitions, {"$ref": _REF + name} if name else None)

    def openapi_components(self, roots: Iterable[str]) -> dict[str, Any]:
        """``components.schemas`` for the named definitions and all they refer to."""
        wanted, seen = list(roots), set[str]()
        while wanted:
            name = wanted.pop()
            if name in seen or name not in self._definitions:
                continue
            seen.add(name)
            wanted.extend(_references(self._definitions[name]))
        return {name: _openapi(self._definitions[name]) for name in sorted(seen)}


def _references(schema: Any) -> Iterable[str]:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF):
            yield ref[len(_REF) :]
        for value in schema.values():
            yield from _references(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _references(value)
