"""The kinds the emulated API server serves: built-in ones, and those CRDs add.

A :class:`ResourceType` is one (group, version, plural) as discovery lists it. Objects are
stored per (group, plural), whatever version they were written through: a CRD's versions
all share one storage, converted by rewriting ``apiVersion`` only (the ``None`` strategy).
:class:`Catalog` finds types by URL segments or by the names kubectl accepts (plural,
singular, kind, short names).

Not emulated: API aggregation, conversion webhooks, any kind not listed in ``BUILTIN``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BUILTIN", "Catalog", "GroupResource", "PrinterColumn", "ResourceType", "Scale"]

#: (group, plural): where objects of a kind are stored, whichever version wrote them.
GroupResource = tuple[str, str]

_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class PrinterColumn:
    """A CRD's ``additionalPrinterColumns`` entry."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass(frozen=True)
class Scale:
    """Where a kind keeps what its ``scale`` subresource reads and writes."""

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str = ""


@dataclass(frozen=True)
class ResourceType:
    """One served (group, version, plural) and how objects of it behave."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    has_status: bool = False
    scale: Scale | None = None
    #: the CRD version's ``openAPIV3Schema``; None for built-in kinds
    schema: dict[str, Any] | None = field(default=None, compare=False)
    printer_columns: tuple[PrinterColumn, ...] = ()
    storage: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> GroupResource:
        return (self.group, self.plural)

    @property
    def builtin(self) -> bool:
        return self.schema is None

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    def subresources(self) -> tuple[str, ...]:
        return tuple(
            n for n, on in (("status", self.has_status), ("scale", bool(self.scale))) if on
        )

    def names(self) -> set[str]:
        """Every name kubectl may call this kind by."""
        names = {self.plural, self.singular_name, self.kind.lower(), *self.short_names}
        return names | {f"{n}.{self.group}" for n in set(names) if self.group}

    def discovery(self) -> list[dict[str, Any]]:
        """The ``APIResource`` entries of this kind and its subresources."""
        main: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular_name,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(_VERBS),
        }
        if self.short_names:
            main["shortNames"] = list(self.short_names)
        if self.categories:
            main["categories"] = list(self.categories)
        entries = [main]
        for sub in self.subresources():
            kind = "Scale" if sub == "scale" else self.kind
            entry = {
                "name": f"{self.plural}/{sub}",
                "singularName": "",
                "kind": kind,
                "namespaced": self.namespaced,
                "verbs": ["get", "patch", "update"],
            }
            if sub == "scale":
                entry |= {"group": "autoscaling", "version": "v1"}
            entries.append(entry)
        return entries


def _builtin(
    group: str, version: str, kind: str, plural: str, namespaced: bool = True, **more: Any
) -> ResourceType:
    return ResourceType(group, version, kind, plural, namespaced, **more)


#: The built-in kinds served from the start.
BUILTIN: tuple[ResourceType, ...] = (
    _builtin("", "v1", "Namespace", "namespaces", False, short_names=("ns",), has_status=True),
    _builtin("", "v1", "Pod", "pods", short_names=("po",), has_status=True, categories=("all",)),
    _builtin(
        "", "v1", "Service", "services", short_names=("svc",), has_status=True, categories=("all",)
    ),
    _builtin("", "v1", "ConfigMap", "configmaps", short_names=("cm",)),
    _builtin("", "v1", "Secret", "secrets"),
    _builtin("", "v1", "Event", "events", short_names=("ev",)),
    _builtin(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        short_names=("pvc",),
        has_status=True,
    ),
    _builtin("", "v1", "ServiceAccount", "serviceaccounts", short_names=("sa",)),
    _builtin(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        short_names=("sts",),
        has_status=True,
        scale=Scale(label_selector_path=".status.selector"),
        categories=("all",),
    ),
    _builtin(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        short_names=("pdb",),
        has_status=True,
    ),
    _builtin("coordination.k8s.io", "v1", "Lease", "leases"),
    # what a Helm chart installing an operator writes (the kubelet harness runs its pods)
    _builtin(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        short_names=("deploy",),
        has_status=True,
        scale=Scale(label_selector_path=".status.selector"),
        categories=("all",),
    ),
    _builtin("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    _builtin("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    _builtin("rbac.authorization.k8s.io", "v1", "Role", "roles"),
    _builtin("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
    _builtin("events.k8s.io", "v1", "Event", "events", short_names=("ev",)),
    _builtin(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        False,
        short_names=("crd", "crds"),
        has_status=True,
    ),
)


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes' version order (v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > others): sort
    ascending on this to get the preferred version first."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if match is None:
        return (3, 0, 0, version)
    major, level, minor = int(match[1]), match[2], int(match[3] or 0)
    rank = {"": 0, "beta": 1, "alpha": 2}[level or ""]
    return (rank, -major, -minor, version)


class Catalog:
    """The served kinds, built-in and custom; safe to read and change from any thread."""

    def __init__(self, builtin: Iterable[ResourceType] = BUILTIN) -> None:
        self._lock = threading.Lock()
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._owners: dict[tuple[str, str, str], str] = {}
        for rt in builtin:
            self._types[(rt.group, rt.version, rt.plural)] = rt

    def __iter__(self) -> Iterator[ResourceType]:
        with self._lock:
            return iter(list(self._types.values()))

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        with self._lock:
            return self._types.get((group, version, plural))

    def storage_type(self, group: str, plural: str) -> ResourceType | None:
        """The version objects of (group, plural) are stored at."""
        candidates = [rt for rt in self if rt.group_resource == (group, plural)]
        stored = [rt for rt in candidates if rt.storage] or candidates
        return stored[0] if stored else None

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        return next((rt for rt in self if (rt.api_version, rt.kind) == (api_version, kind)), None)

    def find(self, name: str) -> ResourceType:
        """The type kubectl would pick for ``name`` (plural, singular, kind or short name,
        optionally ``.group``-qualified), in its preferred version; KeyError if none."""
        wanted = name.lower()
        matches = [rt for rt in self if wanted in rt.names()]
        if not matches:
            raise KeyError(name)
        return min(matches, key=lambda rt: (rt.group != "", version_priority(rt.version)))

    def groups(self) -> dict[str, list[str]]:
        """Group name → its versions, the preferred first ("" is the core group)."""
        versions: dict[str, set[str]] = {}
        for rt in self:
            versions.setdefault(rt.group, set()).add(rt.version)
        return {g: sorted(v, key=version_priority) for g, v in sorted(versions.items())}

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for rt in self if (rt.group, rt.version) == (group, version)]

    def install(self, owner: str, types: Iterable[ResourceType]) -> None:
        """Serve ``types`` on behalf of ``owner`` (a CRD's name), replacing what it served."""
        with self._lock:
            for key in [k for k, o in self._owners.items() if o == owner]:
                del self._types[key], self._owners[key]
            for rt in types:
                key = (rt.group, rt.version, rt.plural)
                self._types[key], self._owners[key] = rt, owner

    def uninstall(self, owner: str) -> None:
        self.install(owner, ())
