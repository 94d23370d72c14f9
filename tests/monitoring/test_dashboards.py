"""The Grafana dashboards: the JSON under ``charts/`` is what the builders in
``tools/dashboards`` make now, each is templated by datasource, namespace and cluster, and
every query (dashboards and alert rules) parses and reads only metrics rocketkube exports:
the names the name server, a master and a slave broker and the operator serve."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import pytest
from monitoring import (
    DASHBOARDS,
    PROMETHEUS_OWN,
    dashboard_files,
    dashboard_queries,
    exported_names,
    metric_names,
    rule_queries,
    substitute,
)

from dashboards import catalog
from rocketkube.broker.app import BrokerApp
from rocketkube.namesrv.app import NamesrvApp
from rocketkube.operator.metrics import Metrics

SAMPLE_VALUES = {"namespace": "shop", "cluster": "demo", "topic": ".*", "group": ".*",
                 "__rate_interval": "1m", "datasource": "prometheus"}  # fmt: skip


def test_the_dashboards_are_current() -> None:
    rendered = catalog.render_all()
    on_disk = {path.name: path.read_text(encoding="utf-8") for path in dashboard_files()}
    assert set(on_disk) == set(rendered), "run make dashboards"
    stale = [name for name, text in rendered.items() if on_disk[name] != text]
    assert not stale, f"stale (run make dashboards): {stale}"


@pytest.mark.parametrize("name", sorted(catalog.DASHBOARDS))
def test_each_dashboard_is_templated_by_datasource_namespace_and_cluster(name: str) -> None:
    data = json.loads((DASHBOARDS / name).read_text(encoding="utf-8"))
    variables = {v["name"]: v for v in data["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"
    assert {"namespace", "cluster"} <= set(variables)
    panels = [p for p in data["panels"] if p["type"] != "row"]
    assert panels
    for panel in panels:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        for target in panel["targets"]:
            assert 'namespace=~"$namespace"' in target["expr"], panel["title"]
    uses_cluster = [p for p in panels if any("$cluster" in t["expr"] for t in p["targets"])]
    assert uses_cluster, f"{name}: no panel selects by $cluster"


@pytest.fixture
async def exported(
    namesrv: NamesrvApp, start_broker: Callable[..., Awaitable[BrokerApp]]
) -> set[str]:
    """Every name the name server, a master, its slave and an operator export."""
    master = await start_broker(broker_role="ASYNC_MASTER")
    slave = await start_broker(broker_id=1, broker_role="SLAVE")
    registries = (namesrv.registry, master.registry, slave.registry, Metrics().registry)
    return set().union(*(exported_names(registry) for registry in registries))


async def test_every_query_parses_and_reads_only_exported_metrics(exported: set[str]) -> None:
    queries = [q for path in dashboard_files() for q in dashboard_queries(path)]
    queries += rule_queries()
    assert len(queries) > 40
    unknown = {
        query.where: sorted(names - exported - PROMETHEUS_OWN)
        for query in queries
        if (names := metric_names(substitute(query.expr, SAMPLE_VALUES)))
        - exported
        - PROMETHEUS_OWN
    }
    assert not unknown
