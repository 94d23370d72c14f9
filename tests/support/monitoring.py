"""The monitoring tests' view of what rocketkube ships for Prometheus and Grafana: every
query of the dashboards (``charts/rocketkube/dashboards``) and alert rules
(``charts/rocketkube/alerts``) with Grafana's variables substituted, the metric names a
query reads (parsed by ``promql-parser``), the names a registry exports, and a real
Prometheus (Debian's ``prometheus``) on 127.0.0.1 in a temporary folder.

``pyproject.toml`` puts this folder on pytest's path (see ``waiting.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import promql_parser
import pytest
import yaml
from broker_process import free_port
from prometheus_client.registry import Collector

__all__ = [
    "ALERTS",
    "DASHBOARDS",
    "PROMETHEUS_OWN",
    "Query",
    "Target",
    "dashboard_queries",
    "exported_names",
    "metric_names",
    "need",
    "rule_queries",
    "running_prometheus",
    "substitute",
]

ROOT = Path(__file__).parents[2]
DASHBOARDS = ROOT / "charts" / "rocketkube" / "dashboards"
ALERTS = ROOT / "charts" / "rocketkube" / "alerts" / "rocketkube.rules.yaml"
PROMETHEUS_OWN = frozenset({"up"})
"""Series Prometheus writes itself for each target; every other name is rocketkube's."""
START_SECONDS = 60


@dataclass(frozen=True)
class Query:
    """One query: where it is (file and panel or alert) and its PromQL."""

    where: str
    expr: str


def need(tool: str) -> str:
    """The path of ``tool``; the test is skipped, saying so loudly, when it is missing."""
    found = shutil.which(tool)
    if found is None:
        pytest.skip(
            f"MISSING {tool}: the monitoring checks did not run. Install Debian's prometheus "
            "package (make test does so as root: apt-get install prometheus)."
        )
    return found


def dashboard_queries(path: Path) -> list[Query]:
    """Every panel target's and query variable's PromQL in a dashboard file (a variable's
    ``label_values(selector, label)`` as its selector)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    found = [
        Query(f"{path.name}: {panel['title']}", target["expr"])
        for panel in data["panels"]
        for target in panel.get("targets") or ()
    ]
    for variable in data["templating"]["list"]:
        if variable["type"] == "query":
            match = re.fullmatch(r"label_values\((.*), *\w+\)", variable["query"])
            assert match is not None, f"{path.name}: variable {variable['name']}"
            found.append(Query(f"{path.name}: ${variable['name']}", match.group(1)))
    return found


def rule_queries(path: Path = ALERTS) -> list[Query]:
    groups = yaml.safe_load(path.read_text(encoding="utf-8"))["groups"]
    return [
        Query(f"{path.name}: {rule.get('alert') or rule.get('record')}", rule["expr"])
        for group in groups
        for rule in group["rules"]
    ]


def substitute(expr: str, values: Mapping[str, str]) -> str:
    """``expr`` with ``$name`` and ``${name}`` replaced from ``values`` (longest first, so
    ``$__rate_interval`` is not read as ``$__rate``)."""
    for name in sorted(values, key=len, reverse=True):
        expr = expr.replace(f"${{{name}}}", values[name]).replace(f"${name}", values[name])
    assert "$" not in expr, f"a variable left in {expr}"
    return expr


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` selects (it must parse)."""
    names: set[str] = set()
    _walk(promql_parser.parse(expr), names)
    return names


def _walk(node: Any, names: set[str]) -> None:
    if isinstance(node, promql_parser.VectorSelector):
        assert node.name, "a selector without a metric name"
        names.add(node.name)
    elif isinstance(node, promql_parser.MatrixSelector):
        _walk(node.vector_selector, names)
    elif isinstance(node, promql_parser.BinaryExpr):
        _walk(node.lhs, names)
        _walk(node.rhs, names)
    elif isinstance(node, promql_parser.Call):
        for arg in node.args:
            _walk(arg, names)
    elif isinstance(node, promql_parser.AggregateExpr):
        _walk(node.expr, names)
        if node.param is not None:
            _walk(node.param, names)
    elif isinstance(node, (promql_parser.ParenExpr, promql_parser.UnaryExpr,
                           promql_parser.SubqueryExpr)):  # fmt: skip
        _walk(node.expr, names)


_SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "gauge": ("",),
    "info": ("_info",),
    "summary": ("", "_count", "_sum", "_created"),
}


def exported_names(registry: Collector) -> set[str]:
    """The sample names a registry serves, of every family it describes (with samples yet
    or not: a counter with labels has none before its first increment)."""
    names: set[str] = set()
    for family in registry.collect():
        names |= {family.name + suffix for suffix in _SUFFIXES.get(family.type, ("",))}
    return names


@dataclass(frozen=True)
class Target:
    """A scrape target: its port on 127.0.0.1 and the labels Kubernetes would give it."""

    port: int
    labels: Mapping[str, str]


class Prometheus:
    """A running Prometheus; :meth:`query` runs an instant query through its HTTP API."""

    def __init__(self, port: int, http: aiohttp.ClientSession) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self._http = http

    async def query(self, expr: str) -> list[dict[str, Any]]:
        async with self._http.get(f"{self.base}/api/v1/query", params={"query": expr}) as r:
            answer = await r.json()
        assert answer["status"] == "success", f"{expr}: {answer}"
        result: list[dict[str, Any]] = answer["data"]["result"]
        return result

    async def rules(self) -> list[dict[str, Any]]:
        async with self._http.get(f"{self.base}/api/v1/rules") as r:
            answer = await r.json()
        groups: list[dict[str, Any]] = answer["data"]["groups"]
        return groups


def _config(targets: Sequence[Target], rules: Path) -> dict[str, Any]:
    return {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules)],
        "scrape_configs": [
            {
                "job_name": "rocketkube",
                "static_configs": [
                    {"targets": [f"127.0.0.1:{t.port}"], "labels": dict(t.labels)} for t in targets
                ],
            }
        ],
    }


@contextlib.asynccontextmanager
async def running_prometheus(
    workdir: Path, targets: Sequence[Target], rules: Path = ALERTS
) -> AsyncIterator[Prometheus]:
    """Prometheus scraping ``targets`` every second, with the alert ``rules`` loaded, its
    data and log under ``workdir``; stopped (and awaited) when the block ends."""
    binary = need("prometheus")
    config = workdir / "prometheus.yml"
    config.write_text(yaml.safe_dump(_config(targets, rules)), encoding="utf-8")
    port = free_port()
    with (workdir / "prometheus.log").open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            binary, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log,
        )  # fmt: skip
        try:
            async with aiohttp.ClientSession() as http:
                await _until_ready(f"http://127.0.0.1:{port}/-/ready", http, process, workdir)
                yield Prometheus(port, http)
        finally:
            if process.returncode is None:
                process.terminate()
            await asyncio.wait_for(process.wait(), 60)


async def _until_ready(
    url: str, http: aiohttp.ClientSession, process: asyncio.subprocess.Process, workdir: Path
) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.returncode is not None:
            pytest.fail(f"prometheus exited: {(workdir / 'prometheus.log').read_text()}")
        with contextlib.suppress(aiohttp.ClientError):
            async with http.get(url) as answer:
                if answer.status == 200:
                    return
        await asyncio.sleep(0.2)
    pytest.fail("prometheus did not become ready")


def dashboard_files() -> Iterator[Path]:
    return iter(sorted(DASHBOARDS.glob("*.json")))
