"""The three patch formats of the Kubernetes API, applied to plain JSON values.

- JSON merge patch (RFC 7386, ``application/merge-patch+json``): maps merge, ``null``
  deletes, lists are replaced whole.
- JSON patch (RFC 6902, ``application/json-patch+json``): ``add``, ``remove``, ``replace``,
  ``move``, ``copy``, ``test``; a failed ``test`` or a missing path is 422, as kopf expects.
- Strategic merge patch (``application/strategic-merge-patch+json``, built-in kinds only):
  merge patch, except that lists the schema marks ``x-kubernetes-patch-strategy: merge``
  are merged by their ``x-kubernetes-patch-merge-key`` (containers by name, ports by
  containerPort, conditions by type, ...) or, for lists of scalars, united; with the
  directives kubectl sends: ``$patch: replace|delete|merge``, ``$retainKeys``,
  ``$setElementOrder/<list>`` and ``$deleteFromPrimitiveList/<list>``.
"""

from __future__ import annotations

import copy
from typing import Any, Protocol

from kube_api_errors import ApiError, bad_request, unprocessable

__all__ = ["PatchSchema", "json_patch", "merge_patch", "strategic_merge_patch"]


class PatchSchema(Protocol):
    """What a strategic merge needs to know about the schema at one place of the object."""

    def field(self, name: str) -> PatchSchema:
        """The schema of a map's entry ``name``."""

    def item(self) -> PatchSchema:
        """The schema of a list's items."""

    def list_merge(self) -> tuple[bool, str | None]:
        """Whether a list here is merged (else replaced), and its merge key if any."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: ``target`` with ``patch`` merged in (neither is changed)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# -- RFC 6902 ---------------------------------------------------------------------------


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise unprocessable(f"invalid JSON pointer {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _index(container: list[Any], token: str, *, adding: bool) -> int:
    if adding and token == "-":
        return len(container)
    if not token.isdigit() or int(token) > len(container) - (0 if adding else 1):
        raise unprocessable(f"index {token!r} is out of range")
    return int(token)


def _parent(doc: Any, tokens: list[str]) -> Any:
    for token in tokens[:-1]:
        if isinstance(doc, dict) and token in doc:
            doc = doc[token]
        elif isinstance(doc, list):
            doc = doc[_index(doc, token, adding=False)]
        else:
            raise unprocessable(f"doc is missing path: /{'/'.join(tokens)}")
    return doc


def _get(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        return doc
    parent, last = _parent(doc, tokens), tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, adding=False)]
    raise unprocessable(f"doc is missing path: /{'/'.join(tokens)}")


def _remove(doc: Any, tokens: list[str]) -> Any:
    parent, last = _parent(doc, tokens), tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, adding=False))
    raise unprocessable(f"unable to remove nonexistent key: {last}: missing value")


def _add(doc: Any, tokens: list[str], value: Any, *, replace: bool = False) -> Any:
    if not tokens:
        return value
    parent, last = _parent(doc, tokens), tokens[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise unprocessable(f"replace operation does not apply: doc is missing key: {last}")
        parent[last] = value
    elif isinstance(parent, list):
        index = _index(parent, last, adding=not replace)
        if replace:
            parent[index] = value
        else:
            parent.insert(index, value)
    else:
        raise unprocessable(f"doc is missing path: /{'/'.join(tokens)}")
    return doc


def _operate(doc: Any, op: dict[str, Any]) -> Any:
    kind, path = op.get("op"), _pointer(str(op.get("path", "")))
    if kind == "test":
        if _get(doc, path) != op.get("value"):
            raise unprocessable(
                f"the server rejected our request due to an error in our "
                f"request: testing value {op.get('path')} failed"
            )
        return doc
    if kind == "remove":
        _remove(doc, path)
        return doc if path else None
    if kind in ("add", "replace"):
        return _add(doc, path, copy.deepcopy(op.get("value")), replace=kind == "replace")
    if kind in ("move", "copy"):
        source = _pointer(str(op.get("from", "")))
        value = _remove(doc, source) if kind == "move" else copy.deepcopy(_get(doc, source))
        return _add(doc, path, value)
    raise unprocessable(f"unexpected kind of JSON patch operation: {kind!r}")


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902: ``target`` (unchanged) with ``operations`` applied in order, all or none."""
    if not isinstance(operations, list) or not all(isinstance(o, dict) for o in operations):
        raise bad_request("a JSON patch must be a list of operations")
    doc = copy.deepcopy(target)
    for operation in operations:
        doc = _operate(doc, operation)
    return doc


# -- strategic merge --------------------------------------------------------------------

_DELETE = object()
_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVES = "$deleteFromPrimitiveList/"


def _strip(value: Any) -> Any:
    """A patch value with its directives removed, as it is stored when nothing to merge."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$") and v is not None}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _merge_map(original: Any, patch: dict[str, Any], schema: PatchSchema) -> Any:
    directive = patch.get("$patch")
    if directive == "delete":
        return _DELETE
    if directive == "replace":
        return _strip(patch)
    if directive not in (None, "merge"):
        raise bad_request(f"unknown patch directive: {directive!r}")
    result = dict(original) if isinstance(original, dict) else {}
    if isinstance(patch.get("$retainKeys"), list):
        keep = set(patch["$retainKeys"])
        result = {k: v for k, v in result.items() if k in keep}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith((_ORDER, _DELETE_PRIMITIVES)):
            continue
        merged = _merge_value(result.get(key), value, schema.field(key))
        if merged is _DELETE:
            result.pop(key, None)
        else:
            result[key] = merged
    for key, value in patch.items():
        if key.startswith(_DELETE_PRIMITIVES):
            name = key[len(_DELETE_PRIMITIVES) :]
            result[name] = [v for v in result.get(name) or [] if v not in value]
        elif key.startswith(_ORDER) and isinstance(result.get(key[len(_ORDER) :]), list):
            name = key[len(_ORDER) :]
            result[name] = _reorder(result[name], value, schema.field(name).list_merge()[1])
    return result


def _merge_value(original: Any, value: Any, schema: PatchSchema) -> Any:
    if value is None:
        return _DELETE
    if isinstance(value, dict):
        return _merge_map(original, value, schema)
    if isinstance(value, list):
        return _merge_list(original, value, schema)
    return value


def _merge_list(original: Any, patch: list[Any], schema: PatchSchema) -> list[Any]:
    merged, key = schema.list_merge()
    replace = any(isinstance(v, dict) and v.get("$patch") == "replace" for v in patch)
    if not merged or replace or not isinstance(original, list):
        return [_strip(v) for v in patch if not (isinstance(v, dict) and "$patch" in v)]
    result = list(original)
    if key is None:
        return result + [v for v in patch if v not in result]
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request(f"a merge-keyed list item must be a map, not {item!r}")
        at = next(
            (
                i
                for i, o in enumerate(result)
                if isinstance(o, dict) and o.get(key) == item.get(key)
            ),
            None,
        )
        if item.get("$patch") == "delete":
            result = [
                o for o in result if not (isinstance(o, dict) and o.get(key) == item.get(key))
            ]
            continue
        entry = _merge_map(result[at] if at is not None else {}, item, schema.item())
        if at is None:
            result.append(entry)
        else:
            result[at] = entry
    return result


def _reorder(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    def identity(value: Any) -> Any:
        return value.get(key) if key and isinstance(value, dict) else value

    wanted = [identity(v) for v in order]
    placed = [
        next(i for i in items if identity(i) == w)
        for w in wanted
        if any(identity(i) == w for i in items)
    ]
    return placed + [i for i in items if identity(i) not in wanted]


def strategic_merge_patch(target: Any, patch: Any, schema: PatchSchema) -> Any:
    """``target`` (unchanged) with a strategic merge ``patch`` applied under ``schema``."""
    if not isinstance(patch, dict):
        raise bad_request("a strategic merge patch must be a map")
    result = _merge_map(copy.deepcopy(target), patch, schema)
    if result is _DELETE:
        raise ApiError(422, "Invalid", "a patch may not delete the whole object")
    return result
