"""The pure parts behind a consumer's running info: per-topic pull/consume figures, a
process queue's snapshot, and the admin CLI's rendering of both."""

from __future__ import annotations

from rocketkube.client.admin.cli import render
from rocketkube.client.consumer.consume_stats import ConsumeStatsRecorder
from rocketkube.client.consumer.process_queue import ProcessQueue
from rocketkube.common.message.model import MessageExt
from rocketkube.common.protocol.admin_bodies import (
    ClientConnection,
    ConsumeStats,
    MessageQueue,
    OffsetWrapper,
)
from rocketkube.common.protocol.heartbeat import parse_subscription
from rocketkube.common.protocol.running_info import (
    ConsumerRunningInfo,
    ConsumeStatus,
    ProcessQueueInfo,
)

MQ0, MQ1 = MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_stats_average_over_the_window() -> None:
    clock = Clock()
    stats = ConsumeStatsRecorder(window=60, clock=clock)
    assert stats.status("T") == ConsumeStatus()
    clock.now += 10
    stats.pulled("T", 4.0, 32)
    stats.pulled("T", 2.0, 8)
    stats.consumed("T", 10.0, 30, ok=True)
    clock.now += 1
    stats.consumed("T", 20.0, 10, ok=False)
    status = stats.status("T")
    assert status.pull_rt == 3.0
    assert status.pull_tps == 40 / 11
    assert status.consume_rt == 15.0
    assert status.consume_ok_tps == 30 / 11
    assert status.consume_failed_tps == 10 / 11
    assert status.consume_failed_msgs == 10
    assert stats.status("Other") == ConsumeStatus()


def test_stats_forget_old_seconds_but_count_failures_for_an_hour() -> None:
    clock = Clock()
    stats = ConsumeStatsRecorder(window=60, clock=clock)
    stats.consumed("T", 5.0, 3, ok=False)
    clock.now += 120
    status = stats.status("T")
    assert (status.consume_rt, status.consume_failed_tps) == (0.0, 0.0)
    assert status.consume_failed_msgs == 3
    clock.now += 3600
    assert stats.status("T").consume_failed_msgs == 0


def message(offset: int, body: bytes = b"x") -> MessageExt:
    msg = MessageExt(topic="T", body=body)
    msg.queue_offset = offset
    return msg


def test_process_queue_info_splits_cache_and_orderly_batch() -> None:
    pq = ProcessQueue()
    pq.add([message(i) for i in range(5, 10)])
    pq.take(2)
    pq.locked, pq.last_lock_time = True, 50.0
    pq.last_pull_timestamp = 123
    info = pq.info(5, now_ms=100_000, now_monotonic=60.0)
    assert info == ProcessQueueInfo(
        commit_offset=5,
        cached_msg_min_offset=7,
        cached_msg_max_offset=9,
        cached_msg_count=3,
        transaction_msg_min_offset=5,
        transaction_msg_max_offset=6,
        transaction_msg_count=2,
        locked=True,
        last_lock_timestamp=90_000,
        last_pull_timestamp=123,
    )
    assert ProcessQueue().info(-1, now_ms=1, now_monotonic=1.0) == ProcessQueueInfo(-1)


def test_consumer_progress_client_ip_column() -> None:
    stats = ConsumeStats({MQ0: OffsetWrapper(10, 4), MQ1: OffsetWrapper(3, 3)})
    ips = {MQ0: "10.0.0.5"}
    text = render.consumer_progress_text(stats, client_ips=ips)
    header, row0, row1 = text.splitlines()[:3]
    assert "#Consumer Offset  #Client IP  #Diff" in header
    assert row0.split()[5] == "10.0.0.5"
    assert row1.split()[5] == "N/A"
    assert "#Client IP" not in render.consumer_progress_text(stats)
    offsets = render.consume_stats_json(stats, ips)["offsets"]
    assert [o["clientIp"] for o in offsets] == ["10.0.0.5", "N/A"]
    assert "clientIp" not in render.consume_stats_json(stats)["offsets"][0]


def test_running_info_rendering() -> None:
    info = ConsumerRunningInfo(
        properties={"consumerGroup": "G"},
        subscriptions=(parse_subscription("T", "A"),),
        mq_table={MQ0: ProcessQueueInfo(commit_offset=4)},
        status_table={"T": ConsumeStatus(pull_tps=2.5)},
        jstack="stacks",
    )
    text = render.running_info_text(info)
    for part in (
        "#Consumer Properties#",
        "consumerGroup: G",
        "#Consumer Subscription#",
        "#Consumer MQ Detail#",
        "#Consumer RT&TPS#",
        "2.50",
        "#Consumer jstack#",
    ):
        assert part in text  # fmt: skip
    data = render.running_info_json(info)
    assert data["mqTable"][0]["queueId"] == 0
    assert data["mqTable"][0]["commitOffset"] == 4
    assert data["subscriptionSet"][0]["subString"] == "A"
    assert data["jstack"] == "stacks"


def test_consumer_status_listing() -> None:
    conn = ClientConnection("127.0.0.1@a", "127.0.0.1:5", "PYTHON", 399)
    info = ConsumerRunningInfo(mq_table={MQ0: ProcessQueueInfo()})
    text = render.consumer_status_text([(conn, info), (conn, "Timeout")], same=True)
    assert "Same subscription in the same group of consumer" in text
    assert "Timeout" in text
    different = render.consumer_status_text([(conn, info)], same=False)
    assert "WARN: Different subscription" in different


def test_consumer_status_lists_stuck_queues_when_subscriptions_agree() -> None:
    conn = ClientConnection("127.0.0.1@a", "127.0.0.1:5", "PYTHON", 399)
    info = ConsumerRunningInfo()
    text = render.consumer_status_text([(conn, info)], same=True, warnings=["a stuck queue"])
    assert text.endswith("Same subscription in the same group of consumer\na stuck queue")
