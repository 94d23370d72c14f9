"""CRD validation rules (``x-kubernetes-validations``) evaluated with PyPI ``cel-python``.

Each rule is compiled once, when its CRD is written (a rule that does not compile makes the
CRD invalid, as on the real server). On every write of a custom object, each schema node
that carries rules and is present in the object is checked with ``self`` bound to its
value; a *transition rule* (one that mentions ``oldSelf``) is checked only on updates and
only where the old object has a value at the same place (object properties by name,
``x-kubernetes-list-type: map`` items by their keys), with ``oldSelf`` bound to it. A rule
that is false, or that fails to evaluate, refuses the write (422) with its ``message``
(``messageExpression`` when it evaluates to a string), its ``reason`` and ``fieldPath``.

Which CEL works: what cel-python implements of the CEL standard: operators and literals,
``size``, ``has``, ``in``, ``matches``, ``contains``, ``startsWith``, ``endsWith``, the
macros ``all``, ``exists``, ``exists_one``, ``map``, ``filter``, conversions ``int``,
``uint``, ``double``, ``string``, ``bool``, ``bytes``, ``timestamp``, ``duration``, and
``type``. Not available: Kubernetes' CEL libraries (``isSorted``, ``sum``, ``indexOf``,
``lowerAscii``, ``split``, ``quantity``, ``url``, ``ip``, ``format``, ...), optional
types (``optionalOldSelf`` rules are checked only when an old value exists) and the cost
limits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import celpy
import celpy.adapter
from kube_api_errors import Cause
from kube_api_schema import field_path

__all__ = ["CelRules", "RuleError"]

_OLD_SELF = re.compile(r"\boldSelf\b")
_TYPE_NAMES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
}


class RuleError(ValueError):
    """A rule of a CRD's schema does not compile."""


@dataclass(frozen=True)
class _Rule:
    text: str
    program: Any
    message: str
    message_program: Any
    reason: str
    field_path: str
    transition: bool


def _compile(environment: celpy.Environment, text: str) -> Any:
    try:
        return environment.program(environment.compile(text))
    except Exception as error:  # celpy raises its parser's and Lark's errors
        raise RuleError(f"compilation failed: {text!r}: {error}") from error


def _rules(environment: celpy.Environment, schema: dict[str, Any]) -> list[_Rule]:
    rules = []
    for spec in schema.get("x-kubernetes-validations") or []:
        text = str(spec.get("rule", ""))
        expression = spec.get("messageExpression")
        rules.append(
            _Rule(
                text=text,
                program=_compile(environment, text),
                message=str(spec.get("message") or f"failed rule: {text}"),
                message_program=_compile(environment, expression) if expression else None,
                reason=str(spec.get("reason") or "FieldValueInvalid"),
                field_path=str(spec.get("fieldPath") or ""),
                transition=bool(_OLD_SELF.search(text)),
            )
        )
    return rules


class _Node:
    """The compiled rules of one schema node and of the nodes under it."""

    def __init__(self, environment: celpy.Environment, schema: dict[str, Any]) -> None:
        self.rules = _rules(environment, schema)
        self.properties = {
            name: _Node(environment, sub) for name, sub in (schema.get("properties") or {}).items()
        }
        extra, items = schema.get("additionalProperties"), schema.get("items")
        self.extra = _Node(environment, extra) if isinstance(extra, dict) else None
        self.items = _Node(environment, items) if isinstance(items, dict) else None
        map_list = schema.get("x-kubernetes-list-type") == "map"
        self.list_keys = tuple(schema.get("x-kubernetes-list-map-keys") or ()) if map_list else ()

    def empty(self) -> bool:
        children = [*self.properties.values(), self.extra, self.items]
        return not self.rules and all(c is None or c.empty() for c in children)


def _cel(value: Any) -> Any:
    return celpy.adapter.json_to_cel(value)


def _old_item(item: Any, old: Any, keys: tuple[str, ...]) -> Any:
    if not keys or not isinstance(item, dict) or not isinstance(old, list):
        return None
    return next(
        (o for o in old if isinstance(o, dict) and all(o.get(k) == item.get(k) for k in keys)), None
    )


class CelRules:
    """The validation rules of one CRD version's schema."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self._root = _Node(celpy.Environment(), schema)

    def check(self, new: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        """The rules ``new`` breaks (``old`` is the object it replaces, None on create)."""
        if self._root.empty():
            return []
        causes: list[Cause] = []
        self._check(self._root, new, old, [], causes)
        return causes

    def _check(
        self, node: _Node, value: Any, old: Any, path: list[str | int], causes: list[Cause]
    ) -> None:
        for rule in node.rules:
            if rule.transition and old is None:
                continue
            cause = _evaluate(rule, value, old, path)
            if cause is not None:
                causes.append(cause)
        if isinstance(value, dict):
            for key, item in value.items():
                child = node.properties.get(key, node.extra)
                old_item = old.get(key) if isinstance(old, dict) else None
                if child is not None and not child.empty():
                    self._check(child, item, old_item, [*path, key], causes)
        elif isinstance(value, list) and node.items is not None and not node.items.empty():
            for index, item in enumerate(value):
                old_item = _old_item(item, old, node.list_keys)
                self._check(node.items, item, old_item, [*path, index], causes)


def _evaluate(rule: _Rule, value: Any, old: Any, path: list[str | int]) -> Cause | None:
    activation = {"self": _cel(value)}
    if old is not None:
        activation["oldSelf"] = _cel(old)
    where = (field_path(path) + rule.field_path).lstrip(".")
    shown = _TYPE_NAMES.get(type(value), "object")
    try:
        result = rule.program.evaluate(activation)
    except Exception as error:  # an evaluation error refuses the write, as on the real server
        return Cause(
            rule.reason, f'Invalid value: "{shown}": {error} evaluating rule: {rule.text}', where
        )
    if isinstance(result, celpy.celtypes.BoolType) and bool(result):
        return None
    if isinstance(result, celpy.evaluation.CELEvalError):
        message = f"{result.args[0]} evaluating rule: {rule.text}"
    else:
        message = _message(rule, activation)
    return Cause(rule.reason, f'Invalid value: "{shown}": {message}', where)


def _message(rule: _Rule, activation: dict[str, Any]) -> str:
    if rule.message_program is not None:
        try:
            text = rule.message_program.evaluate(activation)
        except Exception:  # the real server falls back to the static message too
            return rule.message
        if isinstance(text, str) and text:
            return str(text)
    return rule.message
