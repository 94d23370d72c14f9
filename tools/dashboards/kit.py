"""The parts every rocketkube dashboard shares: its template variables, the label selector
they make, and panel builders with one query each (or a few, for percentiles).

Every query selects on the labels Prometheus' scrape gives each target in Kubernetes
(``docs/monitoring.md`` has the relabelling): ``namespace``, ``pod``, ``cluster`` (the
BrokerCluster, the pod label ``app.kubernetes.io/instance``) and ``component``
(``namesrv`` or ``broker``, the pod label ``app.kubernetes.io/component``).

The dashboards use Grafana's variables ``$datasource``, ``$namespace``, ``$cluster`` and
``$__rate_interval``; a test substitutes them and runs every query against a real
Prometheus (``tests/monitoring``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from grafana_foundation_sdk.builders import bargauge, stat, table, timeseries
from grafana_foundation_sdk.builders import common as viz
from grafana_foundation_sdk.builders import dashboard as builder
from grafana_foundation_sdk.builders import prometheus as promql
from grafana_foundation_sdk.models import common as viz_model
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models import prometheus as prometheus_model

__all__ = [
    "DATASOURCE",
    "SELECTOR",
    "bars",
    "base",
    "masters",
    "percentiles",
    "query_variable",
    "rate",
    "stat_panel",
    "table_panel",
    "time_series",
]

DATASOURCE = model.DataSourceRef(type_val="prometheus", uid="${datasource}")
SELECTOR = 'namespace=~"$namespace", cluster=~"$cluster"'
"""The label matchers of every broker and name server query."""
RATE = "$__rate_interval"

P = TypeVar("P", timeseries.Panel, stat.Panel, table.Panel, bargauge.Panel)


BROKER_NAMESPACES = "label_values(rocketkube_broker_info, namespace)"
BROKER_CLUSTERS = 'label_values(rocketkube_broker_info{namespace=~"$namespace"}, cluster)'


def base(
    title: str,
    uid: str,
    description: str,
    *,
    namespaces: str = BROKER_NAMESPACES,
    clusters: str = BROKER_CLUSTERS,
) -> builder.Dashboard:
    """A dashboard with the datasource, namespace and cluster variables, whose values are
    listed by the queries ``namespaces`` and ``clusters`` (``label_values(...)``)."""
    datasource = builder.DatasourceVariable("datasource").label("Data source").type("prometheus")
    return (
        builder.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(["rocketkube"])
        .editable()
        .time("now-1h", "now")
        .refresh("30s")
        .timezone("browser")
        .with_variable(datasource)
        .with_variable(query_variable("namespace", "Namespace", namespaces))
        .with_variable(query_variable("cluster", "Cluster", clusters))
    )


def query_variable(name: str, label: str, query: str) -> builder.QueryVariable:
    """A variable listing the values of ``query``; several or all may be chosen."""
    return (
        builder.QueryVariable(name)
        .label(label)
        .datasource(DATASOURCE)
        .query(query)
        .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(model.VariableSort.ALPHABETICAL_ASC)
        .include_all(True)
        .all_value(".*")
        .multi(True)
    )


def masters(expr: str) -> str:
    """``expr`` of master brokers only: a slave repeats its master's queues and offsets."""
    return f'({expr}) * on(namespace, pod) group_left() rocketkube_broker_info{{role="master"}}'


def rate(metric: str, matchers: str = SELECTOR) -> str:
    return f"rate({metric}{{{matchers}}}[{RATE}])"


def _query(expr: str, legend: str, ref: str = "A", *, instant: bool = False) -> promql.Dataquery:
    query = promql.Dataquery().expr(expr).legend_format(legend).ref_id(ref)
    return query.instant() if instant else query.range()


def _finish(panel: P, title: str, description: str, unit: str, width: int) -> P:
    return (
        panel.title(title).description(description).datasource(DATASOURCE).unit(unit)
        .span(width).height(8)
    )  # fmt: skip


def time_series(
    title: str,
    description: str,
    queries: Sequence[tuple[str, str]],
    *,
    unit: str = "short",
    width: int = 12,
) -> timeseries.Panel:
    """A graph of ``queries``: (expression, legend) each."""
    legends = (
        viz.VizLegendOptions().show_legend(True).display_mode(viz_model.LegendDisplayMode.LIST)
        .placement(viz_model.LegendPlacement.BOTTOM)
    )  # fmt: skip
    tooltip = (
        viz.VizTooltipOptions()
        .mode(viz_model.TooltipDisplayMode.MULTI)
        .sort(viz_model.SortOrder.DESCENDING)
    )
    panel = timeseries.Panel().min(0).fill_opacity(10).legend(legends).tooltip(tooltip)
    for index, (expr, legend) in enumerate(queries):
        panel = panel.with_target(_query(expr, legend, chr(ord("A") + index)))
    return _finish(panel, title, description, unit, width)


def percentiles(
    title: str, description: str, bucket: str, by: str, *, matchers: str = SELECTOR
) -> timeseries.Panel:
    """p50, p99 and p99.9 of a histogram's ``bucket`` series, one line per ``by``."""
    quantiles = [
        (
            f"histogram_quantile({q}, sum by (le, {by}) ({rate(bucket, matchers)}))",
            f"p{label} {{{{{by}}}}}",
        )
        for q, label in (("0.5", "50"), ("0.99", "99"), ("0.999", "99.9"))
    ]
    return time_series(title, description, quantiles, unit="s")


def stat_panel(
    title: str,
    description: str,
    expr: str,
    *,
    unit: str = "none",
    width: int = 6,
    thresholds: Sequence[tuple[float | None, str]] = ((None, "green"),),
) -> stat.Panel:
    """One number: the latest value of ``expr``."""
    steps = [model.Threshold(value=value, color=color) for value, color in thresholds]
    levels = builder.ThresholdsConfig().mode(model.ThresholdsMode.ABSOLUTE).steps(steps)
    panel = (
        stat.Panel().with_target(_query(expr, "")).thresholds(levels)
        .graph_mode(viz_model.BigValueGraphMode.AREA)
    )  # fmt: skip
    return _finish(panel, title, description, unit, width)


def table_panel(
    title: str, description: str, expr: str, *, unit: str = "short", width: int = 24
) -> table.Panel:
    """The current series of ``expr`` as rows, one column per label."""
    query = _query(expr, "", instant=True).format(prometheus_model.PromQueryFormat.TABLE)
    panel = table.Panel().with_target(query).show_header(True)
    return _finish(panel, title, description, unit, width)


def bars(
    title: str, description: str, expr: str, legend: str, *, unit: str = "short", width: int = 12
) -> bargauge.Panel:
    """The current values of ``expr`` as horizontal bars (a top-N list)."""
    panel = (
        bargauge.Panel().with_target(_query(expr, legend, instant=True))
        .orientation(viz_model.VizOrientation.HORIZONTAL)
    )  # fmt: skip
    return _finish(panel, title, description, unit, width)
