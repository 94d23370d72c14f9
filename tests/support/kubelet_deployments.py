"""The Deployment controller of the kubelet harness (its ReplicaSets' part included): pods
from each Deployment's template, replaced when the template changes, and its status.

Pure functions of a Deployment and the pods it owns (:func:`template_hash`, :func:`plan`,
:func:`status`), and :func:`sync`, which applies them through the emulated cluster. As
Kubernetes' controllers do, minimally:

- pods ``<deployment>-<hash>-<suffix>`` (the API server's ``generateName``), ``<hash>``
  the template's (label ``pod-template-hash``), with the template's labels, annotations
  and spec, owned by the Deployment (controller reference: Kubernetes puts a ReplicaSet
  per hash in between, which nothing here reads), bound to the harness's node;
- ``spec.replicas`` active pods of the current hash: one deleted or gone is replaced at
  once (a terminating pod no longer counts), surplus ones deleted, not ready ones first,
  then the newest;
- a template change: ``RollingUpdate`` creates new pods up to ``replicas + maxSurge``
  and deletes old ones while ``replicas - maxUnavailable`` stay available (not ready ones
  first); ``Recreate`` deletes every old pod and creates the new ones once all are gone;
- the Deployment deleted: its pods follow through the emulated API server's garbage
  collection (``kube_api_collector``), each stopped by the kubelet before it goes
  (the harness's finalizer, see ``kubelet_statefulsets``);
- status: ``replicas``, ``updatedReplicas``, ``readyReplicas``, ``availableReplicas``
  (a Ready pod counts as available: ``minReadySeconds`` is not honoured),
  ``unavailableReplicas``, ``observedGeneration`` and the ``Available`` and
  ``Progressing`` conditions. Not emulated: ``paused``, progress deadlines, revision
  history.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kube_api_cluster import Cluster
from kubelet_statefulsets import POD_FINALIZER, is_ready, owned_by, tolerating

__all__ = ["HASH_LABEL", "Plan", "plan", "pod_for", "rolling_bounds", "status", "sync"]

HASH_LABEL: Final = "pod-template-hash"
_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' rand.SafeEncodeString

Obj = dict[str, Any]


@dataclass
class Plan:
    """What one pass of the controller does for one Deployment."""

    create: list[Obj] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)


def template_hash(deployment: Mapping[str, Any]) -> str:
    """The current template's hash, ten characters of Kubernetes' safe alphabet."""
    template = json.dumps(deployment["spec"]["template"], sort_keys=True, separators=(",", ":"))
    number = int.from_bytes(hashlib.sha256(template.encode()).digest()[:8], "big")
    out = []
    for _ in range(10):
        number, digit = divmod(number, len(_ALPHABET))
        out.append(_ALPHABET[digit])
    return "".join(out)


def _hash_of(pod: Mapping[str, Any]) -> str | None:
    labels: Mapping[str, str] = pod["metadata"].get("labels") or {}
    return labels.get(HASH_LABEL)


def _active(pod: Mapping[str, Any]) -> bool:
    """Counted by its ReplicaSet: not being deleted, not finished."""
    phase = (pod.get("status") or {}).get("phase")
    finished = str(phase) in ("Succeeded", "Failed")
    return not pod["metadata"].get("deletionTimestamp") and not finished


def _resolve(value: int | str, replicas: int, round_up: bool) -> int:
    """``maxSurge``/``maxUnavailable``: a number, or a percentage of ``replicas``."""
    if isinstance(value, int):
        return value
    share = replicas * int(value.rstrip("%")) / 100
    return math.ceil(share) if round_up else math.floor(share)


def _recreates(deployment: Mapping[str, Any]) -> bool:
    strategy: Mapping[str, Any] = deployment["spec"].get("strategy") or {}
    return str(strategy.get("type", "RollingUpdate")) == "Recreate"


def rolling_bounds(deployment: Mapping[str, Any]) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) as pod counts; (0, 0) under ``Recreate``."""
    if _recreates(deployment):
        return 0, 0
    spec = deployment["spec"]
    rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
    replicas = int(spec.get("replicas", 1))
    surge = _resolve(rolling.get("maxSurge", "25%"), replicas, round_up=True)
    unavailable = _resolve(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
    return (1, 0) if surge == unavailable == 0 else (surge, unavailable)


def pod_for(deployment: Mapping[str, Any], node: str) -> Obj:
    """A new pod of the Deployment's current template (named by the API server)."""
    metadata = deployment["metadata"]
    template = copy.deepcopy(deployment["spec"]["template"])
    pod_hash = template_hash(deployment)
    meta = template.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{metadata['name']}-{pod_hash}-",
            "namespace": metadata["namespace"],
            "labels": {**(meta.get("labels") or {}), HASH_LABEL: pod_hash},
            "annotations": dict(meta.get("annotations") or {}),
            "finalizers": [POD_FINALIZER],
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": metadata["name"],
                    "uid": metadata["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {**(template.get("spec") or {}), "nodeName": node},
    }


def _deletion_order(pods: Iterable[Obj]) -> list[Obj]:
    """Pods in the order a ReplicaSet deletes them: not ready first, then the newest."""
    newest = sorted(
        pods,
        key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]),
        reverse=True,
    )
    return sorted(newest, key=is_ready)


def _names(pods: Iterable[Obj]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def plan(deployment: Mapping[str, Any], pods: Iterable[Obj], node: str) -> Plan:
    """One pass for ``deployment``; ``pods`` are the ones it owns."""
    pods = list(pods)
    replicas = int(deployment["spec"].get("replicas", 1))
    wanted = template_hash(deployment)
    active = [p for p in pods if _active(p)]
    new = [p for p in active if _hash_of(p) == wanted]
    old = [p for p in active if _hash_of(p) != wanted]
    if _recreates(deployment):  # the old pods go, all of them, before a new one comes
        if old:
            return Plan(delete=_names(old))
        if any(_hash_of(p) != wanted for p in pods):
            return Plan()
    if not old:
        missing = replicas - len(new)
        return Plan(
            create=[pod_for(deployment, node) for _ in range(missing)],
            delete=_names(_deletion_order(new)[: max(0, -missing)]),
        )
    surge, unavailable = rolling_bounds(deployment)
    total = len(new) + len(old)
    create = max(0, min(replicas - len(new), replicas + surge - total))
    new_unavailable = sum(1 for p in new if not is_ready(p))
    room = total - (replicas - unavailable) - new_unavailable
    return Plan(
        create=[pod_for(deployment, node) for _ in range(create)],
        delete=_names(_deletion_order(old)[: max(0, room)]),
    )


def _condition(
    previous: Mapping[str, Mapping[str, Any]], kind: str, true: bool, reason: str, now: str
) -> Obj:
    """A condition; its times kept while its status and reason are unchanged."""
    value = "True" if true else "False"
    old = previous.get(kind) or {}
    same = old.get("status") == value and old.get("reason") == reason
    return {
        "type": kind,
        "status": value,
        "reason": reason,
        "lastUpdateTime": old["lastUpdateTime"] if same else now,
        "lastTransitionTime": old["lastTransitionTime"] if same else now,
    }


def status(deployment: Mapping[str, Any], pods: Iterable[Obj], now: str) -> Obj:
    """The Deployment's status from the pods it owns."""
    live = [p for p in pods if _active(p)]
    replicas = int(deployment["spec"].get("replicas", 1))
    wanted = template_hash(deployment)
    updated = sum(1 for p in live if _hash_of(p) == wanted)
    ready = sum(1 for p in live if is_ready(p))
    available = ready >= replicas - rolling_bounds(deployment)[1]
    complete = updated == len(live) == replicas and ready == replicas
    previous = {c["type"]: c for c in (deployment.get("status") or {}).get("conditions") or []}
    return {
        "observedGeneration": deployment["metadata"].get("generation", 1),
        "replicas": len(live),
        "updatedReplicas": updated,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "unavailableReplicas": max(0, replicas - ready),
        "conditions": [
            _condition(previous, "Available", available,
                       "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
                       now),
            _condition(previous, "Progressing", True,
                       "NewReplicaSetAvailable" if complete else "ReplicaSetUpdated", now),
        ],
    }  # fmt: skip


def sync(cluster: Cluster, node: str, now: str) -> None:
    """One pass over every Deployment: create and delete pods, write status."""
    pods = cluster.list_objects("pods")
    for deployment in cluster.list_objects("deployments"):
        metadata = deployment["metadata"]
        namespace = metadata["namespace"]
        if metadata.get("deletionTimestamp"):
            continue
        owned = owned_by(deployment, [p for p in pods if p["metadata"]["namespace"] == namespace])
        step = plan(deployment, owned, node)
        for obj in step.create:
            tolerating((409,), functools.partial(cluster.create_object, obj))
        for pod_name in step.delete:
            tolerating(
                (404,), functools.partial(cluster.delete_object, "pods", pod_name, namespace)
            )
        new = status(deployment, owned, now)
        if {k: (deployment.get("status") or {}).get(k) for k in new} != new:
            patch = functools.partial(
                cluster.patch_object, "deployments", metadata["name"], {"status": new}, namespace
            )
            tolerating((404, 409), functools.partial(patch, subresource="status"))
