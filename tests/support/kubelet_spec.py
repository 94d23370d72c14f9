"""What a container runs with, read from its pod: argv, environment, ports. Pure.

As the kubelet reads a container spec:

- argv: ``command`` (the image's entrypoint when absent) then ``args``, each with
  ``$(VAR)`` references to the container's environment expanded (``$$`` is a ``$``);
  the first word is looked up in the harness's entrypoints (``rocketkube`` → this
  checkout's ``.venv/bin/rocketkube``: the image is this checkout);
- environment: the image's (PATH...), ``HOSTNAME``, then ``envFrom`` ConfigMaps and
  Secrets, then ``env`` in order (plain values expanded against what precedes them, the
  downward API's ``fieldRef`` for ``metadata.name``, ``.namespace``, ``.uid``,
  ``.labels['k']``, ``.annotations['k']``, ``spec.nodeName``, ``spec.serviceAccountName``,
  ``status.podIP``, ``status.hostIP``, ConfigMap and Secret keys). What cannot be
  resolved (a missing ConfigMap, an unsupported field such as ``resourceFieldRef``)
  raises :class:`ConfigError`: the container waits in ``CreateContainerConfigError``;
- ports: a probe's named port is the container port of that name.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = [
    "ConfigError",
    "Lookup",
    "argv",
    "environment",
    "expand",
    "field_ref",
    "port_number",
]

Lookup = Callable[[str, str, str], Mapping[str, Any] | None]
"""(``configmaps`` or ``secrets``, namespace, name) → the object, or None if absent."""

_SUBSCRIPT: Final = re.compile(r"^metadata\.(labels|annotations)\['([^']*)'\]$")
_VAR: Final = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_FIELDS: Final = {
    "metadata.name": ("metadata", "name"),
    "metadata.namespace": ("metadata", "namespace"),
    "metadata.uid": ("metadata", "uid"),
    "spec.nodeName": ("spec", "nodeName"),
    "spec.serviceAccountName": ("spec", "serviceAccountName"),
    "status.podIP": ("status", "podIP"),
    "status.hostIP": ("status", "hostIP"),
}


class ConfigError(ValueError):
    """The container cannot be configured yet (the reason is the message)."""


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion: defined names replaced, others left as written,
    ``$$`` an escaped ``$``."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
            continue
        match = _VAR.match(text, i)
        if match and match.group(1) in env:
            out.append(env[match.group(1)])
            i = match.end()
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def field_ref(pod: Mapping[str, Any], path: str) -> str:
    """The downward API's value of ``path`` for ``pod``."""
    subscript = _SUBSCRIPT.match(path)
    if subscript:
        return str((pod["metadata"].get(subscript.group(1)) or {}).get(subscript.group(2), ""))
    if path not in _FIELDS:
        raise ConfigError(f"unsupported fieldRef {path!r}")
    part, key = _FIELDS[path]
    return str((pod.get(part) or {}).get(key) or "")


def _data(obj: Mapping[str, Any], kind: str) -> dict[str, str]:
    """A ConfigMap's or Secret's data as text."""
    if kind == "secrets":
        raw = {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()}
        return {**raw, **(obj.get("stringData") or {})}
    return dict(obj.get("data") or {})


def _source(lookup: Lookup, kind: str, namespace: str, ref: Mapping[str, Any]) -> dict[str, str]:
    found = lookup(kind, namespace, str(ref.get("name", "")))
    if found is None:
        if ref.get("optional"):
            return {}
        raise ConfigError(f'{kind[:-1]} "{ref.get("name")}" not found')
    return _data(found, kind)


def _value_from(
    source: Mapping[str, Any], pod: Mapping[str, Any], lookup: Lookup, namespace: str
) -> str | None:
    if "fieldRef" in source:
        return field_ref(pod, source["fieldRef"]["fieldPath"])
    for key, kind in (("configMapKeyRef", "configmaps"), ("secretKeyRef", "secrets")):
        if key in source:
            ref = source[key]
            data = _source(lookup, kind, namespace, ref)
            if ref["key"] not in data and not ref.get("optional"):
                raise ConfigError(f"couldn't find key {ref['key']} in {kind[:-1]} {ref['name']}")
            return data.get(ref["key"])
    raise ConfigError(f"unsupported valueFrom {sorted(source)}")


def environment(
    container: Mapping[str, Any],
    pod: Mapping[str, Any],
    image_env: Mapping[str, str],
    lookup: Lookup,
) -> dict[str, str]:
    """The container's environment (``pod`` with its ``status.podIP`` known)."""
    namespace = pod["metadata"].get("namespace", "default")
    hostname = (pod.get("spec") or {}).get("hostname") or pod["metadata"]["name"]
    env = {**image_env, "HOSTNAME": hostname}
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix", "")
        for key, kind in (("configMapRef", "configmaps"), ("secretRef", "secrets")):
            if key in source:
                data = _source(lookup, kind, namespace, source[key])
                env.update({prefix + k: v for k, v in data.items()})
    for var in container.get("env") or []:
        if "valueFrom" in var:
            value = _value_from(var["valueFrom"], pod, lookup, namespace)
            if value is not None:
                env[var["name"]] = value
        else:
            env[var["name"]] = expand(str(var.get("value", "")), env)
    return env


def argv(
    container: Mapping[str, Any],
    env: Mapping[str, str],
    image_entrypoint: list[str],
    entrypoints: Mapping[str, str],
) -> list[str]:
    """What the container runs: command (or the image's entrypoint) and args, expanded,
    the first word mapped through ``entrypoints``."""
    words = [expand(str(w), env) for w in container.get("command") or image_entrypoint]
    words += [expand(str(w), env) for w in container.get("args") or []]
    if not words:
        raise ConfigError("no command specified")
    return [entrypoints.get(words[0], words[0]), *words[1:]]


def port_number(container: Mapping[str, Any], port: int | str) -> int:
    """A probe's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for entry in container.get("ports") or []:
        if entry.get("name") == port:
            return int(entry["containerPort"])
    raise ConfigError(f"no container port named {port!r}")
