"""The emulated API server's pure parts: patches, selectors, JSONPath, ages, schemas, CEL."""

from __future__ import annotations

import datetime as dt
from typing import Any

import kube_api_protobuf as protobuf
import pytest
from kube_api_builtin_schema import BuiltinSchemas
from kube_api_cel import CelRules, RuleError
from kube_api_errors import ApiError
from kube_api_patch import json_patch, merge_patch, strategic_merge_patch
from kube_api_schema import StructuralSchema
from kube_api_selectors import field_selector, label_selector
from kube_api_table import age, jsonpath


@pytest.fixture(scope="module")
def schemas() -> BuiltinSchemas:
    return BuiltinSchemas()


def pod(containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": containers, **spec},
    }


def test_merge_patch_is_rfc_7386() -> None:
    target = {"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]}
    patch = {"a": "z", "c": {"f": None}, "l": [3]}
    assert merge_patch(target, patch) == {"a": "z", "c": {"d": "e"}, "l": [3]}
    assert target["c"] == {"d": "e", "f": "g"}


def test_json_patch_operations_and_failures() -> None:
    doc = {"a": {"b": [1, 2]}, "x": "~/"}
    ops = [
        {"op": "add", "path": "/a/b/-", "value": 3},
        {"op": "add", "path": "/a/b/0", "value": 0},
        {"op": "replace", "path": "/x", "value": "y"},
        {"op": "copy", "from": "/a/b", "path": "/c"},
        {"op": "move", "from": "/c", "path": "/d"},
        {"op": "remove", "path": "/a/b/1"},
        {"op": "test", "path": "/x", "value": "y"},
    ]
    assert json_patch(doc, ops) == {"a": {"b": [0, 2, 3]}, "x": "y", "d": [0, 1, 2, 3]}
    for bad in (
        {"op": "test", "path": "/x", "value": "no"},
        {"op": "remove", "path": "/nope"},
        {"op": "replace", "path": "/nope", "value": 1},
    ):
        with pytest.raises(ApiError) as refused:
            json_patch(doc, [bad])
        assert refused.value.code == 422


def test_strategic_merge_merges_by_merge_key(schemas: BuiltinSchemas) -> None:
    node = schemas.node("", "v1", "Pod")
    target = pod(
        [
            {
                "name": "a",
                "image": "a:1",
                "env": [{"name": "X", "value": "1"}],
                "volumeMounts": [{"name": "v", "mountPath": "/v"}],
            },
            {"name": "b", "image": "b:1"},
        ],
        volumes=[{"name": "v", "emptyDir": {}}],
    )
    patch = {
        "spec": {
            "containers": [
                {"name": "c", "image": "c:1"},
                {
                    "name": "a",
                    "env": [{"name": "X", "$patch": "delete"}, {"name": "Y", "value": "2"}],
                },
            ],
            "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
            "volumes": [{"name": "w", "configMap": {"name": "cm"}}],
        }
    }
    patched = strategic_merge_patch(target, patch, node)["spec"]
    assert [c["name"] for c in patched["containers"]] == ["c", "a", "b"]
    assert patched["containers"][1]["env"] == [{"name": "Y", "value": "2"}]
    assert patched["containers"][1]["image"] == "a:1"
    assert [v["name"] for v in patched["volumes"]] == ["v", "w"]


def test_strategic_merge_directives(schemas: BuiltinSchemas) -> None:
    node = schemas.node("", "v1", "Pod")
    target = {
        **pod([{"name": "a", "image": "a"}]),
        "metadata": {"name": "p", "finalizers": ["x", "y"]},
    }
    union = strategic_merge_patch(target, {"metadata": {"finalizers": ["z"]}}, node)
    assert union["metadata"]["finalizers"] == ["x", "y", "z"]
    dropped = strategic_merge_patch(
        target, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}, node
    )
    assert dropped["metadata"]["finalizers"] == ["y"]
    replaced = strategic_merge_patch(
        target, {"spec": {"containers": [{"$patch": "replace"}, {"name": "n", "image": "n"}]}}, node
    )
    assert replaced["spec"]["containers"] == [{"name": "n", "image": "n"}]
    retained = strategic_merge_patch(
        {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}},
        {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
        schemas.node("apps", "v1", "Deployment"),
    )
    assert retained == {"spec": {"strategy": {"type": "Recreate"}}}


def test_label_and_field_selectors() -> None:
    obj = {"metadata": {"name": "n", "namespace": "ns", "labels": {"app": "x", "tier": "web"}}}
    assert label_selector("app=x,tier in (web, db),!gone")(obj)
    assert not label_selector("app!=x")(obj)
    assert label_selector("tier notin (db),app")(obj)
    assert label_selector("")(obj)
    assert field_selector("metadata.name=n,metadata.namespace!=other")(obj)
    with pytest.raises(ApiError):
        label_selector("app in x")


def test_jsonpath_and_age() -> None:
    obj = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "Synced", "status": "False"},
            ]
        },
        "metadata": {"labels": {"a.b/c": "d"}},
    }
    assert jsonpath(obj, '.status.conditions[?(@.type=="Ready")].status') == ["True"]
    assert jsonpath(obj, "{.status.conditions[*].type}") == ["Ready", "Synced"]
    assert jsonpath(obj, ".status.conditions[1].status") == ["False"]
    assert jsonpath(obj, ".metadata.labels['a.b/c']") == ["d"]
    assert jsonpath(obj, ".spec.missing") == []
    now = dt.datetime(2024, 1, 3, 12, 0, 0, tzinfo=dt.UTC)
    assert age("2024-01-03T11:59:15Z", now) == "45s"
    assert age("2024-01-03T11:56:48Z", now) == "3m12s"
    assert age("2024-01-03T07:00:00Z", now) == "5h"
    assert age("2024-01-01T00:00:00Z", now) == "2d"


def test_structural_schema_prunes_defaults_and_validates() -> None:
    schema = StructuralSchema(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "port": {"x-kubernetes-int-or-string": True},
                        "note": {"type": "string", "nullable": True},
                        "mode": {"type": "string", "default": "fast"},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    },
                }
            },
        }
    )
    pruned, unknown = schema.prune(
        {"metadata": {"name": "x"}, "spec": {"port": "http", "junk": 1, "extra": {"k": 1}}}
    )
    assert unknown == ["spec.junk"]
    assert pruned == {"metadata": {"name": "x"}, "spec": {"port": "http", "extra": {"k": 1}}}
    assert schema.default(pruned)["spec"]["mode"] == "fast"
    assert schema.validate({"spec": {"port": 80, "note": None}}) == []
    [cause] = schema.validate({"spec": {"port": 1.5}})
    assert cause.field == "spec.port"


def test_cel_rules_and_transition_rules() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.min <= self.max", "message": "min above max"},
                    {
                        "rule": "self.max >= oldSelf.max",
                        "message": "max cannot shrink",
                        "fieldPath": ".max",
                    },
                ],
                "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
            }
        },
    }
    rules = CelRules(schema)
    assert rules.check({"spec": {"min": 1, "max": 2}}, None) == []
    [bad] = rules.check({"spec": {"min": 3, "max": 2}}, None)
    assert (bad.field, bad.message) == ("spec", 'Invalid value: "object": min above max')
    [shrunk] = rules.check({"spec": {"min": 1, "max": 2}}, {"spec": {"min": 1, "max": 5}})
    assert (shrunk.field, shrunk.message) == (
        "spec.max",
        'Invalid value: "object": max cannot shrink',
    )
    with pytest.raises(RuleError):
        CelRules({"type": "object", "x-kubernetes-validations": [{"rule": "self >"}]})


def _pb(number: int, value: bytes | int) -> bytes:
    """One protobuf field: a varint (wire type 0) or length-delimited (2), lengths < 128."""
    if isinstance(value, int):
        return bytes([number << 3, value])
    return bytes([number << 3 | 2, len(value)]) + value


def test_a_protobuf_secret_decodes_as_helm_writes_it() -> None:
    meta = (
        _pb(1, b"sh.helm.release.v1.rk.v1")
        + _pb(2, b"")
        + _pb(3, b"")
        + _pb(11, _pb(1, b"owner") + _pb(2, b"helm"))
        + _pb(11, _pb(1, b"status") + _pb(2, b"deployed"))
    )
    secret = _pb(1, meta) + _pb(2, _pb(1, b"release") + _pb(2, b"\x1f\x8b")) + _pb(3, b"t/v1")
    body = b"k8s\x00" + _pb(1, _pb(1, b"v1") + _pb(2, b"Secret")) + _pb(2, secret)
    assert protobuf.decode(body) == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "sh.helm.release.v1.rk.v1",
            "labels": {"owner": "helm", "status": "deployed"},
        },
        "data": {"release": "H4s="},
        "type": "t/v1",
    }
    options = b"k8s\x00" + _pb(1, _pb(1, b"v1") + _pb(2, b"DeleteOptions"))
    options += _pb(2, _pb(4, b"Background") + _pb(1, 0))
    assert protobuf.decode(options) == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "propagationPolicy": "Background",
        "gracePeriodSeconds": 0,
    }
    with pytest.raises(ValueError, match="Pod"):
        protobuf.decode(b"k8s\x00" + _pb(1, _pb(1, b"v1") + _pb(2, b"Pod")) + _pb(2, b""))
