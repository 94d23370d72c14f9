"""The Helm chart (``charts/rocketkube``) for its tests: rendered by Helm's own engine
(PyPI ``helm-python-sdk``, no helm binary), copied with fixture dashboards and alert
rules, and its monitoring objects checked against prometheus-operator's CRD schemas.

The dashboards and the alert rules are another part's files; the chart must render with
or without them, so tests add their own to a copy (:func:`chart_copy`).
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import helm_python as helm
import jsonschema
import kubernetes_validate
import yaml

__all__ = [
    "CHART",
    "KUBERNETES_VERSION",
    "MONITORING_CRDS",
    "ROOT",
    "chart_copy",
    "find",
    "notes",
    "render",
    "validate_builtin",
    "validate_monitoring",
]

ROOT: Final = Path(__file__).resolve().parents[2]
CHART: Final = ROOT / "charts" / "rocketkube"
KUBERNETES_VERSION: Final = "1.29"
"""The oldest Kubernetes the chart supports (and the operator's objects are checked for)."""
MONITORING_CRDS: Final = (
    Path(__file__).resolve().parents[1] / "chart" / "data" / ("prometheus-operator-crds.yaml")
)

Obj = dict[str, Any]


def render(
    values: Mapping[str, Any] | None = None,
    *,
    chart: Path = CHART,
    release: str = "rk",
    namespace: str = "ops",
) -> list[Obj]:
    """Every object the chart's templates render (its crds/ excluded), in template order."""
    with helm.Chart.load(chart) as loaded:
        rendered = loaded.render(
            values=dict(values or {}), name=release, namespace=namespace, is_install=True
        )
    objects: list[Obj] = []
    for path, text in sorted(rendered.items()):
        if path.endswith(".txt"):
            continue
        objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return objects


def notes(values: Mapping[str, Any] | None = None) -> str:
    """The NOTES.txt the user sees after an install."""
    with helm.Chart.load(CHART) as loaded:
        rendered = loaded.render(values=dict(values or {}), name="rk", namespace="ops")
    return next(text for path, text in rendered.items() if path.endswith("NOTES.txt"))


def find(objects: list[Obj], kind: str, name: str | None = None) -> list[Obj]:
    return [o for o in objects if o["kind"] == kind and name in (None, o["metadata"]["name"])]


def chart_copy(
    destination: Path, *, dashboards: Mapping[str, str] = {}, rules: str | None = None
) -> Path:
    """A copy of the chart with these dashboards (file name → JSON text) and alert rules."""
    copied = destination / "rocketkube"
    shutil.copytree(CHART, copied)
    shutil.rmtree(copied / "dashboards", ignore_errors=True)
    shutil.rmtree(copied / "alerts", ignore_errors=True)
    for name, text in dashboards.items():
        (copied / "dashboards").mkdir(exist_ok=True)
        (copied / "dashboards" / name).write_text(text, encoding="utf-8")
    if rules is not None:
        (copied / "alerts").mkdir()
        (copied / "alerts" / "rocketkube.rules.yaml").write_text(rules, encoding="utf-8")
    return copied


def validate_builtin(obj: Obj) -> None:
    """Raises for an object the API server of the oldest supported Kubernetes refuses
    (strict: an unknown field anywhere is refused)."""
    kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def monitoring_crds() -> list[Obj]:
    items: list[Obj] = yaml.safe_load(MONITORING_CRDS.read_text(encoding="utf-8"))["items"]
    return items


def _strict(schema: Any) -> Any:
    """An openAPIV3Schema made strict for jsonschema: no unknown fields where it lists
    properties (unless it preserves them), int-or-string as either."""
    if not isinstance(schema, dict):
        return schema
    out = {k: _strict(v) for k, v in schema.items() if not k.startswith("x-kubernetes")}
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: _strict(v) for k, v in schema["properties"].items()}
        if not schema.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    if isinstance(schema.get("items"), dict):
        out["items"] = _strict(schema["items"])
    if schema.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    return out


def validate_monitoring(obj: Obj) -> None:
    """Raises ``jsonschema.ValidationError`` for a ServiceMonitor, PodMonitor or
    PrometheusRule that prometheus-operator's CRD schema refuses (strictly)."""
    group, _, version = obj["apiVersion"].partition("/")
    for crd in monitoring_crds():
        spec = crd["spec"]
        if (spec["group"], spec["names"]["kind"]) == (group, obj["kind"]):
            (served,) = [v for v in spec["versions"] if v["name"] == version]
            schema = copy.deepcopy(served["schema"]["openAPIV3Schema"])
            jsonschema.validate(obj, _strict(schema))
            return
    raise LookupError(f"no CRD for {obj['apiVersion']} {obj['kind']}")
