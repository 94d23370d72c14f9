"""Pod volumes for the kubelet harness: host directories, bind-mounted where the pod asks.

Each volume of a pod becomes a directory on the host::

    configMap, secret       <pod dir>/volumes/<name>: the object's keys as files
                            (``items``, ``defaultMode``), rewritten when it changes
    emptyDir                <pod dir>/volumes/<name>: fresh for each pod, kept across
                            its containers' restarts, gone with the pod
    persistentVolumeClaim   <claims>/<namespace>/<claim>: kept across pods until the
                            claim object is deleted (a StatefulSet's ``store-<pod>``)
    hostPath                the path itself

A container sees them at its ``volumeMounts`` (``subPath`` honoured, ``readOnly`` as a
read-only remount) inside a mount namespace of its own: the process starts as
``ip netns exec <pod netns> unshare --mount --uts --propagation private sh -c SCRIPT``,
and :func:`mount_script` binds each source over its mount path there, parents first
(each source held open before any target is covered), sets the pod's hostname, changes
to the working directory and execs the container's argv; the host's view never changes.
A mount path must exist to be mounted on: :func:`mount_points` are the ones the host
lacks, which the harness creates (and records with ``kubelet_host``, to remove them when
the last run ends).
"""

from __future__ import annotations

import base64
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from kubelet_spec import Lookup

__all__ = [
    "Mount",
    "VolumeError",
    "claim_dir",
    "create_mount_points",
    "mount_points",
    "mount_script",
    "mounts",
    "object_files",
    "prepare",
    "write_files",
]


class VolumeError(RuntimeError):
    """A volume cannot be set up yet (its ConfigMap or claim is missing)."""


@dataclass(frozen=True)
class Mount:
    """A bind mount in a container's mount namespace."""

    source: Path
    target: str
    read_only: bool = False
    file: bool = False


def claim_dir(claims: Path, namespace: str, claim: str) -> Path:
    return claims / namespace / claim


def object_files(volume: Mapping[str, Any], obj: Mapping[str, Any]) -> dict[str, tuple[bytes, int]]:
    """A ConfigMap or Secret volume's files: relative path → (content, mode)."""
    secret = "secretName" in volume
    if secret:
        data = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
    else:
        data = {k: str(v).encode() for k, v in (obj.get("data") or {}).items()}
        data |= {k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()}
    mode = int(volume.get("defaultMode", 0o644))
    items = volume.get("items")
    if not items:
        return {key: (value, mode) for key, value in data.items()}
    return {
        str(item["path"]): (data[item["key"]], int(item.get("mode", mode)))
        for item in items
        if item["key"] in data
    }


def write_files(directory: Path, files: Mapping[str, tuple[bytes, int]]) -> None:
    """Make ``directory`` hold exactly ``files`` (each replaced atomically if changed)."""
    directory.mkdir(parents=True, exist_ok=True)
    for relative, (content, mode) in files.items():
        path = directory / relative
        if path.is_file() and path.read_bytes() == content:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.tmp")
        temporary.write_bytes(content)
        temporary.chmod(mode)
        temporary.replace(path)
    wanted = {directory / r for r in files}
    for path in sorted(directory.rglob("*"), reverse=True):
        if path.is_file() and path not in wanted:
            path.unlink()


def _object_volume(
    volume: Mapping[str, Any], namespace: str, lookup: Lookup
) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(volume source, the ConfigMap or Secret it projects)."""
    kind, source = (
        ("secrets", volume["secret"]) if "secret" in volume else ("configmaps", volume["configMap"])
    )
    name = source.get("secretName") or source.get("name", "")
    found = lookup(kind, namespace, name)
    if found is None:
        if source.get("optional"):
            return source, {}
        raise VolumeError(f'{kind[:-1]} "{name}" not found')
    return source, found


def prepare(pod: Mapping[str, Any], pod_dir: Path, claims: Path, lookup: Lookup) -> dict[str, Path]:
    """Set up (or refresh) every volume of ``pod``: name → host directory."""
    namespace = pod["metadata"].get("namespace", "default")
    out: dict[str, Path] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        name = volume["name"]
        here = pod_dir / "volumes" / name
        if "configMap" in volume or "secret" in volume:
            source, obj = _object_volume(volume, namespace, lookup)
            write_files(here, object_files(source, obj))
        elif "emptyDir" in volume:
            here.mkdir(parents=True, exist_ok=True)
        elif "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"]["claimName"]
            if lookup("persistentvolumeclaims", namespace, claim) is None:
                raise VolumeError(f'persistentvolumeclaim "{claim}" not found')
            here = claim_dir(claims, namespace, claim)
            here.mkdir(parents=True, exist_ok=True)
        elif "hostPath" in volume:
            here = Path(volume["hostPath"]["path"])
            if volume["hostPath"].get("type") in ("DirectoryOrCreate", None, ""):
                here.mkdir(parents=True, exist_ok=True)
        else:
            raise VolumeError(f"volume {name}: unsupported source {sorted(volume)}")
        out[name] = here
    return out


def mounts(container: Mapping[str, Any], sources: Mapping[str, Path]) -> list[Mount]:
    """The container's mounts over ``sources`` (from :func:`prepare`), parents first."""
    out = []
    for entry in container.get("volumeMounts") or []:
        if entry["name"] not in sources:
            raise VolumeError(f"volumeMount {entry['name']}: no such volume")
        source = sources[entry["name"]]
        if entry.get("subPath"):
            source = source / entry["subPath"]
            if not source.exists():
                source.mkdir(parents=True)
        out.append(Mount(source, entry["mountPath"], bool(entry.get("readOnly")), source.is_file()))
    return sorted(out, key=lambda m: len(PurePosixPath(m.target).parts))


def mount_script(
    container_mounts: list[Mount], hostname: str, working_dir: str, stage: Path
) -> str:
    """``sh -c`` text that mounts, names the host, changes directory and execs ``"$@"``.

    Every source is first bound at ``stage/<n>`` (the n-th mount), then each target bound
    from there through a descriptor held on ``stage`` (``/proc/self/fd/3/<n>``, not
    canonicalised): a mount over a parent of another source (an emptyDir at ``/tmp``
    while the harness's workdir is under ``/tmp``) cannot hide that source."""
    q = shlex.quote
    lines = ["set -e", f"hostname {q(hostname)}", f"mkdir -p {q(str(stage))}"]
    for n, m in enumerate(container_mounts):
        entry = q(str(stage / str(n)))
        lines.append(f": > {entry}" if m.file else f"mkdir -p {entry}")
        lines.append(f"mount --bind {q(str(m.source))} {entry}")
    lines.append(f"exec 3< {q(str(stage))}")
    for n, m in enumerate(container_mounts):
        target = q(m.target)
        if m.file:
            lines.append(f"mkdir -p {q(str(PurePosixPath(m.target).parent))}")
            lines.append(f"[ -e {target} ] || : > {target}")
        else:
            lines.append(f"mkdir -p {target}")
        lines.append(f"mount --no-canonicalize --bind /proc/self/fd/3/{n} {target}")
        if m.read_only:
            lines.append(f"mount -o remount,bind,ro {target}")
    lines += ["exec 3<&-", f"cd {q(working_dir)}", 'exec "$@"']
    return "\n".join(lines)


def mount_points(container_mounts: list[Mount]) -> list[Mount]:
    """The mounts whose path is not inside another mount: those the host must hold."""
    targets = [PurePosixPath(m.target) for m in container_mounts]
    return [
        m
        for m in container_mounts
        if not any(t != PurePosixPath(m.target) and t in PurePosixPath(m.target).parents
                   for t in targets)
    ]  # fmt: skip


def create_mount_points(container_mounts: list[Mount]) -> list[Path]:
    """Create on the host the missing mount paths of :func:`mount_points` (and missing
    parents); every path created, outermost first."""
    created: list[Path] = []
    for m in mount_points(container_mounts):
        target = Path(m.target)
        missing = [p for p in [*reversed(target.parents), target] if not os.path.lexists(p)]
        for path in missing:
            try:
                if path == target and m.file:
                    path.touch(exist_ok=False)
                else:
                    path.mkdir()
            except FileExistsError:
                continue  # another run made it at the same moment (and recorded it)
            created.append(path)
    return created
