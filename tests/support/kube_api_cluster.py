"""The emulated cluster: every read and write the API offers, over the store, thread-safe.

:class:`Cluster` is what the HTTP handlers call and what tests use in-process (the
``*_object`` methods take kind names and plain dicts). A write runs, under the store's
lock: admission (``kube_api_admission``), for custom kinds pruning, defaulting, schema and
CEL validation (``kube_api_schema``, ``kube_api_cel``), for CRDs serving their kinds
(``kube_api_crd``), the resourceVersion precondition, then the store write, then the
reactions a real cluster's controllers would have (``kube_api_collector``).

Deletion: an object with finalizers (or deleted with ``propagationPolicy=Foreground``,
which adds ``foregroundDeletion``) gets ``deletionTimestamp`` and stays until an update
empties its finalizers; ``Orphan`` drops the dependents' references first; ``Background``
(the default) removes it and then its dependents. A namespace or CRD being deleted has its
objects deleted and goes once they are gone.

Server-side apply (``application/apply-patch+yaml``) is approximated: the object is created
if absent, else the applied configuration is merged in as a strategic merge patch would;
no field ownership is tracked (``managedFields`` are not kept), so fields are never
removed by omission.
"""

from __future__ import annotations

import datetime as dt
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import kube_api_admission as admission
import kube_api_patch as patching
import kube_api_scale as scaling
import yaml
from kube_api_builtin_schema import BuiltinSchemas
from kube_api_collector import FOREGROUND, Action, after_removal, dependents_of, ref_of
from kube_api_crd import CustomVersion, accepted_status, compile_crd
from kube_api_errors import (
    ApiError,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    invalid,
    not_found,
    unsupported_media_type,
)
from kube_api_resources import Catalog, GroupResource, ResourceType
from kube_api_selectors import field_selector, label_selector
from kube_api_store import Change, Store, Subscriber

__all__ = ["PATCH_TYPES", "Cluster", "Outcome"]

#: Content-Type → patch format.
PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/json-patch+json": "json",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
}
_CRDS: GroupResource = ("apiextensions.k8s.io", "customresourcedefinitions")
_NAMESPACES: GroupResource = ("", "namespaces")
_INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass
class Outcome:
    """A write's result: the stored object, the warnings to send, whether it was created."""

    object: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    created: bool = False


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Cluster:
    """The objects of one emulated cluster and the rules they are written by."""

    def __init__(self, now: Callable[[], dt.datetime] = _utcnow, history: int = 10_000) -> None:
        self.now = now
        self.store = Store(history)
        self.catalog = Catalog()
        self.builtin_schemas = BuiltinSchemas()
        self._versions: dict[tuple[str, str, str], CustomVersion] = {}
        namespaces = self.catalog.find("namespaces")
        for name in _INITIAL_NAMESPACES:
            self.create(namespaces, "", {"metadata": {"name": name}})

    # -- reading -------------------------------------------------------------------------

    def resolve(self, group: str, version: str, plural: str) -> ResourceType:
        rt = self.catalog.lookup(group, version, plural)
        if rt is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return rt

    def _present(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        obj["apiVersion"] = rt.api_version
        return obj

    def _existing(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        found = self.store.get(rt.group_resource, namespace if rt.namespaced else "", name)
        if found is None:
            raise not_found(rt.plural, rt.group, name)
        return found

    def read(
        self, rt: ResourceType, namespace: str, name: str, subresource: str = ""
    ) -> dict[str, Any]:
        obj = self._present(rt, self._existing(rt, namespace, name))
        return scaling.scale_of(rt, obj) if subresource == "scale" else obj

    def query(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: str | None = None,
        fields: str | None = None,
    ) -> tuple[list[dict[str, Any]], int]:
        """The matching objects and the revision they were read at."""
        wanted_labels, wanted_fields = label_selector(labels), field_selector(fields)
        with self.store.locked():
            objects = self.store.objects(rt.group_resource, namespace if rt.namespaced else None)
            revision = self.store.revision
        found = [self._present(rt, o) for o in objects if wanted_labels(o) and wanted_fields(o)]
        return found, revision

    # -- writing -------------------------------------------------------------------------

    def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: dict[str, Any],
        *,
        dry_run: bool = False,
        validation: str = "Warn",
    ) -> Outcome:
        with self.store.locked():
            if rt.namespaced:
                self._check_namespace(namespace)
            obj = admission.for_create(rt, body, namespace, self.now())
            warnings = self._admit(rt, obj, None, validation)
            metadata = obj["metadata"]
            if self.store.get(rt.group_resource, metadata.get("namespace", ""), metadata["name"]):
                raise already_exists(rt.plural, rt.group, metadata["name"])
            stored = obj if dry_run else self._put(rt, obj)
            return Outcome(self._present(rt, stored), warnings, created=True)

    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: dict[str, Any],
        *,
        subresource: str = "",
        dry_run: bool = False,
        validation: str = "Warn",
    ) -> Outcome:
        with self.store.locked():
            old = self._existing(rt, namespace, name)
            wanted = body.get("metadata", {}).get("resourceVersion")
            if wanted and wanted != old["metadata"]["resourceVersion"]:
                raise conflict(
                    rt.plural,
                    rt.group,
                    name,
                    "the object has been modified; please "
                    "apply your changes to the latest version and try again",
                )
            if subresource == "scale":
                body = scaling.with_scale(rt, old, body)
                subresource = ""
            obj = admission.for_update(rt, body, old, subresource)
            warnings = self._admit(rt, obj, old, validation)
            if admission.unchanged(obj, old):
                return Outcome(self._present(rt, old), warnings)
            stored = obj if dry_run else self._write(rt, obj)
            return Outcome(self._present(rt, stored), warnings)

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        patch: Any,
        *,
        subresource: str = "",
        dry_run: bool = False,
        validation: str = "Warn",
    ) -> Outcome:
        kind = PATCH_TYPES.get(content_type.split(";")[0].strip())
        if kind is None or (kind == "strategic" and not rt.builtin):
            raise unsupported_media_type(
                ", ".join(k for k, v in PATCH_TYPES.items() if v != "strategic" or rt.builtin)
            )
        with self.store.locked():
            existing = self.store.get(rt.group_resource, namespace if rt.namespaced else "", name)
            if existing is None and kind == "apply" and not subresource:
                body = _decoded(patch)
                return self.create(rt, namespace, body, dry_run=dry_run, validation=validation)
            if existing is None:
                raise not_found(rt.plural, rt.group, name)
            current = self._present(rt, existing)
            if subresource == "scale":
                current = scaling.scale_of(rt, current)
            patched = self._patched(rt, current, kind, patch)
            return self.update(
                rt,
                namespace,
                name,
                patched,
                subresource=subresource,
                dry_run=dry_run,
                validation=validation,
            )

    def _patched(
        self, rt: ResourceType, current: dict[str, Any], kind: str, patch: Any
    ) -> dict[str, Any]:
        patch = _decoded(patch)
        if kind == "json":
            result = patching.json_patch(current, patch)
        elif kind == "merge":
            result = patching.merge_patch(current, patch)
        else:
            schema = self.builtin_schemas.node(rt.group, rt.version, current.get("kind", rt.kind))
            result = patching.strategic_merge_patch(current, patch, schema)
        if not isinstance(result, dict):
            raise bad_request("a patch must leave an object")
        return result

    def delete(
        self, rt: ResourceType, namespace: str, name: str, options: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Delete (``options`` is a DeleteOptions body); the object if it stays (finalizers),
        else a success Status."""
        options = options or {}
        with self.store.locked():
            old = self._existing(rt, namespace, name)
            _check_preconditions(rt, old, options.get("preconditions") or {})
            if "All" in (options.get("dryRun") or []):
                return self._present(rt, old)
            policy = options.get("propagationPolicy") or (
                "Orphan" if options.get("orphanDependents") else "Background"
            )
            if policy not in ("Background", "Foreground", "Orphan"):
                raise bad_request(f"unsupported propagationPolicy: {policy!r}")
            kept = self._delete(rt, old, policy)
            if kept is not None:
                return self._present(rt, kept)
        details = {"name": name, "kind": rt.plural, "uid": old["metadata"].get("uid")}
        if rt.group:
            details["group"] = rt.group
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }

    def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: str | None,
        fields: str | None,
        options: dict[str, Any],
    ) -> list[dict[str, Any]]:
        with self.store.locked():
            victims, _ = self.query(rt, namespace, labels, fields)
            for victim in victims:
                metadata = victim["metadata"]
                self.delete(rt, metadata.get("namespace", ""), metadata["name"], options)
        return victims

    def on_change(self, subscriber: Subscriber) -> Callable[[], None]:
        """Observe every committed write (called under the lock: be quick, do not write)."""
        return self.store.subscribe(subscriber)

    # -- internals -----------------------------------------------------------------------

    def _check_namespace(self, namespace: str) -> None:
        found = self.store.get(_NAMESPACES, "", namespace)
        if found is None:
            raise not_found("namespaces", "", namespace)
        if found["metadata"].get("deletionTimestamp"):
            raise forbidden(
                f"unable to create new content in namespace {namespace} because it "
                "is being terminated"
            )

    def _admit(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None, validation: str
    ) -> list[str]:
        """Check (and for custom kinds prune and default) ``obj`` in place; the warnings."""
        if rt.group_resource == _CRDS:
            compile_crd(obj)
            obj["status"] = accepted_status(obj, self.now())
            return []
        version = self._versions.get((rt.group, rt.version, rt.plural))
        if version is None:
            return []
        pruned, unknown = version.schema.prune(obj)
        if unknown and validation == "Strict":
            listed = ", ".join(f'unknown field "{u}"' for u in unknown)
            raise bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a '
                f"{rt.kind}: strict decoding error: {listed}"
            )
        checked = version.schema.default(pruned)
        causes = version.schema.validate(checked) or version.rules.check(checked, old)
        if causes:
            raise invalid(rt.kind, rt.group, obj["metadata"].get("name", ""), causes)
        obj.clear()
        obj.update(checked)
        return [f'unknown field "{u}"' for u in unknown] if validation == "Warn" else []

    def _put(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        stored = self.store.put(rt.group_resource, obj)
        if rt.group_resource == _CRDS:
            self._serve(stored)
        return stored

    def _write(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """Store an update, or remove the object if it was being deleted and nothing holds
        it any more."""
        if self._releasable(rt.group_resource, obj):
            return self._remove(rt.group_resource, obj)
        return self._put(rt, obj)

    def _serve(self, crd: dict[str, Any]) -> None:
        name = crd["metadata"]["name"]
        versions = compile_crd(crd)
        for key in [k for k in self._versions if f"{k[2]}.{k[0]}" == name]:
            del self._versions[key]
        for version in versions:
            rt = version.type
            self._versions[(rt.group, rt.version, rt.plural)] = version
        self.catalog.install(name, [v.type for v in versions])

    def _releasable(self, resource: GroupResource, obj: dict[str, Any]) -> bool:
        """Whether ``obj`` is being deleted and nothing holds it any more."""
        metadata = obj["metadata"]
        if not metadata.get("deletionTimestamp") or metadata.get("finalizers"):
            return False
        return not self._held(resource, obj)

    def _held(self, resource: GroupResource, obj: dict[str, Any]) -> bool:
        """Whether objects still in it keep a namespace or CRD from going."""
        name = obj["metadata"]["name"]
        if resource == _NAMESPACES:
            return any(self.store.objects(r, name) for r in self.store.resources() if r != resource)
        if resource == _CRDS:
            spec = obj.get("spec") or {}
            return bool(self.store.objects((spec.get("group", ""), spec["names"]["plural"])))
        return False

    def _remove(self, resource: GroupResource, obj: dict[str, Any]) -> dict[str, Any]:
        metadata = obj["metadata"]
        removed = self.store.remove(
            resource, metadata.get("namespace", ""), metadata["name"], final=obj
        )
        if removed is None:
            return obj
        if resource == _CRDS:
            self.catalog.uninstall(metadata["name"])
            self._versions = {
                k: v for k, v in self._versions.items() if f"{k[2]}.{k[0]}" != metadata["name"]
            }
        self._settle(resource, removed)
        return removed

    def _everything(self) -> list[tuple[GroupResource, dict[str, Any]]]:
        return [(r, obj) for r in self.store.resources() for obj in self.store.objects(r)]

    def _settle(self, resource: GroupResource, removed: dict[str, Any]) -> None:
        """Carry out the reactions to a removal, and to the removals they cause."""
        pending = deque(after_removal(resource, removed, self._everything()))
        while pending:
            action = pending.popleft()
            current = self.store.get(
                action.target.resource, action.target.namespace, action.target.name
            )
            if current is not None:
                self._carry_out(action, current)

    def _carry_out(self, action: Action, current: dict[str, Any]) -> None:
        rt = self.catalog.storage_type(*action.target.resource)
        if rt is None:
            return
        metadata = current["metadata"]
        if action.kind == "delete":
            self._delete(rt, current, "Background")
        elif action.kind in ("drop_owner", "unfinalize"):
            key = "ownerReferences" if action.kind == "drop_owner" else "finalizers"
            kept = [
                v
                for v in metadata.get(key, [])
                if (v.get("uid") if isinstance(v, dict) else v) != action.value
            ]
            metadata.pop(key, None)
            metadata |= {key: kept} if kept else {}
            self._write(rt, current)
        elif self._releasable(action.target.resource, current):
            self._remove(action.target.resource, current)

    def _delete(self, rt: ResourceType, old: dict[str, Any], policy: str) -> dict[str, Any] | None:
        """Start deleting ``old``; the object if it stays for now, None if it is gone."""
        uid, resource = old["metadata"].get("uid", ""), rt.group_resource
        if policy == "Orphan":
            for dep_resource, dependent in dependents_of(uid, self._everything()):
                self._carry_out(
                    Action("drop_owner", ref_of(dep_resource, dependent), uid), dependent
                )
        metadata = old["metadata"]
        finalizers = list(metadata.get("finalizers") or [])
        if policy == "Foreground" and dependents_of(uid, self._everything()):
            finalizers = [*finalizers, FOREGROUND] if FOREGROUND not in finalizers else finalizers
        if metadata.get("deletionTimestamp"):
            return old
        if not finalizers and not self._held(resource, old):
            self._remove(resource, old)
            return None
        metadata["finalizers"] = finalizers
        metadata["deletionTimestamp"] = admission.stamp(self.now())
        metadata["deletionGracePeriodSeconds"] = 0
        metadata["generation"] = int(metadata.get("generation", 1)) + 1
        if resource == _NAMESPACES:
            old.setdefault("status", {})["phase"] = "Terminating"
        kept = self.store.put(resource, old)
        self._cascade(rt, kept, policy)
        return self.store.get(resource, metadata.get("namespace", ""), metadata["name"])

    def _cascade(self, rt: ResourceType, obj: dict[str, Any], policy: str) -> None:
        """What starts when ``obj`` gets its deletionTimestamp: its contents and (with
        foreground deletion) its dependents are deleted."""
        name, resource = obj["metadata"]["name"], rt.group_resource
        victims: list[tuple[GroupResource, dict[str, Any]]] = []
        if resource == _NAMESPACES:
            victims = [
                (r, o)
                for r in self.store.resources()
                if r != resource
                for o in self.store.objects(r, name)
            ]
        elif resource == _CRDS:
            spec = obj["spec"]
            custom = (spec["group"], spec["names"]["plural"])
            victims = [(custom, o) for o in self.store.objects(custom)]
        if policy == "Foreground":
            victims += dependents_of(obj["metadata"].get("uid", ""), self._everything())
        for victim_resource, victim in victims:
            victim_rt = self.catalog.storage_type(*victim_resource)
            if victim_rt is not None:
                self._delete(victim_rt, victim, "Background")
        then = Action("unfinalize", ref_of(resource, obj), FOREGROUND)
        if policy != "Foreground" or dependents_of(obj["metadata"]["uid"], self._everything()):
            then = Action("release", ref_of(resource, obj))
        current = self.store.get(resource, obj["metadata"].get("namespace", ""), name)
        if current is not None:
            self._carry_out(then, current)

    # -- in-process conveniences for tests ----------------------------------------------

    def kind(self, name: str) -> ResourceType:
        """The served type called ``name`` (plural, kind, short name; ``.group`` optional)."""
        return self.catalog.find(name)

    def _type_of(self, body: dict[str, Any]) -> ResourceType:
        rt = self.catalog.by_kind(str(body.get("apiVersion")), str(body.get("kind")))
        if rt is None:
            raise KeyError(f"{body.get('apiVersion')} {body.get('kind')} is not served")
        return rt

    def get_object(self, kind: str, name: str, namespace: str = "default") -> dict[str, Any]:
        return self.read(self.kind(kind), namespace, name)

    def find_object(
        self, kind: str, name: str, namespace: str = "default"
    ) -> dict[str, Any] | None:
        try:
            return self.get_object(kind, name, namespace)
        except ApiError as error:
            if error.code == 404:
                return None
            raise

    def list_objects(
        self, kind: str, namespace: str | None = None, labels: str | None = None
    ) -> list[dict[str, Any]]:
        return self.query(self.kind(kind), namespace, labels)[0]

    def create_object(self, body: dict[str, Any]) -> dict[str, Any]:
        namespace = body.get("metadata", {}).get("namespace", "default")
        return self.create(self._type_of(body), namespace, body).object

    def patch_object(
        self,
        kind: str,
        name: str,
        patch: Any,
        namespace: str = "default",
        subresource: str = "",
        content_type: str = "application/merge-patch+json",
    ) -> dict[str, Any]:
        return self.patch(
            self.kind(kind), namespace, name, content_type, patch, subresource=subresource
        ).object

    def delete_object(
        self, kind: str, name: str, namespace: str = "default", propagation: str = "Background"
    ) -> dict[str, Any]:
        return self.delete(self.kind(kind), namespace, name, {"propagationPolicy": propagation})

    def changes(self) -> tuple[list[Change], Callable[[], None]]:
        """A list that fills with every change from now on, and its unsubscriber."""
        seen: list[Change] = []
        return seen, self.on_change(seen.append)


def _decoded(patch: Any) -> Any:
    if isinstance(patch, bytes | str):
        return yaml.safe_load(patch)
    return patch


def _check_preconditions(rt: ResourceType, old: dict[str, Any], wanted: dict[str, Any]) -> None:
    metadata = old["metadata"]
    for key in ("uid", "resourceVersion"):
        if wanted.get(key) and wanted[key] != metadata.get(key):
            raise conflict(
                rt.plural,
                rt.group,
                metadata["name"],
                f"Precondition failed: {key}: "
                f"{wanted[key]}, {key} in object meta: {metadata.get(key)}",
            )
