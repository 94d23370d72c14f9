"""The Broker internals dashboard: send, pull and flush latency percentiles from the
histograms, request latency by code, long-polling pulls held, and the memory the store's
mapped files and the process use."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as builder

from dashboards import kit
from dashboards.kit import SELECTOR

UID = "rocketkube-broker-internals"


def build() -> builder.Dashboard:
    return (
        kit.base(
            "rocketkube / Broker internals",
            UID,
            "Latency percentiles, flushes, long polling and memory of each broker.",
        )
        .with_row(builder.Row("Latency"))
        .with_panel(kit.percentiles(
            "Send latency", "Send request to stored reply (flushed, and replicated for "
            "SYNC_MASTER), per broker.",
            "rocketkube_broker_send_latency_seconds_bucket", "pod",
        ))
        .with_panel(kit.percentiles(
            "Pull latency", "Pull request to response, per broker; long polls are held up "
            "to their suspend timeout, so high percentiles are expected to be seconds.",
            "rocketkube_broker_pull_latency_seconds_bucket", "pod",
        ))
        .with_panel(kit.percentiles(
            "Commit log flush latency", "One flush round: the sync of everything appended "
            "since the last round (group commit), per broker.",
            "rocketkube_broker_flush_latency_seconds_bucket", "pod",
        ))
        .with_panel(kit.time_series(
            "Request latency p99 by code", "Time to produce each response, by request code.",
            [(
                "histogram_quantile(0.99, sum by (le, code) "
                f"({kit.rate('rocketkube_broker_request_latency_seconds_bucket')}))",
                "{{code}}",
            )],
            unit="s",
        ))
        .with_row(builder.Row("Work"))
        .with_panel(kit.time_series(
            "Requests per second by result", "Requests handled, by response code.",
            [(
                f"sum by (result) ({kit.rate('rocketkube_broker_requests_total')})",
                "{{result}}",
            )],
            width=8,
        ))
        .with_panel(kit.time_series(
            "Flushes per second", "Commit log flush rounds (group commit: far fewer than sends).",
            [(
                f"sum by (pod) ({kit.rate('rocketkube_broker_flush_latency_seconds_count')})",
                "{{pod}}",
            )],
            width=8,
        ))
        .with_panel(kit.time_series(
            "Long-polling pulls held", "Pull requests suspended until messages arrive.",
            [(f"sum by (pod) (rocketkube_broker_held_pulls{{{SELECTOR}}})", "{{pod}}")],
            width=8,
        ))
        .with_row(builder.Row("Memory"))
        .with_panel(kit.time_series(
            "Mapped store files", "Bytes of commit log, consume queue and index files mapped "
            "into memory, and the process's resident memory (which counts the mapped pages "
            "it touched: the page cache it uses).",
            [
                (f"sum by (pod) (rocketkube_broker_mapped_bytes{{{SELECTOR}}})",
                 "mapped {{pod}}"),
                (f"sum by (pod) (rocketkube_broker_process_resident_memory_bytes{{{SELECTOR}}})",
                 "resident {{pod}}"),
            ],
            unit="bytes",
        ))
        .with_panel(kit.time_series(
            "Not yet flushed", "Commit log bytes appended but not yet known on disk.",
            [(
                f"max by (pod) (rocketkube_broker_commitlog_max_offset{{{SELECTOR}}}"
                f" - rocketkube_broker_commitlog_flushed_offset{{{SELECTOR}}})",
                "{{pod}}",
            )],
            unit="bytes",
        ))
    )  # fmt: skip
