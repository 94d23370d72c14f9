"""Cluster DNS for the kubelet harness: each pod's ``/etc/hosts``, as CoreDNS would answer.

Pure: pods and Services in, hosts files out. What resolves, for a Service ``s`` in
namespace ``ns`` (``cluster.local`` the cluster domain)::

    s.ns.svc  s.ns.svc.cluster.local          every endpoint's IP (one line each: glibc
                                              returns them all; the first is the first
                                              endpoint by pod name)
    h.s.ns.svc  h.s.ns.svc.cluster.local      an endpoint pod whose hostname is h and
                                              subdomain s (a StatefulSet's pods)
    s  s.ns  h.s  h.s.ns                      the same, from pods of namespace ns: what
                                              the search path ns.svc.cluster.local gives

A Service's endpoints are the running pods of its namespace that its selector matches,
have an IP, are not being deleted, and are Ready, or any of that but Ready when it sets
``publishNotReadyAddresses`` (the name servers' does; a broker group's does not, so a
broker's name resolves once it is ready). A pod always finds its own name, as the
kubelet writes it into the pod's hosts file. Services get no virtual IP here: a ClusterIP
Service's name resolves to its endpoints as a headless one's does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

__all__ = ["PodEntry", "Records", "hosts_file", "pod_entry", "records", "write_in_place"]

DOMAIN: Final = "cluster.local"
_HEADER: Final = (
    "# Kubernetes-managed hosts file (the test kubelet harness).\n127.0.0.1\tlocalhost\n"
)


@dataclass(frozen=True)
class PodEntry:
    """What DNS needs of a pod."""

    namespace: str
    name: str
    ip: str
    hostname: str
    subdomain: str
    labels: Mapping[str, str] = field(default_factory=dict)
    ready: bool = False
    terminating: bool = False


def pod_entry(pod: Mapping[str, Any]) -> PodEntry | None:
    """A pod object's entry, or None while it has no IP."""
    status = pod.get("status") or {}
    ip = status.get("podIP")
    if not ip:
        return None
    metadata, spec = pod["metadata"], pod.get("spec") or {}
    conditions = status.get("conditions") or []
    return PodEntry(
        namespace=metadata.get("namespace", "default"),
        name=metadata["name"],
        ip=str(ip),
        hostname=spec.get("hostname") or metadata["name"],
        subdomain=spec.get("subdomain") or "",
        labels=dict(metadata.get("labels") or {}),
        ready=any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions),
        terminating=bool(metadata.get("deletionTimestamp")),
    )


def _endpoints(service: Mapping[str, Any], pods: Iterable[PodEntry]) -> list[PodEntry]:
    metadata, spec = service["metadata"], service.get("spec") or {}
    selector = spec.get("selector") or {}
    if not selector:
        return []
    namespace = metadata.get("namespace", "default")
    publish_all = bool(spec.get("publishNotReadyAddresses"))
    return [
        p
        for p in pods
        if p.namespace == namespace
        and not p.terminating
        and (p.ready or publish_all)
        and all(p.labels.get(k) == v for k, v in selector.items())
    ]


Records = list[tuple[str, list[tuple[str, str]]]]
"""(IP, [(namespace, name relative to it)]) per endpoint pod, by pod namespace and name."""


def records(services: Iterable[Mapping[str, Any]], pods: Iterable[PodEntry]) -> Records:
    """Every name an endpoint's IP answers to, with the namespace it is relative to (for
    the short forms); a Service's addresses come in the order of its pods' names."""
    pods = sorted(pods, key=lambda p: (p.namespace, p.name))
    names: dict[str, list[tuple[str, str]]] = {}
    for service in services:
        svc = service["metadata"]["name"]
        namespace = service["metadata"].get("namespace", "default")
        for pod in _endpoints(service, pods):
            names.setdefault(pod.ip, []).append((namespace, svc))
            if pod.subdomain == svc:
                names[pod.ip].append((namespace, f"{pod.hostname}.{svc}"))
    return [(p.ip, sorted(names[p.ip])) for p in pods if p.ip in names]


def _forms(namespace: str, relative: str, own_namespace: str) -> list[str]:
    """``relative`` (``s`` or ``h.s``) as the pod in ``own_namespace`` may write it."""
    full = [f"{relative}.{namespace}.svc", f"{relative}.{namespace}.svc.{DOMAIN}"]
    return full + ([relative, f"{relative}.{namespace}"] if namespace == own_namespace else [])


def hosts_file(own: PodEntry, known: Records) -> str:
    """The hosts file of pod ``own``, given :func:`records`."""
    lines = [_HEADER]
    own_names = [own.hostname]
    if own.subdomain:
        base = f"{own.hostname}.{own.subdomain}.{own.namespace}.svc"
        own_names = [f"{base}.{DOMAIN}", base, *own_names]
    lines.append(f"{own.ip}\t{' '.join(own_names)}\n")
    for ip, relatives in known:
        names: list[str] = []
        for namespace, relative in relatives:
            names += [n for n in _forms(namespace, relative, own.namespace) if n not in names]
        lines.append(f"{ip}\t{' '.join(names)}\n")
    return "".join(lines)


def write_in_place(path: Path, text: str) -> None:
    """Replace ``path``'s content keeping its inode (a bind mount of it sees the change)."""
    data = text.encode()
    with path.open("r+b") as file:
        file.write(data)
        file.truncate(len(data))
