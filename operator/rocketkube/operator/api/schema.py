"""A pydantic model's JSON Schema turned into a Kubernetes structural OpenAPI v3 schema.

The API server accepts a subset of JSON Schema for custom resources ("structural"
schemas): every node has a ``type`` (or ``x-kubernetes-int-or-string`` /
``x-kubernetes-preserve-unknown-fields``), no ``$ref``, optional values are
``nullable`` instead of ``anyOf`` with ``null``, maps are ``additionalProperties``
without ``properties``. This module does that rewriting, so the models stay the only
place a field is described:

- ``$ref`` to ``$defs`` inlined; ``title`` dropped; ``description`` kept, on one line, for
  ``kubectl explain``, with reST's double backquotes made single
- ``anyOf: [X, {type: null}]`` -> ``X`` + ``nullable: true``; ``default: null`` dropped
- ``additionalProperties: false`` dropped (the server prunes unknown fields anyway);
  ``true`` on a preserve-unknown-fields object dropped
- a nested object that is optional and has no default gets ``default: {}``, so the API
  server applies the defaults inside it when the user leaves it out
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["structural"]

Schema = dict[str, Any]


def structural(schema: Schema) -> Schema:
    """The structural form of ``schema`` (a ``model_json_schema(by_alias=True)``)."""
    defs: dict[str, Schema] = schema.get("$defs", {})
    return _node(schema, defs)


def _node(node: Schema, defs: dict[str, Schema]) -> Schema:
    node = copy.deepcopy(node)
    ref = node.pop("$ref", None)
    if ref is not None:
        target = _node(defs[ref.rsplit("/", 1)[-1]], defs)
        node = {**target, **{k: v for k, v in node.items() if k not in ("title",)}}
        return _clean(node, defs)
    return _clean(node, defs)


def _clean(node: Schema, defs: dict[str, Schema]) -> Schema:
    node.pop("$defs", None)
    node.pop("title", None)
    if "description" in node:
        # one line per field for ``kubectl explain``: docstrings wrap at 100 columns
        node["description"] = " ".join(node["description"].replace("``", "`").split())
    any_of = node.get("anyOf")
    if any_of is not None and not node.get("x-kubernetes-int-or-string"):
        kept = [choice for choice in any_of if choice.get("type") != "null"]
        if len(kept) < len(any_of):
            node.pop("anyOf")
            node["nullable"] = True
            if node.get("default", 0) is None:
                node.pop("default")
            if len(kept) == 1:
                inner = _node(kept[0], defs)
                inner.pop("nullable", None)
                node = {**inner, **node}
            else:
                node["anyOf"] = [_node(choice, defs) for choice in kept]
    elif any_of is not None:
        node["anyOf"] = [{"type": choice["type"]} for choice in any_of]
    if node.get("additionalProperties") is False or (
        node.get("additionalProperties") is True
        and node.get("x-kubernetes-preserve-unknown-fields")
    ):
        node.pop("additionalProperties")
    elif isinstance(node.get("additionalProperties"), dict):
        node["additionalProperties"] = _node(node["additionalProperties"], defs)
    if "items" in node:
        node["items"] = _node(node["items"], defs)
    properties = node.get("properties")
    if properties is not None:
        required = set(node.get("required", ()))
        for name, child in list(properties.items()):
            converted = _node(child, defs)
            if (
                name not in required
                and "default" not in converted
                and converted.get("type") == "object"
                and "properties" in converted
                and not converted.get("nullable")
            ):
                converted["default"] = {}
            properties[name] = converted
    return node
