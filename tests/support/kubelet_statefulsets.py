"""The StatefulSet controller of the kubelet harness: pods and claims from each set.

Pure functions of a StatefulSet and the pods it owns (:func:`plan`, :func:`status`), and
:func:`sync`, which applies them through the emulated cluster. As Kubernetes' controller:

- pods ``<set>-<ordinal>`` for ordinals ``0..replicas-1``, rendered from the *current*
  template: labels (plus ``controller-revision-hash``, ``statefulset.kubernetes.io/
  pod-name``, ``apps.kubernetes.io/pod-index``), annotations, the spec with
  ``hostname``/``subdomain`` (the pod's DNS name through ``serviceName``) and a
  ``persistentVolumeClaim`` volume per claim template, owned by the set (controller
  reference), bound to the harness's node;
- claims ``<template>-<pod>`` created before their pod, with
  ``kubernetes.io/pvc-protection``, and never deleted here: scaling down retains them;
  a set removed under ``persistentVolumeClaimRetentionPolicy.whenDeleted: Delete`` takes
  them along through the emulated API server's garbage collection
  (``kube_api_collector``);
- ``Parallel``: every missing pod at once, every surplus pod deleted at once;
  ``OrderedReady``: one at a time, the next once all before it are Ready;
- ``OnDelete``: a pod runs the template it was made from until someone deletes it;
  ``RollingUpdate``: once every pod is Ready, the highest-ordinal pod at or above the
  partition whose revision is not the set's is deleted (then recreated from the current
  template);
- a pod whose name is taken by one still terminating is created once that one is gone.

Pods carry the harness's finalizer (:data:`POD_FINALIZER`): the emulator has no graceful
deletion, so a deleted pod would vanish while its process still runs. With the finalizer
it stays, Terminating, until the kubelet has stopped it, as on a real cluster.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kube_api_cluster import Cluster
from kube_api_errors import ApiError

__all__ = [
    "POD_FINALIZER",
    "PVC_PROTECTION",
    "Plan",
    "claims_for",
    "is_ready",
    "ordinal",
    "owned_by",
    "plan",
    "pod_for",
    "revision",
    "status",
    "sync",
    "tolerating",
]

POD_FINALIZER: Final = "tests.rocketkube.io/kubelet"
PVC_PROTECTION: Final = "kubernetes.io/pvc-protection"
REVISION_LABEL: Final = "controller-revision-hash"
POD_NAME_LABEL: Final = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL: Final = "apps.kubernetes.io/pod-index"

Obj = dict[str, Any]


@dataclass
class Plan:
    """What one pass of the controller does for one set."""

    claims: list[Obj] = field(default_factory=list)
    create: list[Obj] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)


def revision(sts: Mapping[str, Any]) -> str:
    """The set's current revision: ``<set>-<hash of its template>``."""
    template = json.dumps(sts["spec"]["template"], sort_keys=True, separators=(",", ":"))
    return f"{sts['metadata']['name']}-{hashlib.sha256(template.encode()).hexdigest()[:10]}"


def is_ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _terminating(pod: Mapping[str, Any]) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def owned_by(sts: Mapping[str, Any], objects: Iterable[Obj]) -> list[Obj]:
    """The objects whose controller reference is ``sts``."""
    uid = sts["metadata"]["uid"]
    return [
        o
        for o in objects
        if any(
            r.get("uid") == uid and r.get("controller")
            for r in o["metadata"].get("ownerReferences") or []
        )
    ]


def ordinal(sts_name: str, pod_name: str) -> int | None:
    prefix = f"{sts_name}-"
    tail = pod_name[len(prefix) :]
    return int(tail) if pod_name.startswith(prefix) and tail.isdigit() else None


def claim_name(template: Mapping[str, Any], pod_name: str) -> str:
    return f"{template['metadata']['name']}-{pod_name}"


def claims_for(sts: Mapping[str, Any], pod_name: str) -> list[Obj]:
    """The claims pod ``pod_name`` of the set mounts, as the controller creates them."""
    metadata, spec = sts["metadata"], sts["spec"]
    out = []
    for template in spec.get("volumeClaimTemplates") or []:
        labels = {**(template["metadata"].get("labels") or {})}
        labels.update((spec.get("selector") or {}).get("matchLabels") or {})
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": claim_name(template, pod_name),
                    "namespace": metadata["namespace"],
                    "labels": labels,
                    "finalizers": [PVC_PROTECTION],
                },
                "spec": {"volumeMode": "Filesystem", **copy.deepcopy(template.get("spec") or {})},
            }
        )
    return out


def pod_for(sts: Mapping[str, Any], index: int, node: str) -> Obj:
    """Pod ``index`` of the set, from its current template."""
    metadata, spec = sts["metadata"], sts["spec"]
    name = f"{metadata['name']}-{index}"
    template = copy.deepcopy(spec["template"])
    labels = {
        **(template.get("metadata", {}).get("labels") or {}),
        REVISION_LABEL: revision(sts),
        POD_NAME_LABEL: name,
        POD_INDEX_LABEL: str(index),
    }
    pod_spec = template.get("spec") or {}
    claimed = {t["metadata"]["name"] for t in spec.get("volumeClaimTemplates") or []}
    volumes = [v for v in pod_spec.get("volumes") or [] if v.get("name") not in claimed]
    volumes += [
        {"name": t["metadata"]["name"], "persistentVolumeClaim": {"claimName": claim_name(t, name)}}
        for t in spec.get("volumeClaimTemplates") or []
    ]
    pod_spec |= {"volumes": volumes, "hostname": name, "nodeName": node}
    if spec.get("serviceName"):
        pod_spec["subdomain"] = spec["serviceName"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": metadata["namespace"],
            "labels": labels,
            "annotations": dict(template.get("metadata", {}).get("annotations") or {}),
            "finalizers": [POD_FINALIZER],
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "name": metadata["name"],
                    "uid": metadata["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": pod_spec,
    }


def plan(
    sts: Mapping[str, Any],
    pods: Iterable[Obj],
    taken: Iterable[str],
    claims: Iterable[str],
    node: str,
) -> Plan:
    """One pass for ``sts``: ``pods`` are the ones it owns, ``taken`` every pod name in its
    namespace (owned or not), ``claims`` the claim names there."""
    spec = sts["spec"]
    replicas = int(spec.get("replicas", 1))
    parallel = spec.get("podManagementPolicy") == "Parallel"
    name = sts["metadata"]["name"]
    by_ordinal = {o: p for p in pods if (o := ordinal(name, p["metadata"]["name"])) is not None}
    taken, claims = set(taken), set(claims)
    out = Plan()
    for index in range(replicas):
        pod = by_ordinal.get(index)
        if pod is not None:
            if not parallel and not (is_ready(pod) and not _terminating(pod)):
                return out
            continue
        pod_name = f"{name}-{index}"
        if pod_name in taken:
            if parallel:
                continue
            return out
        out.claims += [c for c in claims_for(sts, pod_name) if c["metadata"]["name"] not in claims]
        out.create.append(pod_for(sts, index, node))
        if not parallel:
            return out
    surplus = sorted((o for o in by_ordinal if o >= replicas), reverse=True)
    alive = [o for o in surplus if not _terminating(by_ordinal[o])]
    if alive:
        out.delete += [
            by_ordinal[o]["metadata"]["name"] for o in (alive if parallel else alive[:1])
        ]
        return out
    out.delete += _rolled(sts, by_ordinal, replicas)
    return out


def _rolled(sts: Mapping[str, Any], by_ordinal: Mapping[int, Obj], replicas: int) -> list[str]:
    """RollingUpdate: the pod to replace now, if any (one at a time, all others Ready)."""
    strategy = sts["spec"].get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return []
    current = [by_ordinal[o] for o in range(replicas) if o in by_ordinal]
    if len(current) < replicas or not all(is_ready(p) and not _terminating(p) for p in current):
        return []
    partition = int((strategy.get("rollingUpdate") or {}).get("partition", 0))
    wanted = revision(sts)
    stale = [
        p
        for o, p in sorted(by_ordinal.items(), reverse=True)
        if o >= partition and p["metadata"].get("labels", {}).get(REVISION_LABEL) != wanted
    ]
    return [stale[0]["metadata"]["name"]] if stale else []


def status(sts: Mapping[str, Any], pods: Iterable[Obj]) -> Obj:
    """The set's status from the pods it owns."""
    live = [p for p in pods if not _terminating(p)]
    wanted = revision(sts)
    previous = sts.get("status") or {}
    revisions = [p["metadata"].get("labels", {}).get(REVISION_LABEL) for p in live]
    updated = sum(1 for r in revisions if r == wanted)
    replicas = int(sts["spec"].get("replicas", 1))
    current_revision = previous.get("currentRevision") or wanted
    if updated == len(live) == replicas:
        current_revision = wanted
    ready = sum(1 for p in live if is_ready(p))
    return {
        "observedGeneration": sts["metadata"].get("generation", 1),
        "replicas": len(live),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "currentReplicas": sum(1 for r in revisions if r == current_revision),
        "updatedReplicas": updated,
        "currentRevision": current_revision,
        "updateRevision": wanted,
        "collisionCount": 0,
    }


def sync(cluster: Cluster, node: str) -> None:
    """One pass over every StatefulSet: create and delete pods and claims, write status."""
    pods = cluster.list_objects("pods")
    claims = cluster.list_objects("persistentvolumeclaims")
    for sts in cluster.list_objects("statefulsets"):
        metadata = sts["metadata"]
        namespace = metadata["namespace"]
        if metadata.get("deletionTimestamp"):
            continue
        here = [p for p in pods if p["metadata"]["namespace"] == namespace]
        owned = owned_by(sts, here)
        step = plan(
            sts,
            owned,
            (p["metadata"]["name"] for p in here),
            (c["metadata"]["name"] for c in claims if c["metadata"]["namespace"] == namespace),
            node,
        )
        for obj in [*step.claims, *step.create]:
            tolerating((404, 409), functools.partial(cluster.create_object, obj))
        for pod_name in step.delete:
            tolerating(
                (404,), functools.partial(cluster.delete_object, "pods", pod_name, namespace)
            )
        new = status(sts, owned)
        if {k: (sts.get("status") or {}).get(k) for k in new} != new:
            patch = functools.partial(
                cluster.patch_object, "statefulsets", metadata["name"], {"status": new}, namespace
            )
            tolerating((404, 409), functools.partial(patch, subresource="status"))


def tolerating(codes: tuple[int, ...], call: Callable[[], object]) -> None:
    """Make a write, ignoring ApiErrors with ``codes`` (a race with another writer)."""
    try:
        call()
    except ApiError as error:
        if error.code not in codes:
            raise
