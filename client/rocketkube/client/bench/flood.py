"""``rocketkube bench flood``: what a flood of malformed frames leaves a well-behaved client.

One :class:`~rocketkube.client.producer.Producer` sends one message at a time (each waits
for its answer) on its own connections, first alone for ``baseline`` seconds, then for
``duration`` seconds while ``connections`` flooding connections
(:mod:`~rocketkube.client.bench.flooder`, in a child process) send malformed frames to
the broker and the name server. The result holds the producer's sends a second and
latency in both phases, the share of its baseline it kept, and the flood's frame rate; the
CPU the broker and the name server spent, when their process ids are known.

Both phases are bounded in time and everything goes to loopback addresses only.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import sys
import time
from collections.abc import AsyncIterator
from typing import Any, Final

from rocketkube.client.admin import AdminClient
from rocketkube.client.bench import flooder
from rocketkube.client.bench.broker import process_cpu_seconds
from rocketkube.client.bench.stats import Report, Stats
from rocketkube.client.producer import Producer
from rocketkube.common import errors, runtime
from rocketkube.common.message.model import Message

__all__ = ["FloodResult", "FloodSettings", "Phase", "format_result", "run_flood"]

_STOP_TIMEOUT: Final = 30.0
_RAMP_SECONDS: Final = 0.5
"""The flood runs this long before the producer's flood phase starts, and after it ends."""


@dataclasses.dataclass(frozen=True, slots=True)
class FloodSettings:
    connections: int = 24
    duration: float = 30.0
    """Seconds of the flood phase."""
    baseline: float = 5.0
    """Seconds of the producer alone, first."""
    body_size: int = 100
    topic: str = "BenchmarkFlood"
    group: str = "benchmark_flood_producer"
    send_timeout: float = 3.0


@dataclasses.dataclass(frozen=True, slots=True)
class Phase:
    """The producer's sends in one phase, and the servers' CPU meanwhile."""

    name: str
    report: Report
    client_cpu_pct: float
    broker_cpu_pct: float | None
    namesrv_cpu_pct: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "phase": self.name,
            "sends_per_s": round(self.report.tps, 1),
            **self.report.as_dict(),
            "client_cpu_pct": self.client_cpu_pct,
            "broker_cpu_pct": self.broker_cpu_pct,
            "namesrv_cpu_pct": self.namesrv_cpu_pct,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class FloodResult:
    baseline: Phase
    flood: Phase
    counts: dict[str, float]
    settings: FloodSettings

    @property
    def kept(self) -> float:
        """The share of its baseline sends a second the producer kept under the flood."""
        base = self.baseline.report.tps
        return self.flood.report.tps / base if base > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "benchmark": "flood",
            "baseline": self.baseline.as_dict(),
            "flood": self.flood.as_dict(),
            "kept": round(self.kept, 3),
            "flood_counts": self.counts,
            "settings": dataclasses.asdict(self.settings),
        }


def format_result(result: FloodResult) -> str:
    """Lines for a person: both phases, the share kept, the flood's rate."""
    lines = []
    for phase in (result.baseline, result.flood):
        r = phase.report
        cpu = f", CPU: client {phase.client_cpu_pct:.0f}%"
        if phase.broker_cpu_pct is not None:
            cpu += f", broker {phase.broker_cpu_pct:.0f}%"
        if phase.namesrv_cpu_pct is not None:
            cpu += f", name server {phase.namesrv_cpu_pct:.0f}%"
        lines.append(
            f"{phase.name:>8}: {r.tps:8,.0f} sends/s  p50 {r.p50_ms:.3f} ms  "
            f"p99 {r.p99_ms:.3f} ms  max {r.max_ms:.1f} ms  failed {r.failed}{cpu}"
        )
    counts = result.counts
    seconds = counts["seconds"] or 1.0
    lines.append(
        f"flood: {counts['frames_per_s']:,.0f} frames/s written by {result.settings.connections} "
        f"connections, {counts['answers'] / seconds:,.0f}/s answered, "
        f"{counts['garbage'] / seconds:,.0f}/s undecodable ({counts['frames']:,.0f} frames, "
        f"{counts['answers']:,.0f} answers, {counts['garbage']:,.0f} undecodable of which "
        f"{counts['closed_by_server']:,.0f} closed by the server; flooder CPU "
        f"{100 * counts['cpu_seconds'] / seconds:.0f}%)"
    )
    lines.append(f"kept: {100 * result.kept:.1f}% of the baseline sends/s")
    return "\n".join(lines)


class _Cpu:
    """CPU percentages of this process and of the server processes over a span."""

    def __init__(self, pids: tuple[int | None, int | None]) -> None:
        self._pids = pids
        self._started = time.perf_counter()
        self._own = time.process_time()
        self._cpu = [process_cpu_seconds(pid) for pid in pids]

    def end(self) -> tuple[float, float | None, float | None]:
        """(this process, the broker, the name server), each in % of one core."""
        wall = max(time.perf_counter() - self._started, 1e-9)
        out = []
        for pid, before in zip(self._pids, self._cpu, strict=True):
            after = process_cpu_seconds(pid)
            used = None if after is None or before is None else after - before
            out.append(None if used is None else round(100 * used / wall, 1))
        return round(100 * (time.process_time() - self._own) / wall, 1), out[0], out[1]


async def _send_for(producer: Producer, settings: FloodSettings, seconds: float) -> Report:
    """One send at a time for ``seconds``: the latency of each, the failures counted."""
    body = b"f" * settings.body_size
    clock = time.perf_counter
    started = clock()
    stats = Stats(started)
    deadline = started + seconds
    while (begun := clock()) < deadline:
        try:
            await producer.send(Message(settings.topic, body))
        except (errors.RocketKubeError, OSError, TimeoutError):
            stats.fail()
        else:
            stats.ok(clock() - begun, len(body))
    return stats.total(clock())


@contextlib.asynccontextmanager
async def _flooding(
    broker: str, namesrv: str, settings: FloodSettings
) -> AsyncIterator[asyncio.Future[dict[str, float]]]:
    """The flooder child process, for the flood phase and its ramp; yields its counts (a
    future, set once it has finished)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketkube.client.bench.flooder", broker,
        "--namesrv", namesrv, "--connections", str(settings.connections),
        "--duration", str(settings.duration + 2 * _RAMP_SECONDS),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        env=runtime.child_env(),
    )  # fmt: skip
    assert proc.stdout is not None
    counts: asyncio.Future[dict[str, float]] = asyncio.get_running_loop().create_future()
    try:
        started = await asyncio.wait_for(proc.stdout.readline(), _STOP_TIMEOUT)
        if started.strip() != flooder.STARTED.encode():
            raise errors.RocketKubeError(f"the flooder did not start: {started!r}")
        await asyncio.sleep(_RAMP_SECONDS)
        yield counts
        out = await asyncio.wait_for(proc.stdout.read(), _STOP_TIMEOUT)
        await proc.wait()
        if proc.returncode != 0 or not out.strip():
            raise errors.RocketKubeError(f"the flooder exited with code {proc.returncode}")
        counts.set_result(json.loads(out.splitlines()[-1]))
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def run_flood(
    namesrv: str,
    settings: FloodSettings,
    *,
    broker: str | None = None,
    broker_pid: int | None = None,
    namesrv_pid: int | None = None,
) -> FloodResult:
    """The baseline, then the flood phase (the broker of the topic's route unless
    ``broker`` is given); loopback addresses only."""
    namesrvs = [flooder.loopback_address(a.strip()) for a in namesrv.split(";") if a.strip()]
    pids = (broker_pid, namesrv_pid)
    async with Producer(settings.group, namesrv, send_timeout=settings.send_timeout) as producer:
        await _send_for(producer, settings, 0.5)  # the topic created, routes and pools warm
        if broker is None:
            async with AdminClient(namesrv) as admin:
                broker = sorted((await admin.broker_addrs(settings.topic)).values())[0]
        flooder.loopback_address(broker)
        cpu = _Cpu(pids)
        baseline = await _send_for(producer, settings, settings.baseline)
        base_phase = Phase("baseline", baseline, *cpu.end())
        async with _flooding(broker, namesrvs[0], settings) as counts:
            cpu = _Cpu(pids)
            flooded = await _send_for(producer, settings, settings.duration)
            flood_phase = Phase("flood", flooded, *cpu.end())
    return FloodResult(base_phase, flood_phase, counts.result(), settings)
