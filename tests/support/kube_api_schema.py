"""A CRD version's structural ``openAPIV3Schema`` applied to custom objects, in the real
server's order: prune unknown fields, apply ``default``s, validate.

Validation uses ``jsonschema`` (draft 4, the dialect OpenAPI 3.0 builds on) once the
OpenAPI-isms are rewritten: ``nullable: true`` admits null, ``x-kubernetes-int-or-string``
becomes integer-or-string. Pruning follows ``properties``, ``additionalProperties`` and
``x-kubernetes-preserve-unknown-fields`` (and keeps ``apiVersion``/``kind``/``metadata`` at
the root and in ``x-kubernetes-embedded-resource`` objects). Failures become ``Cause``s
worded like the real server's (``spec.replicas: Invalid value: "string": spec.replicas in
body must be of type integer: "string"``).

Not emulated: ``format`` checks, ``x-kubernetes-list-type`` uniqueness, the rules the real
server enforces on the schema itself (it is only checked to compile).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

import jsonschema
from kube_api_errors import Cause

__all__ = ["StructuralSchema", "field_path", "to_json_schema"]

_NESTED = ("allOf", "anyOf", "oneOf")


def to_json_schema(schema: Any) -> Any:
    """An OpenAPI v3 (Kubernetes structural) schema as a plain JSON Schema."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {name: to_json_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = to_json_schema(value)
        elif key in _NESTED:
            out[key] = [to_json_schema(sub) for sub in value]
        elif not key.startswith("x-kubernetes-") and key not in ("nullable", "default"):
            out[key] = value
    if schema.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        either = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
        out = {"allOf": [out, either]} if "anyOf" in out else {**out, **either}
    return out


def field_path(parts: Sequence[str | int]) -> str:
    """``["spec", "items", 0, "name"]`` → ``spec.items[0].name``."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    return json.dumps(value)


_TYPE_NAMES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


def _cause(error: jsonschema.ValidationError) -> Cause:
    path = field_path(list(error.absolute_path))
    where = path or "<root>"
    value: Any = error.instance
    rule: Any = error.validator_value
    if error.validator == "required":
        missing = next((p for p in rule if p not in (value or {})), "")
        return Cause(
            "FieldValueRequired", "Required value", field_path([*error.absolute_path, missing])
        )
    if error.validator == "type":
        actual = _TYPE_NAMES.get(type(value), "unknown")
        wanted = rule if isinstance(rule, str) else next(t for t in rule if t != "null")
        message = f'Invalid value: "{actual}": {where} in body must be of type {wanted}: "{actual}"'
        return Cause("FieldValueTypeInvalid", message, path)
    if error.validator == "enum":
        allowed = ", ".join(json.dumps(v) for v in rule)
        return Cause(
            "FieldValueNotSupported",
            f"Unsupported value: {_shown(value)}: supported values: {allowed}",
            path,
        )
    wording = {
        "minimum": f"should be greater than or equal to {rule}",
        "maximum": f"should be less than or equal to {rule}",
        "pattern": f"should match '{rule}'",
        "minLength": f"should be at least {rule} chars long",
        "maxLength": f"may not be longer than {rule}",
        "minItems": f"should have at least {rule} items",
        "maxItems": f"must have at most {rule} items",
    }.get(str(error.validator), error.message)
    return Cause(
        "FieldValueInvalid", f"Invalid value: {_shown(value)}: {where} in body {wording}", path
    )


class StructuralSchema:
    """One CRD version's schema, compiled once; SchemaError if it is no valid schema."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        converted = to_json_schema(schema)
        jsonschema.Draft4Validator.check_schema(converted)
        self._validator = jsonschema.Draft4Validator(converted)

    def prune(self, obj: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """A copy of ``obj`` without the fields the schema does not know, and their paths."""
        pruned, unknown = copy.deepcopy(obj), list[str]()
        _prune(pruned, self.schema, [], unknown, root=True)
        return pruned, unknown

    def default(self, obj: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``obj`` with the schema's ``default``s filled in where fields are absent."""
        defaulted = copy.deepcopy(obj)
        _default(defaulted, self.schema)
        return defaulted

    def validate(self, obj: dict[str, Any]) -> list[Cause]:
        causes = [_cause(e) for e in self._validator.iter_errors(obj)]
        return sorted(causes, key=lambda c: (c.field, c.message))


def _prune(
    value: Any,
    schema: dict[str, Any],
    path: list[str | int],
    unknown: list[str],
    root: bool = False,
) -> None:
    if isinstance(value, list):
        for index, item in enumerate(value):
            _prune(item, schema.get("items") or {}, [*path, index], unknown)
        return
    if not isinstance(value, dict):
        return
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    keep_meta = root or schema.get("x-kubernetes-embedded-resource")
    for key in list(value):
        if keep_meta and key in ("apiVersion", "kind", "metadata"):
            continue
        if key in properties:
            _prune(value[key], properties[key], [*path, key], unknown)
        elif isinstance(extra, dict):
            _prune(value[key], extra, [*path, key], unknown)
        elif not (extra is True or schema.get("x-kubernetes-preserve-unknown-fields")):
            unknown.append(field_path([*path, key]))
            del value[key]


def _default(value: Any, schema: dict[str, Any]) -> None:
    if isinstance(value, list):
        for item in value:
            _default(item, schema.get("items") or {})
        return
    if not isinstance(value, dict):
        return
    for key, sub in (schema.get("properties") or {}).items():
        if value.get(key) is None and "default" in sub and not sub.get("nullable"):
            value[key] = copy.deepcopy(sub["default"])
        if key in value:
            _default(value[key], sub)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        for key in value:
            _default(value[key], extra)
