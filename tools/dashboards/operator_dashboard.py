"""The Operator dashboard: how often it reconciles each kind and how that ends, how long a
pass takes, the drift it repaired, the broker pods it rolled, and the conditions of the
objects it watches."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as builder

from dashboards import kit

UID = "rocketkube-operator"
OPERATOR = 'namespace=~"$namespace"'
"""The operator's own namespace: its metrics carry no cluster."""
OBJECTS = f'{OPERATOR}, resource_name=~"$cluster"'


def build() -> builder.Dashboard:
    return (
        kit.base(
            "rocketkube / Operator",
            UID,
            "Reconciles, errors, durations, drift repairs and rolls of the rocketkube operator.",
            namespaces="label_values(rocketkube_operator_managed_objects, namespace)",
            clusters='label_values(rocketkube_operator_condition{namespace=~"$namespace", '
            'kind="BrokerCluster"}, resource_name)',
        )
        .with_row(builder.Row("Reconciles"))
        .with_panel(kit.time_series(
            "Reconciles per second", "Handler runs by kind and how they ended (ok, retry: "
            "asked to run again later, invalid: the spec cannot be applied, error).",
            [(
                "sum by (kind, result) "
                f"({kit.rate('rocketkube_operator_reconciles_total', OPERATOR)})",
                "{{kind}} {{result}}",
            )],
        ))
        .with_panel(kit.time_series(
            "Errors per second", "Handler runs that failed with an unexpected error, by kind.",
            [(
                "sum by (kind) ("
                + kit.rate("rocketkube_operator_reconciles_total", f'{OPERATOR}, result="error"')
                + ")",
                "{{kind}}",
            )],
        ))
        .with_panel(kit.percentiles(
            "Reconcile duration", "How long handler runs take, by kind.",
            "rocketkube_operator_reconcile_seconds_bucket", "kind", matchers=OPERATOR,
        ))
        .with_panel(kit.time_series(
            "Managed objects", "Resources the operator watches, by kind.",
            [(f"sum by (kind) (rocketkube_operator_managed_objects{{{OPERATOR}}})", "{{kind}}")],
        ))
        .with_row(builder.Row("Changes"))
        .with_panel(kit.time_series(
            "Drift repairs per second", "Topics and consumer groups changed on the brokers "
            "behind the operator's back, and set back to their spec.",
            [(
                f"sum by (kind) ({kit.rate('rocketkube_operator_drift_repairs_total', OPERATOR)})",
                "{{kind}}",
            )],
        ))
        .with_panel(kit.time_series(
            "Rolling restarts per second", "Broker pods deleted by rolling updates.",
            [(f"sum({kit.rate('rocketkube_operator_roll_restarts_total', OPERATOR)})", "pods")],
        ))
        .with_panel(kit.table_panel(
            "Cluster conditions", "Conditions of the BrokerClusters (1: True); "
            "ScaleDownBlocked True for 30 minutes raises an alert.",
            f'rocketkube_operator_condition{{{OBJECTS}, kind="BrokerCluster"}}',
        ))
    )  # fmt: skip
