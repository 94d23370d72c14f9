"""The broker's latency histogram: a run observed at once counts as its sends one by one."""

from __future__ import annotations

import prometheus_client
from hypothesis import given
from hypothesis import strategies as st

from rocketkube.broker.stats import LatencyHistogram
from rocketkube.common.metrics import LATENCY_BUCKETS

_seconds = st.lists(
    st.sampled_from([0.0, *LATENCY_BUCKETS]) | st.floats(0, 10, allow_nan=False), max_size=40
)


def samples(histogram: str, registry: prometheus_client.CollectorRegistry) -> dict[str, float]:
    return {
        f"{sample.name}{sorted(sample.labels.items())}": sample.value
        for family in registry.collect()
        if family.name == histogram
        for sample in family.samples
    }


@given(_seconds)
def test_observe_many_counts_as_observing_each(seconds: list[float]) -> None:
    many, each = prometheus_client.CollectorRegistry(), prometheus_client.CollectorRegistry()
    LatencyHistogram("t", "doc", many).observe_many(seconds)
    one = LatencyHistogram("t", "doc", each)
    for value in seconds:
        one.observe(value)
    assert samples("t", many) == samples("t", each)
    assert samples("t", many)["t_count[]"] == len(seconds)
