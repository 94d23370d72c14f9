"""The producer's latency fault table and queue choice, with a clock the test moves."""

from __future__ import annotations

import random

import pytest

from rocketkube.client.producer.latency_fault import (
    ISOLATION_LATENCY_MS,
    LatencyFaultTolerance,
    not_available_duration,
    select_queue,
)
from rocketkube.client.routing import MessageQueue


class Clock:
    def __init__(self) -> None:
        self.now_ms = 1_000_000

    def __call__(self) -> int:
        return self.now_ms


def queues(*brokers: str, per_broker: int = 2) -> list[MessageQueue]:
    return [MessageQueue("T", b, i) for b in brokers for i in range(per_broker)]


@pytest.mark.parametrize(
    ("latency", "duration"),
    [
        (0, 0),
        (49, 0),
        (50, 0),
        (549, 0),
        (550, 30_000),
        (999, 30_000),
        (1000, 60_000),
        (2000, 120_000),
        (3000, 180_000),
        (14_999, 180_000),
        (15_000, 600_000),
        (ISOLATION_LATENCY_MS, 600_000),
    ],
)
def test_latency_maps_to_the_java_not_available_duration(latency: int, duration: int) -> None:
    assert not_available_duration(latency) == duration


def test_a_failed_broker_is_isolated_until_its_time_is_up() -> None:
    clock = Clock()
    faults = LatencyFaultTolerance(clock)
    assert faults.is_available("b")
    faults.update("b", 12, isolation=True)
    assert not faults.is_available("b")
    clock.now_ms += 599_999
    assert not faults.is_available("b")
    clock.now_ms += 1
    assert faults.is_available("b")


def test_fast_answers_keep_a_broker_available() -> None:
    clock = Clock()
    faults = LatencyFaultTolerance(clock)
    faults.update("a", 40)
    faults.update("b", 700)
    assert faults.is_available("a")
    assert not faults.is_available("b")
    faults.update("b", 20)  # a later fast answer clears it
    assert faults.is_available("b")


def test_selection_skips_unavailable_brokers_round_robin() -> None:
    clock = Clock()
    faults = LatencyFaultTolerance(clock)
    faults.update("b", 0, isolation=True)
    qs = queues("a", "b")
    picked = [select_queue(qs, faults, counter) for counter in range(8)]
    assert {q.broker_name for q in picked} == {"a"}
    assert {q.queue_id for q in picked} == {0, 1}


def test_without_faults_selection_is_plain_round_robin() -> None:
    faults = LatencyFaultTolerance(Clock())
    qs = queues("a", "b")
    assert [select_queue(qs, faults, c) for c in range(4)] == qs


def test_when_every_broker_is_down_the_least_bad_one_is_tried() -> None:
    clock = Clock()
    faults = LatencyFaultTolerance(clock, random.Random(7))
    faults.update("a", 5000)  # 180 s, latency 5000
    faults.update("b", 600)  # 30 s, latency 600: better
    qs = queues("a", "b")
    picked = {select_queue(qs, faults, counter).broker_name for counter in range(6)}
    assert picked == {"b"}  # half of two items is one: always the best


def test_pick_one_at_least_cycles_over_the_better_half() -> None:
    clock = Clock()
    faults = LatencyFaultTolerance(clock, random.Random(1))
    for name, latency in [("a", 600), ("b", 700), ("c", 5000), ("d", 6000)]:
        faults.update(name, latency)
    assert {faults.pick_one_at_least() for _ in range(6)} == {"a", "b"}
    assert LatencyFaultTolerance(clock).pick_one_at_least() is None


def test_a_least_bad_broker_outside_the_route_is_forgotten() -> None:
    clock = Clock()
    faults = LatencyFaultTolerance(clock)
    faults.update("a", 5000, isolation=True)
    faults.update("gone", 600)  # the least bad, but not a broker of this topic
    qs = queues("a")
    assert select_queue(qs, faults, 3) == qs[1]  # falls back to plain round robin
    assert faults.is_available("gone")  # removed from the table
    with pytest.raises(ValueError, match="no queue"):
        select_queue([], faults, 0)
