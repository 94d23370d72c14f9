"""What a CustomResourceDefinition makes the emulated server do: serve its kind.

:func:`compile_crd` checks a CRD as the real server does in the parts clients rely on
(``<plural>.<group>`` name, names, scope, one storage version, a schema per version that
compiles, CEL rules that compile) and turns it into one :class:`CustomVersion` per served
version: the :class:`ResourceType` discovery lists (with its ``status``/``scale``
subresources and printer columns) and the compiled schema and rules its objects are
checked against. :func:`accepted_status` is the status the real server writes back
(``NamesAccepted`` and ``Established``, at once: there is no delay to wait for).

Not emulated: conversion webhooks (versions share storage, only ``apiVersion`` differs),
``selectableFields``, ``preserveUnknownFields: true`` (v1 CRDs may not set it anyway).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import jsonschema
from kube_api_cel import CelRules, RuleError
from kube_api_errors import Cause, invalid
from kube_api_resources import PrinterColumn, ResourceType, Scale
from kube_api_schema import StructuralSchema

__all__ = ["CustomVersion", "accepted_status", "compile_crd"]

_KIND = "CustomResourceDefinition"
_GROUP = "apiextensions.k8s.io"


@dataclass(frozen=True)
class CustomVersion:
    """One served version of a custom kind and the checks its objects go through."""

    type: ResourceType
    schema: StructuralSchema
    rules: CelRules


def _columns(version: dict[str, Any]) -> tuple[PrinterColumn, ...]:
    return tuple(
        PrinterColumn(
            name=c["name"],
            type=c.get("type", "string"),
            json_path=c["jsonPath"],
            description=c.get("description", ""),
            priority=c.get("priority", 0),
            format=c.get("format", ""),
        )
        for c in version.get("additionalPrinterColumns") or []
    )


def _scale(version: dict[str, Any]) -> Scale | None:
    scale = (version.get("subresources") or {}).get("scale")
    if scale is None:
        return None
    return Scale(
        scale.get("specReplicasPath", ".spec.replicas"),
        scale.get("statusReplicasPath", ".status.replicas"),
        scale.get("labelSelectorPath", ""),
    )


def _compile_version(
    spec: dict[str, Any], version: dict[str, Any], causes: list[Cause], at: str
) -> CustomVersion | None:
    names = spec.get("names") or {}
    schema = (version.get("schema") or {}).get("openAPIV3Schema")
    if not isinstance(schema, dict):
        causes.append(
            Cause(
                "FieldValueRequired",
                "Required value: schemas are required",
                f"{at}.schema.openAPIV3Schema",
            )
        )
        return None
    try:
        compiled, rules = StructuralSchema(schema), CelRules(schema)
    except (jsonschema.SchemaError, RuleError) as error:
        message = getattr(error, "message", str(error))
        causes.append(
            Cause("FieldValueInvalid", f"Invalid value: {message}", f"{at}.schema.openAPIV3Schema")
        )
        return None
    rt = ResourceType(
        group=spec["group"],
        version=version["name"],
        kind=names["kind"],
        plural=names["plural"],
        namespaced=spec.get("scope") == "Namespaced",
        singular=names.get("singular", ""),
        short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()),
        has_status="status" in (version.get("subresources") or {}),
        scale=_scale(version),
        schema=schema,
        printer_columns=_columns(version),
        storage=bool(version.get("storage")),
    )
    return CustomVersion(rt, compiled, rules)


def _check_names(crd: dict[str, Any], causes: list[Cause]) -> None:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    for key in ("plural", "kind"):
        if not names.get(key):
            causes.append(Cause("FieldValueRequired", "Required value", f"spec.names.{key}"))
    if not spec.get("group"):
        causes.append(Cause("FieldValueRequired", "Required value", "spec.group"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{spec.get("scope")}"'
                ': supported values: "Cluster", "Namespaced"',
                "spec.scope",
            )
        )
    expected = f"{names.get('plural')}.{spec.get('group')}"
    if crd["metadata"]["name"] != expected:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f'Invalid value: "{crd["metadata"]["name"]}": '
                f'must be spec.names.plural+"."+spec.group',
                "metadata.name",
            )
        )


def compile_crd(crd: dict[str, Any]) -> list[CustomVersion]:
    """The served versions of ``crd``; 422 Invalid if the CRD is not acceptable."""
    causes: list[Cause] = []
    _check_names(crd, causes)
    spec = crd.get("spec") or {}
    versions = spec.get("versions") or []
    if sum(bool(v.get("storage")) for v in versions) != 1:
        causes.append(
            Cause(
                "FieldValueInvalid",
                "Invalid value: must have exactly one version marked as storage version",
                "spec.versions",
            )
        )
    compiled = []
    if not causes:
        for index, version in enumerate(versions):
            done = _compile_version(spec, version, causes, f"spec.versions[{index}]")
            if done is not None and version.get("served", True):
                compiled.append(done)
    if causes:
        raise invalid(_KIND, _GROUP, crd["metadata"]["name"], causes)
    return compiled


def accepted_status(crd: dict[str, Any], now: dt.datetime) -> dict[str, Any]:
    """The status the real server gives an accepted CRD."""
    spec, stamp = crd["spec"], now.strftime("%Y-%m-%dT%H:%M:%SZ")
    names = {
        "listKind": spec["names"]["kind"] + "List",
        "singular": spec["names"].get("singular") or spec["names"]["kind"].lower(),
        **spec["names"],
    }
    conditions = [
        {
            "type": "NamesAccepted",
            "status": "True",
            "reason": "NoConflicts",
            "message": "no conflicts found",
            "lastTransitionTime": stamp,
        },
        {
            "type": "Established",
            "status": "True",
            "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted",
            "lastTransitionTime": stamp,
        },
    ]
    stored = [v["name"] for v in spec["versions"] if v.get("storage")]
    previous = (crd.get("status") or {}).get("storedVersions") or []
    return {
        "acceptedNames": names,
        "conditions": conditions,
        "storedVersions": list(dict.fromkeys([*previous, *stored])),
    }
