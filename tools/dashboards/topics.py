"""The Topics dashboard: what each topic takes in and gives out, its queues' offsets (how
many messages each ever held, how many are kept) and the busiest topics."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as builder

from dashboards import kit
from dashboards.kit import SELECTOR

UID = "rocketkube-topics"
TOPIC = f'{SELECTOR}, topic=~"$topic"'


def build() -> builder.Dashboard:
    return (
        kit.base(
            "rocketkube / Topics",
            UID,
            "Per-topic rates, queue offsets and the busiest topics.",
        )
        .with_variable(kit.query_variable(
            "topic", "Topic",
            'label_values(rocketkube_broker_queue_max_offset{namespace=~"$namespace", '
            'cluster=~"$cluster"}, topic)',
        ))
        .with_row(builder.Row("Rates"))
        .with_panel(kit.time_series(
            "Messages in per second", "Messages stored, by topic.",
            [(f"sum by (topic) ({kit.rate('rocketkube_broker_messages_in_total', TOPIC)})",
              "{{topic}}")],
        ))
        .with_panel(kit.time_series(
            "Messages out per second", "Messages delivered by pulls, by topic.",
            [(f"sum by (topic) ({kit.rate('rocketkube_broker_messages_out_total', TOPIC)})",
              "{{topic}}")],
        ))
        .with_panel(kit.time_series(
            "Bytes in per second", "Message body bytes stored, by topic.",
            [(f"sum by (topic) ({kit.rate('rocketkube_broker_bytes_in_total', TOPIC)})",
              "{{topic}}")],
            unit="Bps",
        ))
        .with_panel(kit.bars(
            "Top topics", "The ten topics storing the most messages per second now.",
            "topk(10, sum by (topic) "
            f"({kit.rate('rocketkube_broker_messages_in_total')}))",
            "{{topic}}", unit="short",
        ))
        .with_row(builder.Row("Queues"))
        .with_panel(kit.time_series(
            "Messages kept", "Messages the masters' queues still hold (max minus min offset).",
            [(
                "sum by (topic) ("
                + kit.masters(
                    f"rocketkube_broker_queue_max_offset{{{TOPIC}}}"
                    f" - rocketkube_broker_queue_min_offset{{{TOPIC}}}"
                )
                + ")",
                "{{topic}}",
            )],
        ))
        .with_panel(kit.time_series(
            "Queues", "Consume queues per topic, on the masters.",
            [(
                "count by (topic) ("
                + kit.masters(f"rocketkube_broker_queue_max_offset{{{TOPIC}}}")
                + ")",
                "{{topic}}",
            )],
        ))
        .with_panel(kit.table_panel(
            "Queue offsets", "Each master queue's min and max offset (the next one written).",
            kit.masters(f"rocketkube_broker_queue_max_offset{{{TOPIC}}}"),
        ))
    )  # fmt: skip
