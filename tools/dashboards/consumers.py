"""The Consumer groups dashboard: how far each group is behind (messages, per queue, and the
age of its oldest unconsumed message), how fast it consumes, and what it sends back for
retry or to its dead letter queue."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as builder

from dashboards import kit
from dashboards.kit import SELECTOR

UID = "rocketkube-consumers"
GROUP = f'{SELECTOR}, group=~"$group"'
DLQ = f'{SELECTOR}, topic=~"%DLQ%($group)"'


def build() -> builder.Dashboard:
    return (
        kit.base(
            "rocketkube / Consumer groups",
            UID,
            "Lag, consume rate, retries and dead letters of the consumer groups.",
        )
        .with_variable(kit.query_variable(
            "group", "Consumer group",
            'label_values(rocketkube_broker_consumer_lag{namespace=~"$namespace", '
            'cluster=~"$cluster"}, group)',
        ))
        .with_row(builder.Row("Lag"))
        .with_panel(kit.time_series(
            "Lag by group and topic", "Messages stored but not yet consumed (committed).",
            [(
                "sum by (group, topic) ("
                + kit.masters(f"rocketkube_broker_consumer_lag{{{GROUP}}}") + ")",
                "{{group}} / {{topic}}",
            )],
        ))
        .with_panel(kit.time_series(
            "Time behind", "Age of the oldest message a group has not consumed, per topic.",
            [(
                "max by (group, topic) ("
                + kit.masters(f"rocketkube_broker_consumer_lag_seconds{{{GROUP}}}") + ")",
                "{{group}} / {{topic}}",
            )],
            unit="s",
        ))
        .with_panel(kit.table_panel(
            "Lag per queue", "Each queue's lag on its master broker.",
            kit.masters(f"rocketkube_broker_consumer_lag{{{GROUP}}}"),
        ))
        .with_row(builder.Row("Consumption"))
        .with_panel(kit.time_series(
            "Consumed per second", "Messages delivered to the group by pulls, per topic.",
            [(
                "sum by (group, topic) "
                f"({kit.rate('rocketkube_broker_messages_out_total', GROUP)})",
                "{{group}} / {{topic}}",
            )],
        ))
        .with_panel(kit.time_series(
            "Sent back per second", "Messages the group's consumers failed and sent back: to "
            "the retry topic, or to the dead letter queue once out of retries.",
            [(
                f"sum by (group, to) ({kit.rate('rocketkube_broker_sent_back_total', GROUP)})",
                "{{group}} → {{to}}",
            )],
        ))
        .with_panel(kit.time_series(
            "Dead letter queue depth", "Messages kept in each group's %DLQ% topic.",
            [(
                "sum by (topic) ("
                + kit.masters(
                    f"rocketkube_broker_queue_max_offset{{{DLQ}}}"
                    f" - rocketkube_broker_queue_min_offset{{{DLQ}}}"
                )
                + ")",
                "{{topic}}",
            )],
        ))
    )  # fmt: skip
