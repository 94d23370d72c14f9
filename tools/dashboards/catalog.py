"""Every rocketkube dashboard by its file name, and its JSON as Grafana imports it."""

from __future__ import annotations

import json
from collections.abc import Callable

from grafana_foundation_sdk.builders import dashboard as builder
from grafana_foundation_sdk.cog.encoder import JSONEncoder

from dashboards import consumers, internals, operator_dashboard, overview, topics

__all__ = ["DASHBOARDS", "render", "render_all"]

DASHBOARDS: dict[str, Callable[[], builder.Dashboard]] = {
    "cluster-overview.json": overview.build,
    "topics.json": topics.build,
    "consumer-groups.json": consumers.build,
    "broker-internals.json": internals.build,
    "operator.json": operator_dashboard.build,
}


def render(build: Callable[[], builder.Dashboard]) -> str:
    """The dashboard's JSON: panels numbered from 1 in order (Grafana needs them apart),
    keys sorted, two-space indents, a final newline."""
    data = json.loads(JSONEncoder().encode(build().build()))
    for number, panel in enumerate(data["panels"], start=1):
        panel["id"] = number
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render_all() -> dict[str, str]:
    return {name: render(build) for name, build in DASHBOARDS.items()}
