"""``meta.k8s.io/v1`` Tables, what ``kubectl get`` asks for (``Accept:
application/json;as=Table;v=v1;g=meta.k8s.io``) and prints as columns.

Custom kinds get a Name column and their CRD version's ``additionalPrinterColumns``, each
cell evaluated from its JSONPath (Name and Age when the CRD declares none); built-in kinds
get Name and Age. A ``date`` cell is shown as an age (``5s``, ``3m``, ``2d``), as the real
server does. The JSONPath subset: ``.a.b``, ``['a.b']``, ``[0]``, ``[*]``, and filters
``[?(@.k=="v")]`` (``==``, ``!=``); several results are joined with commas.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from typing import Any

from kube_api_resources import PrinterColumn, ResourceType

__all__ = ["age", "jsonpath", "table"]

_TOKEN = re.compile(
    r"""\.(?P<name>[\w-]+)|\[(?P<index>\d+|\*)\]|\[['"](?P<quoted>[^'"]+)['"]\]"""
    r"""|\[\?\(@\.(?P<fkey>[\w.-]+)\s*(?P<fop>==|!=)\s*['"]?(?P<fval>[^'")]*)['"]?\)\]"""
)

NAME = PrinterColumn(
    "Name", "string", ".metadata.name", "Name must be unique within a namespace.", format="name"
)
AGE = PrinterColumn(
    "Age",
    "date",
    ".metadata.creationTimestamp",
    "CreationTimestamp is a timestamp representing the server time when this object was created.",
)


def _step(values: list[Any], token: re.Match[str]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if token["name"] or token["quoted"]:
            key = token["name"] or token["quoted"]
            if isinstance(value, dict) and key in value:
                out.append(value[key])
        elif token["index"] == "*":
            out.extend(
                value
                if isinstance(value, list)
                else value.values()
                if isinstance(value, dict)
                else []
            )
        elif token["index"] is not None:
            if isinstance(value, list) and int(token["index"]) < len(value):
                out.append(value[int(token["index"])])
        elif isinstance(value, list):
            out.extend(item for item in value if _filter(item, token))
    return out


def _filter(item: Any, token: re.Match[str]) -> bool:
    found = jsonpath(item, "." + token["fkey"])
    text = (
        str(found[0]).lower()
        if found and isinstance(found[0], bool)
        else (str(found[0]) if found else None)
    )
    return (text == token["fval"]) == (token["fop"] == "==")


def jsonpath(obj: Any, path: str) -> list[Any]:
    """The values at ``path`` (``.spec.replicas``, ``{.spec.replicas}``) in ``obj``."""
    path = path.strip().removeprefix("{").removesuffix("}").strip()
    values, position = [obj], 0
    while position < len(path):
        token = _TOKEN.match(path, position)
        if token is None:
            return []
        values, position = _step(values, token), token.end()
    return values


def age(timestamp: str | None, now: dt.datetime) -> str:
    """A timestamp as kubectl shows an age: ``45s``, ``3m12s``, ``5h``, ``2d``, ``<unknown>``."""
    if not timestamp:
        return "<unknown>"
    then = dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    seconds = max(0, int((now - then).total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    return f"{hours}h" if hours < 48 else f"{hours // 24}d"


def _cell(obj: dict[str, Any], column: PrinterColumn, now: dt.datetime) -> Any:
    values = jsonpath(obj, column.json_path)
    if not values:
        return None
    if column.type == "date":
        return age(str(values[0]), now)
    if len(values) == 1 and not isinstance(values[0], dict | list):
        return values[0]
    return ",".join(v if isinstance(v, str) else json.dumps(v) for v in values)


def _columns(rt: ResourceType) -> tuple[PrinterColumn, ...]:
    return (NAME, *(rt.printer_columns or (AGE,)))


def _definition(column: PrinterColumn) -> dict[str, Any]:
    return {
        "name": column.name,
        "type": column.type,
        "format": column.format,
        "description": column.description,
        "priority": column.priority,
    }


def _row(
    obj: dict[str, Any], columns: tuple[PrinterColumn, ...], now: dt.datetime
) -> dict[str, Any]:
    partial = {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }
    return {"cells": [_cell(obj, c, now) for c in columns], "object": partial}


def table(
    rt: ResourceType,
    objects: list[dict[str, Any]],
    resource_version: str,
    now: Callable[[], dt.datetime],
) -> dict[str, Any]:
    """The Table of ``objects`` of kind ``rt``."""
    columns, moment = _columns(rt), now()
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": [_definition(c) for c in columns],
        "rows": [_row(obj, columns, moment) for obj in objects],
    }
