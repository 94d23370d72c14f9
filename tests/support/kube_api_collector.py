"""What the real cluster's controllers do once an object is gone: pure planning functions.

When an object is removed from storage, the real garbage collector, namespace controller
and CRD finalizer react; here :func:`after_removal` returns the same reactions as
:class:`Action`s, which the cluster carries out at once (and plans again after each):

- dependents (``metadata.ownerReferences``) of the removed object: deleted (background
  propagation) when no other owner of theirs exists, else the dangling reference dropped;
- an owner in foreground deletion (``foregroundDeletion`` finalizer) whose last dependent
  this was: that finalizer removed;
- a removed StatefulSet whose ``persistentVolumeClaimRetentionPolicy.whenDeleted`` is
  ``Delete``: its claims (``<claim template>-<set>-<ordinal>`` in its namespace) deleted.
  The real StatefulSet controller gives those claims an owner reference to the set, which
  the garbage collector follows; here the set's claims are found by name instead, so a
  test's own claims need no references. Under ``Retain`` (Kubernetes' default) they stay;
- a terminating namespace that is now empty, a deleted CRD whose last object this was:
  released (removed, if no finalizer holds them).

Deletions happen synchronously after the owner's, so tests need not wait for them; a real
cluster does the same a moment later. Not emulated: ``blockOwnerDeletion`` (ignored),
cross-namespace owner checks, orphaning a set's claims (``Orphan`` deletion of a set
under ``Delete`` still deletes them).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from kube_api_resources import GroupResource

__all__ = [
    "FOREGROUND",
    "Action",
    "ObjectRef",
    "after_removal",
    "claims_deleted_with",
    "dependents_of",
    "ref_of",
]

FOREGROUND = "foregroundDeletion"
_STATEFULSETS: GroupResource = ("apps", "statefulsets")
_CLAIMS: GroupResource = ("", "persistentvolumeclaims")


@dataclass(frozen=True)
class ObjectRef:
    """Where an object is stored."""

    resource: GroupResource
    namespace: str
    name: str


@dataclass(frozen=True)
class Action:
    """``delete``: delete it (background); ``drop_owner``: remove its ownerReferences to
    ``uid``; ``unfinalize``: remove finalizer ``value``; ``release``: remove it if it is
    being deleted and nothing holds it any more."""

    kind: Literal["delete", "drop_owner", "unfinalize", "release"]
    target: ObjectRef
    value: str = ""


def ref_of(resource: GroupResource, obj: dict[str, Any]) -> ObjectRef:
    metadata = obj["metadata"]
    return ObjectRef(resource, metadata.get("namespace", ""), metadata["name"])


def _owner_uids(obj: dict[str, Any]) -> set[str]:
    return {ref.get("uid", "") for ref in obj["metadata"].get("ownerReferences") or []}


def dependents_of(
    uid: str, everything: Iterable[tuple[GroupResource, dict[str, Any]]]
) -> list[tuple[GroupResource, dict[str, Any]]]:
    """The objects that name ``uid`` among their owners."""
    return [(r, obj) for r, obj in everything if uid in _owner_uids(obj)]


def claims_deleted_with(
    statefulset: dict[str, Any], everything: Iterable[tuple[GroupResource, dict[str, Any]]]
) -> list[tuple[GroupResource, dict[str, Any]]]:
    """The claims the StatefulSet controller deletes with ``statefulset``: none unless its
    retention policy says ``whenDeleted: Delete``, else every claim named after one of its
    claim templates and its pods."""
    spec = statefulset.get("spec") or {}
    policy = spec.get("persistentVolumeClaimRetentionPolicy") or {}
    if policy.get("whenDeleted") != "Delete":
        return []
    metadata = statefulset["metadata"]
    prefixes = [
        f"{template['metadata']['name']}-{metadata['name']}-"
        for template in spec.get("volumeClaimTemplates") or []
    ]
    return [
        (resource, obj)
        for resource, obj in everything
        if resource == _CLAIMS
        and obj["metadata"].get("namespace") == metadata.get("namespace")
        and any(_ordinal_after(obj["metadata"]["name"], prefix) for prefix in prefixes)
    ]


def _ordinal_after(name: str, prefix: str) -> bool:
    return name.startswith(prefix) and name[len(prefix) :].isdigit()


def after_removal(
    resource: GroupResource,
    removed: dict[str, Any],
    everything: list[tuple[GroupResource, dict[str, Any]]],
) -> list[Action]:
    """The reactions to ``removed`` leaving storage, given all objects still stored."""
    uid = removed["metadata"].get("uid", "")
    live = {obj["metadata"].get("uid") for _, obj in everything}
    actions = []
    for dep_resource, dependent in dependents_of(uid, everything):
        others = _owner_uids(dependent) - {uid}
        target = ref_of(dep_resource, dependent)
        if others & live:
            actions.append(Action("drop_owner", target, uid))
        else:
            actions.append(Action("delete", target, uid))
    if resource == _STATEFULSETS:
        claims = claims_deleted_with(removed, everything)
        actions += [Action("delete", ref_of(r, claim), uid) for r, claim in claims]
    by_uid = {obj["metadata"].get("uid"): (r, obj) for r, obj in everything}
    for owner_uid in _owner_uids(removed):
        if owner_uid not in by_uid:
            continue
        owner_resource, owner = by_uid[owner_uid]
        waiting = FOREGROUND in (owner["metadata"].get("finalizers") or [])
        if waiting and not dependents_of(owner_uid, everything):
            actions.append(Action("unfinalize", ref_of(owner_resource, owner), FOREGROUND))
    namespace = removed["metadata"].get("namespace")
    if namespace:
        actions.append(Action("release", ObjectRef(("", "namespaces"), "", namespace)))
    if resource[0] and resource[0] != "apiextensions.k8s.io":
        crd = ObjectRef(
            ("apiextensions.k8s.io", "customresourcedefinitions"),
            "",
            f"{resource[1]}.{resource[0]}",
        )
        actions.append(Action("release", crd))
    return actions
