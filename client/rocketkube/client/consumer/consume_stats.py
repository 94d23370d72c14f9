"""A consumer's recent pull and consume figures per topic (Java ``ConsumerStatsManager``).

What GET_CONSUMER_RUNNING_INFO's ``statusTable`` reports: over the last ``window``
seconds, the mean pull and consume round trip (ms per request) and messages pulled,
consumed and failed per second; and the messages that failed in the last hour. Samples go
into one-second buckets (a minute of them per topic) and one-minute buckets for the hour,
so memory stays small at any rate. Pure: the caller passes the clock.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from rocketkube.common.protocol.running_info import ConsumeStatus

__all__ = ["ConsumeStatsRecorder"]

_HOUR = 3600


@dataclass(slots=True)
class _Bucket:
    second: int
    pulls: int = 0
    pull_ms: float = 0.0
    pulled: int = 0
    consumes: int = 0
    consume_ms: float = 0.0
    ok: int = 0
    failed: int = 0


class _TopicStats:
    __slots__ = ("failed_minutes", "seconds")

    def __init__(self) -> None:
        self.seconds: deque[_Bucket] = deque()
        self.failed_minutes: deque[list[int]] = deque()  # [minute, failed]


class ConsumeStatsRecorder:
    """Per-topic pull/consume statistics (see the module docstring)."""

    def __init__(self, window: float = 60.0, clock: Callable[[], float] = time.monotonic):
        self.window = int(window)
        self._clock = clock
        self._start = clock()
        self._topics: dict[str, _TopicStats] = {}

    def pulled(self, topic: str, rt_ms: float, count: int) -> None:
        """A pull of ``topic`` answered in ``rt_ms`` with ``count`` messages."""
        bucket = self._bucket(topic)
        bucket.pulls += 1
        bucket.pull_ms += rt_ms
        bucket.pulled += count

    def consumed(self, topic: str, rt_ms: float, count: int, *, ok: bool) -> None:
        """A listener call on ``count`` messages of ``topic`` took ``rt_ms``."""
        bucket = self._bucket(topic)
        bucket.consumes += 1
        bucket.consume_ms += rt_ms
        if ok:
            bucket.ok += count
            return
        bucket.failed += count
        stats = self._topics[topic]
        minute = bucket.second // 60
        if stats.failed_minutes and stats.failed_minutes[-1][0] == minute:
            stats.failed_minutes[-1][1] += count
        else:
            stats.failed_minutes.append([minute, count])

    def status(self, topic: str) -> ConsumeStatus:
        """The figures of ``topic`` now; zeros for a topic with no samples."""
        stats = self._topics.get(topic)
        if stats is None:
            return ConsumeStatus()
        now = int(self._clock())
        self._prune(stats, now)
        span = max(1.0, min(float(self.window), self._clock() - self._start))
        b = stats.seconds
        pulls, consumes = sum(x.pulls for x in b), sum(x.consumes for x in b)
        return ConsumeStatus(
            pull_rt=sum(x.pull_ms for x in b) / pulls if pulls else 0.0,
            pull_tps=sum(x.pulled for x in b) / span,
            consume_rt=sum(x.consume_ms for x in b) / consumes if consumes else 0.0,
            consume_ok_tps=sum(x.ok for x in b) / span,
            consume_failed_tps=sum(x.failed for x in b) / span,
            consume_failed_msgs=sum(count for _, count in stats.failed_minutes),
        )

    def _bucket(self, topic: str) -> _Bucket:
        stats = self._topics.get(topic)
        if stats is None:
            stats = self._topics[topic] = _TopicStats()
        second = int(self._clock())
        if not stats.seconds or stats.seconds[-1].second != second:
            stats.seconds.append(_Bucket(second))
            self._prune(stats, second)
        return stats.seconds[-1]

    def _prune(self, stats: _TopicStats, now: int) -> None:
        while stats.seconds and stats.seconds[0].second <= now - self.window:
            stats.seconds.popleft()
        while stats.failed_minutes and stats.failed_minutes[0][0] <= (now - _HOUR) // 60:
            stats.failed_minutes.popleft()
