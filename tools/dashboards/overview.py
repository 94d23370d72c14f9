"""The Cluster overview dashboard: is every broker and name server up, how much flows in and
out, how full the disks are, and how far dispatch and replication are behind."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as builder

from dashboards import kit
from dashboards.kit import SELECTOR

UID = "rocketkube-overview"


def build() -> builder.Dashboard:
    return (
        kit.base(
            "rocketkube / Cluster overview",
            UID,
            "Brokers and name servers up, traffic, disk use, dispatch and replication lag.",
        )
        .with_row(builder.Row("Up"))
        .with_panel(kit.stat_panel(
            "Brokers up", "Broker pods Prometheus scrapes successfully.",
            f'sum(up{{{SELECTOR}, component="broker"}})',
        ))
        .with_panel(kit.stat_panel(
            "Name servers up", "Name server pods Prometheus scrapes successfully.",
            f'sum(up{{{SELECTOR}, component="namesrv"}})',
        ))
        .with_panel(kit.stat_panel(
            "Brokers registered", "Brokers the name servers route to (the most any one knows).",
            f"max(rocketkube_namesrv_live_brokers{{{SELECTOR}}})",
        ))
        .with_panel(kit.stat_panel(
            "Masters", "Brokers serving writes (brokerId 0).",
            f'count(rocketkube_broker_info{{{SELECTOR}, role="master"}})',
        ))
        .with_row(builder.Row("Traffic"))
        .with_panel(kit.time_series(
            "Messages per second", "Messages stored (in) and delivered by pulls (out).",
            [
                (f"sum({kit.rate('rocketkube_broker_messages_in_total')})", "in"),
                (f"sum({kit.rate('rocketkube_broker_messages_out_total')})", "out"),
            ],
            unit="short",
        ))
        .with_panel(kit.time_series(
            "Bytes per second", "Message body bytes stored (in), record bytes pulled (out).",
            [
                (f"sum({kit.rate('rocketkube_broker_bytes_in_total')})", "in"),
                (f"sum({kit.rate('rocketkube_broker_bytes_out_total')})", "out"),
            ],
            unit="Bps",
        ))
        .with_row(builder.Row("Store"))
        .with_panel(kit.time_series(
            "Disk use", "Used share of each broker's store disk; writes stop at the "
            "diskMaxUsedSpaceRatio (the alert fires at 85%).",
            [(f"max by (pod) (rocketkube_broker_disk_used_ratio{{{SELECTOR}}})", "{{pod}}")],
            unit="percentunit", width=8,
        ))
        .with_panel(kit.time_series(
            "Dispatch lag", "Commit log bytes not yet in the consume queues and index "
            "(a slave dispatches what it has copied).",
            [(
                f"max by (pod) (rocketkube_broker_commitlog_max_offset{{{SELECTOR}}}"
                f" - rocketkube_broker_dispatch_offset{{{SELECTOR}}})",
                "{{pod}}",
            )],
            unit="bytes", width=8,
        ))
        .with_panel(kit.time_series(
            "Replication lag", "Commit log bytes no slave has acknowledged yet, per master.",
            [(f"max by (pod) (rocketkube_broker_ha_slave_lag_bytes{{{SELECTOR}}})", "{{pod}}")],
            unit="bytes", width=8,
        ))
    )  # fmt: skip
