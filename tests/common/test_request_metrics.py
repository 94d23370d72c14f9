"""RequestMetrics: tallies of requests (one or a run at once) exported as Prometheus families."""

from __future__ import annotations

import prometheus_client

from rocketkube.common.metrics import RequestMetrics
from rocketkube.common.remoting.codes import RequestCode, ResponseCode


def test_a_tally_counts_as_that_many_requests() -> None:
    registry = prometheus_client.CollectorRegistry()
    metrics = RequestMetrics(registry, "t")
    metrics(RequestCode.SEND_MESSAGE_V2, ResponseCode.SUCCESS, 0.0002, 64)
    metrics(RequestCode.SEND_MESSAGE_V2, ResponseCode.SUCCESS, 0.002, 1)
    metrics(RequestCode.SEND_MESSAGE_V2, None, 0.0002, 2)
    labels = {"code": "SEND_MESSAGE_V2"}
    ok = registry.get_sample_value("t_requests_total", {**labels, "result": "SUCCESS"})
    assert ok == 65
    assert registry.get_sample_value("t_requests_total", {**labels, "result": "NONE"}) == 2
    count = registry.get_sample_value("t_request_latency_seconds_count", labels)
    assert count == 67
    under_250us = registry.get_sample_value(
        "t_request_latency_seconds_bucket", {**labels, "le": "0.00025"}
    )
    assert under_250us == 66
    total = registry.get_sample_value("t_request_latency_seconds_sum", labels)
    assert total is not None
    assert abs(total - (66 * 0.0002 + 0.002)) < 1e-9
