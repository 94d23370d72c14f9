"""Label and field selectors as the real API server parses and applies them.

Label selectors: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x,y)``, ``a``,
``!a``, comma-separated (all must hold). Field selectors: ``metadata.name``,
``metadata.namespace`` (and, as the real server allows for some kinds, any other dotted
path to a scalar) with ``=``, ``==``, ``!=``. Set-based operators on fields are refused
(400), as the real server does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kube_api_errors import bad_request

__all__ = ["Selector", "field_selector", "label_selector", "match_all"]

#: A compiled selector: true when an object matches.
Selector = Callable[[dict[str, Any]], bool]

_SET = re.compile(r"^\s*(!?)\s*([\w./-]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")
_EQUALITY = re.compile(r"^\s*([\w./-]+)\s*(==|=|!=)\s*([\w./-]*)\s*$")


def match_all(obj: dict[str, Any]) -> bool:
    return True


def _split(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current] if current.strip() or parts else []


def _label_requirement(text: str) -> Selector:
    equality = _EQUALITY.match(text)
    if equality:
        key, op, value = equality.groups()
        if op == "!=":
            return lambda obj: _labels(obj).get(key) != value
        return lambda obj: _labels(obj).get(key) == value
    found = _SET.match(text)
    if not found:
        raise bad_request(f"unable to parse requirement: {text!r}")
    negated, key, op, values = found.groups()
    if op is None:
        return (lambda obj: key not in _labels(obj)) if negated else (lambda o: key in _labels(o))
    if negated:
        raise bad_request(f"unable to parse requirement: {text!r}")
    members = {v.strip() for v in values.split(",") if v.strip()}
    if op == "in":
        return lambda obj: _labels(obj).get(key) in members
    return lambda obj: _labels(obj).get(key) not in members


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = obj.get("metadata", {}).get("labels") or {}
    return labels


def label_selector(text: str | None) -> Selector:
    """Compile a ``labelSelector`` query parameter (empty or None: everything)."""
    requirements = [_label_requirement(part) for part in _split(text or "")]
    return lambda obj: all(requirement(obj) for requirement in requirements)


def _field_value(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    for step in path.split("."):
        value = value.get(step) if isinstance(value, dict) else None
    if value is None:
        return ""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _field_requirement(text: str) -> Selector:
    equality = _EQUALITY.match(text)
    if not equality:
        raise bad_request(f"invalid selector: {text!r}; can't understand {text!r}")
    path, op, value = equality.groups()
    if op == "!=":
        return lambda obj: _field_value(obj, path) != value
    return lambda obj: _field_value(obj, path) == value


def field_selector(text: str | None) -> Selector:
    """Compile a ``fieldSelector`` query parameter (empty or None: everything)."""
    requirements = [_field_requirement(part) for part in _split(text or "")]
    return lambda obj: all(requirement(obj) for requirement in requirements)
