"""How the emulated server turns a request body into the object it stores: pure functions.

For every kind: ``apiVersion``/``kind`` checked and filled in, ``metadata.name`` (or
``generateName``) required, server-owned metadata (``uid``, ``creationTimestamp``,
``generation``, ``deletionTimestamp``) set on create and kept on update, ``generation``
bumped when anything but metadata (and status, for kinds with a ``status`` subresource)
changes, the ``status`` of such kinds dropped on create and kept by writes to the main
resource, ``/status`` writes changing nothing but status, and no finalizer added to an
object being deleted. ``managedFields`` are not kept.

A few built-in defaults are applied (a StatefulSet's ``replicas``, namespaces ``Active``,
pods and claims ``Pending``); the real server's many others, and its validation of
built-in kinds, are not emulated.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
import secrets
import uuid
from typing import Any

from kube_api_errors import Cause, bad_request, invalid
from kube_api_resources import ResourceType

__all__ = ["for_create", "for_update", "stamp", "unchanged"]

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SERVER_OWNED = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)
_INITIAL_STATUS: dict[str, dict[str, Any]] = {
    "Namespace": {"phase": "Active"},
    "Pod": {"phase": "Pending"},
    "PersistentVolumeClaim": {"phase": "Pending"},
    "StatefulSet": {"replicas": 0, "availableReplicas": 0},
}


def stamp(moment: dt.datetime) -> str:
    """A timestamp as the API writes it: ``2024-01-31T12:00:00Z``."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _check_type(rt: ResourceType, body: dict[str, Any]) -> None:
    if body.get("apiVersion") not in (None, rt.api_version):
        raise bad_request(
            f"the API version in the data ({body['apiVersion']}) does not match "
            f"the expected API version ({rt.api_version})"
        )
    if body.get("kind") not in (None, rt.kind):
        raise bad_request(
            f"the kind in the data ({body['kind']}) does not match the expected kind ({rt.kind})"
        )
    body["apiVersion"], body["kind"] = rt.api_version, rt.kind


def _place(rt: ResourceType, body: dict[str, Any], namespace: str) -> dict[str, Any]:
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        metadata = body["metadata"] = {}
    if not rt.namespaced:
        metadata.pop("namespace", None)
    elif metadata.get("namespace", namespace) != namespace:
        raise bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    else:
        metadata["namespace"] = namespace
    return metadata


def _name(rt: ResourceType, metadata: dict[str, Any]) -> None:
    if not metadata.get("name") and metadata.get("generateName"):
        alphabet = "bcdfghjklmnpqrstvwxz2456789"
        metadata["name"] = metadata["generateName"] + "".join(
            secrets.choice(alphabet) for _ in range(5)
        )
    name = metadata.get("name")
    if not name:
        raise invalid(
            rt.kind,
            rt.group,
            "",
            [
                Cause(
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                    "metadata.name",
                )
            ],
        )
    if not _NAME.match(str(name)) or len(str(name)) > 253:
        message = (
            f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of '
            "lower case alphanumeric characters, '-' or '.', and must start and end "
            "with an alphanumeric character"
        )
        raise invalid(
            rt.kind, rt.group, str(name), [Cause("FieldValueInvalid", message, "metadata.name")]
        )


def _omit_empty(metadata: dict[str, Any]) -> None:
    """Drop empty metadata lists and maps, as Go's ``omitempty`` does on the real server."""
    for key in ("finalizers", "ownerReferences", "labels", "annotations"):
        if key in metadata and not metadata[key]:
            del metadata[key]


def _builtin_defaults(rt: ResourceType, obj: dict[str, Any]) -> None:
    if rt.builtin and rt.kind == "StatefulSet":
        obj.setdefault("spec", {}).setdefault("replicas", 1)


def for_create(
    rt: ResourceType, body: dict[str, Any], namespace: str, now: dt.datetime
) -> dict[str, Any]:
    """The object to store for a create of ``body`` in ``namespace``."""
    obj = copy.deepcopy(body)
    _check_type(rt, obj)
    metadata = _place(rt, obj, namespace)
    _name(rt, metadata)
    for key in (*_SERVER_OWNED, "resourceVersion", "managedFields", "selfLink"):
        metadata.pop(key, None)
    metadata.update(uid=str(uuid.uuid4()), creationTimestamp=stamp(now), generation=1)
    _omit_empty(metadata)
    if rt.has_status:
        obj.pop("status", None)
        if rt.builtin and rt.kind in _INITIAL_STATUS:
            obj["status"] = copy.deepcopy(_INITIAL_STATUS[rt.kind])
    _builtin_defaults(rt, obj)
    return obj


def _content(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """What a generation counts: all but metadata (and status, with a status subresource)."""
    ignored = {"metadata", "status"} if rt.has_status else {"metadata"}
    return {k: v for k, v in obj.items() if k not in ignored}


def for_update(
    rt: ResourceType, body: dict[str, Any], old: dict[str, Any], subresource: str
) -> dict[str, Any]:
    """The object to store for an update of ``old`` to ``body`` (main resource or status)."""
    obj = copy.deepcopy(body)
    _check_type(rt, obj)
    metadata = _place(rt, obj, old["metadata"].get("namespace", ""))
    if metadata.get("name", old["metadata"]["name"]) != old["metadata"]["name"]:
        raise bad_request("the name of the object does not match the name on the URL")
    if subresource == "status":
        obj = {**copy.deepcopy(old), "status": obj.get("status")}
        if obj["status"] is None:
            del obj["status"]
        return obj
    for key in ("name", *_SERVER_OWNED):
        metadata.pop(key, None)
        if key in old["metadata"]:
            metadata[key] = old["metadata"][key]
    metadata.pop("managedFields", None)
    _omit_empty(metadata)
    if rt.has_status:
        obj.pop("status", None)
        if "status" in old:
            obj["status"] = copy.deepcopy(old["status"])
    _builtin_defaults(rt, obj)
    _check_finalizers(rt, obj, old)
    if _content(rt, obj) != _content(rt, old):
        metadata["generation"] = int(old["metadata"].get("generation", 1)) + 1
    return obj


def _check_finalizers(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]) -> None:
    if not old["metadata"].get("deletionTimestamp"):
        return
    added = set(obj["metadata"].get("finalizers") or []) - set(
        old["metadata"].get("finalizers") or []
    )
    if added:
        message = (
            "Forbidden: no new finalizers can be added if the object is being deleted, "
            f"found new finalizers {sorted(added)}"
        )
        cause = Cause("FieldValueForbidden", message, "metadata.finalizers")
        raise invalid(rt.kind, rt.group, old["metadata"]["name"], [cause])


def unchanged(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Whether an update would store nothing new (the real server then writes nothing)."""

    def bare(obj: dict[str, Any]) -> dict[str, Any]:
        metadata = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
        return {**obj, "metadata": metadata}

    return bare(new) == bare(old)
