"""``rocketkube bench flood``: what a flood of malformed frames leaves a well-behaved client.

One :class:`~rocketkube.client.producer.producer.Producer` sends one message at a time (each waits
for its answer) on its own connections, first alone for ``baseline`` seconds, then for
``duration`` seconds while ``connections`` flooding connections
(:mod:`~rocketkube.bench.flooder`, in a child process) send malformed frames to
the broker and the name server; with ``frames``, until the servers took that many of the
flood's frames (answered them, or closed the connection at them; ``duration`` then bounds
it). The result holds the producer's sends a second and latency in
both phases, the share of its baseline it kept, and the flood's frame rate; the CPU and
resident memory (before, peak, after) of the broker and the name server, when their process
ids are known; and whether every send the broker acknowledged can be read back at its
offset with its body (:mod:`~rocketkube.bench.flood_audit`).

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

from rocketkube.bench import flood_audit, flooder
from rocketkube.bench.broker import process_cpu_seconds
from rocketkube.bench.stats import Report, Stats
from rocketkube.client.admin.client import AdminClient
from rocketkube.client.producer.producer import Producer
from rocketkube.client.producer.settings import ProducerSettings
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
    frames: int | None = None
    """Frames the servers take of the flood before it stops (None: it lasts ``duration``)."""


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
    memory: flood_audit.RssWatch
    verdict: flood_audit.Verdict

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
            "rss_mib": self.memory.as_dict(),
            "messages": self.verdict.as_dict(),
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
        f"connections, {counts.get('taken', 0):,.0f} taken by the servers "
        f"({counts.get('taken', 0) / seconds:,.0f}/s), {counts['answers'] / seconds:,.0f}/s "
        "answered, "
        f"{counts['garbage'] / seconds:,.0f}/s undecodable ({counts['frames']:,.0f} frames in "
        f"{seconds:.1f} s, {counts['answers']:,.0f} answers, {counts['garbage']:,.0f} "
        f"undecodable and {counts.get('truncated', 0):,.0f} truncated, "
        f"{counts['closed_by_server']:,.0f} connections closed by the server; flooder CPU "
        f"{100 * counts['cpu_seconds'] / seconds:.0f}%)"
    )
    lines += result.memory.lines()
    verdict = result.verdict
    lines.append(f"messages: {verdict.acknowledged:,} acknowledged, {verdict.found:,} read back "
                 f"at their offsets, {verdict.lost:,} lost")  # fmt: skip
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


class _Sender:
    """The well-behaved producer: one send at a time, each body unique, each acknowledged
    one in the :class:`~rocketkube.bench.flood_audit.Ledger`."""

    def __init__(self, producer: Producer, settings: FloodSettings) -> None:
        self._producer = producer
        self._settings = settings
        self._sent = 0
        self.ledger = flood_audit.Ledger()

    async def send_for(self, seconds: float, until: asyncio.Future[Any] | None = None) -> Report:
        """Send for ``seconds``, or until ``until`` is done (after one send at least): the
        latency of each send, the failures counted."""
        settings = self._settings
        clock = time.perf_counter
        started = clock()
        stats = Stats(started)
        deadline = started + seconds
        while (begun := clock()) < deadline:
            self._sent += 1
            body = flood_audit.unique_body(self._sent, settings.body_size)
            try:
                result = await self._producer.send(Message(settings.topic, body))
            except (errors.RocketKubeError, OSError, TimeoutError):
                stats.fail()
            else:
                stats.ok(clock() - begun, len(body))
                self.ledger.add(result, body)
            if until is not None and until.done():
                break
        return stats.total(clock())


@contextlib.asynccontextmanager
async def _flooding(
    broker: str, namesrv: str, settings: FloodSettings
) -> AsyncIterator[asyncio.Future[bytes]]:
    """The flooder child process, for the flood phase and its ramp; yields the future of its
    output, done once it has finished (its counts are then :func:`_counts`)."""
    frames = () if settings.frames is None else ("--frames", str(settings.frames))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketkube.bench.flooder", broker,
        "--namesrv", namesrv, "--connections", str(settings.connections),
        "--duration", str(settings.duration + 2 * _RAMP_SECONDS), *frames,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        env=runtime.child_env(),
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        started = await asyncio.wait_for(proc.stdout.readline(), _STOP_TIMEOUT)
        if started.strip() != flooder.STARTED.encode():
            raise errors.RocketKubeError(f"the flooder did not start: {started!r}")
        output = asyncio.ensure_future(proc.stdout.read())
        await asyncio.sleep(_RAMP_SECONDS)
        yield output
        out = await asyncio.wait_for(output, _STOP_TIMEOUT)
        await proc.wait()
        if proc.returncode != 0 or not out.strip():
            raise errors.RocketKubeError(f"the flooder exited with code {proc.returncode}")
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
    memory = flood_audit.RssWatch({"broker": broker_pid, "name server": namesrv_pid})
    async with (
        Producer(
            settings=ProducerSettings(
                group=settings.group, namesrv_addr=namesrv, send_timeout=settings.send_timeout
            )
        ) as producer,
        AdminClient(namesrv) as admin,
    ):
        sender = _Sender(producer, settings)
        await sender.send_for(0.5)  # the topic created, routes and pools warm
        if broker is None:
            broker = sorted((await admin.broker_addrs(settings.topic)).values())[0]
        flooder.loopback_address(broker)
        cpu = _Cpu(pids)
        baseline = await sender.send_for(settings.baseline)
        base_phase = Phase("baseline", baseline, *cpu.end())
        async with memory.watching(), _flooding(broker, namesrvs[0], settings) as output:
            cpu = _Cpu(pids)
            flooded = await sender.send_for(settings.duration, output)
            flood_phase = Phase("flood", flooded, *cpu.end())
        counts: dict[str, float] = json.loads(output.result().splitlines()[-1])
        verdict = await sender.ledger.verify(admin)
    return FloodResult(base_phase, flood_phase, counts, settings, memory, verdict)
