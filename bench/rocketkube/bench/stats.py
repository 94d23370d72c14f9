"""Counting for the SDK benchmarks: throughput and latency per reporting window and overall.

Pure bookkeeping (the caller passes the times), so it is tested directly and costs little
on the hot path: one ``append`` per message.
"""

from __future__ import annotations

import array
import dataclasses
import statistics
from typing import Any, Final

from rocketkube.bench.broker import percentile


@dataclasses.dataclass(frozen=True, slots=True)
class Report:
    """One window (or the whole run): counts, rates and latency in milliseconds."""

    seconds: float
    messages: int
    failed: int
    bytes: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float

    @property
    def tps(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.bytes / self.seconds / 1e6 if self.seconds > 0 else 0.0

    def line(self, label: str) -> str:
        """A human line in the spirit of RocketMQ's benchmark tools."""
        return (
            f"{label} TPS: {self.tps:,.0f}  MB/s: {self.mb_per_s:.2f}  "
            f"RT(ms) p50: {self.p50_ms:.3f} p99: {self.p99_ms:.3f} max: {self.max_ms:.3f}  "
            f"Failed: {self.failed}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 3),
            "messages": self.messages,
            "failed": self.failed,
            "tps": round(self.tps, 1),
            "mb_per_s": round(self.mb_per_s, 3),
            "latency_ms": {
                "p50": round(self.p50_ms, 3),
                "p99": round(self.p99_ms, 3),
                "max": round(self.max_ms, 3),
                "mean": round(self.mean_ms, 3),
            },
        }


def _report(seconds: float, latencies: array.array[float], failed: int, size: int) -> Report:
    ordered = sorted(latencies)
    count = len(ordered)
    return Report(
        seconds=seconds,
        messages=count,
        failed=failed,
        bytes=size,
        p50_ms=1000 * percentile(ordered, 0.50),
        p99_ms=1000 * percentile(ordered, 0.99),
        max_ms=1000 * ordered[-1] if ordered else 0.0,
        mean_ms=1000 * sum(ordered) / count if count else 0.0,
    )


class Stats:
    """Latencies (seconds) of completed operations, kept per window and for the whole run."""

    def __init__(self, started: float) -> None:
        self.started = started
        self._window_started = started
        self._all: array.array[float] = array.array("d")
        self._window: array.array[float] = array.array("d")
        self._failed = self._window_failed = 0
        self._bytes = self._window_bytes = 0

    @property
    def completed(self) -> int:
        """Operations finished so far, failed ones included."""
        return len(self._all) + len(self._window) + self._failed + self._window_failed

    def ok(self, latency: float, size: int) -> None:
        self._window.append(latency)
        self._window_bytes += size

    def fail(self) -> None:
        self._window_failed += 1

    def window(self, now: float) -> Report:
        """The report of the window ending ``now``; a new window starts."""
        report = _report(
            now - self._window_started, self._window, self._window_failed, self._window_bytes
        )
        self._all.extend(self._window)
        self._failed += self._window_failed
        self._bytes += self._window_bytes
        self._window = array.array("d")
        self._window_failed = self._window_bytes = 0
        self._window_started = now
        return report

    def total(self, now: float) -> Report:
        """The whole run up to ``now`` (closes the current window first)."""
        self.window(now)
        return _report(now - self.started, self._all, self._failed, self._bytes)


class CpuWindows:
    """The client's CPU seconds per operation in short windows of a run.

    On a machine whose CPU is taken away from minute to minute, the whole run's figure
    mixes fast stretches with stalled ones (a throttled process is charged for its stalls
    too); the best and the median window say what the client costs when it runs. Windows
    of fewer than ``min_operations`` are merged into the next, so a stall does not make a
    window of a handful of operations.
    """

    MIN_OPERATIONS: Final = 200

    def __init__(self, min_operations: int = MIN_OPERATIONS) -> None:
        self._cpu = 0.0
        self._completed = 0
        self._min_operations = min_operations
        self.per_operation: list[float] = []
        """CPU seconds per operation of each closed window, in order."""

    def start(self, cpu: float, completed: int) -> None:
        """Open the first window at ``cpu`` process seconds and ``completed`` operations."""
        self._cpu, self._completed = cpu, completed

    def sample(self, cpu: float, completed: int) -> None:
        """Close a window at ``cpu`` process seconds and ``completed`` operations, if it
        holds enough operations."""
        done = completed - self._completed
        if done >= self._min_operations:
            self.per_operation.append((cpu - self._cpu) / done)
            self._cpu, self._completed = cpu, completed

    def best(self) -> float | None:
        return min(self.per_operation, default=None)

    def median(self) -> float | None:
        return statistics.median(self.per_operation) if self.per_operation else None

    def as_dict(self) -> dict[str, Any]:
        """The JSON summary's fields (microseconds per operation)."""
        best, median = self.best(), self.median()
        return {
            "client_us_per_msg_best_window": None if best is None else round(1e6 * best, 2),
            "client_us_per_msg_median_window": None if median is None else round(1e6 * median, 2),
            "cpu_windows": len(self.per_operation),
        }
