"""Broker benchmark scenarios: pipelined sends, pulls of what was sent, sync-send latency.

One coroutine per scenario, each over a broker address and returning a frozen result::

    send_pipelined  SEND_MESSAGE_V2 (310), up to ``window`` requests outstanding on each of
                    ``connections`` connections; only code-0 answers count as sent
    pull_all        PULL_MESSAGE (11) of every message in a topic, ``maxMsgNums`` 32, up to
                    ``pull_window`` pulls outstanding across the queues; every record is
                    decoded with :mod:`rocketkube.common.message.record`, as a consumer would
    send_latency    one SEND_MESSAGE_V2 at a time through ``Connection.invoke``: p50/p99

:func:`run_suite` runs them in that order for each body size, after a warm-up, on fresh
topics (so offsets start at 0 and a pull reads exactly what the timed sends stored). The
pipelined connections are :mod:`rocketkube.bench.pipeline`'s.

CPU is sampled for this process (``time.process_time``) and, when its pid is given, for the
broker (``/proc/<pid>/stat``, Linux): whichever side sits near 100 % of a core is the limit.
On a shared virtual machine both are inflated by time the host takes away, so compare
figures from one run, next to the :func:`calibrate` spread printed with them.
"""

from __future__ import annotations

import math
import os
import secrets
import time
import typing
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal

from rocketkube.bench import pipeline
from rocketkube.common import errors
from rocketkube.common.protocol import admin_headers, pull_headers
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

__all__ = [
    "BenchSettings",
    "LatencyResult",
    "Result",
    "ThroughputResult",
    "calibrate",
    "check_targets",
    "create_topic",
    "format_header",
    "format_result",
    "percentile",
    "process_cpu_seconds",
    "pull_all",
    "queue_ranges",
    "run_suite",
    "send_latency",
    "send_pipelined",
]

_MB: Final = 1_000_000


@dataclass(frozen=True, slots=True)
class BenchSettings:
    """What to run; counts are per body size."""

    messages: int = 200_000
    body_sizes: tuple[int, ...] = (100, 1024)
    window: int = 512
    """Requests outstanding per connection in pipelined sends."""
    connections: int = 1
    queues: int = 8
    warmup: int = 5_000
    """Pipelined sends to a separate topic before each body size's timed runs."""
    latency_count: int = 2_000
    pull_batch: int = 32
    pull_window: int = 16
    """Pull requests outstanding, across the queues."""
    timeout: float = 600.0
    """Seconds a scenario may take before it is abandoned."""


# -- results ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ThroughputResult:
    """A timed pipelined run: sends acknowledged with code 0, or records pulled."""

    kind: Literal["send", "pull"]
    flush: str
    body_size: int
    expected: int
    messages: int
    failed: int
    """Sends answered with a code other than 0; pulls (requests) that failed."""
    seconds: float
    window: int
    connections: int
    client_cpu: float
    """Client CPU seconds over the run (all of this process)."""
    broker_cpu: float | None
    """Broker CPU seconds over the run, when its pid is known."""
    codes: tuple[tuple[int, int], ...] = ()
    """(response code, count) of every answer."""
    window_rates: tuple[float, ...] = ()
    """Messages a second in ~20 windows of equal message counts, in order."""

    @property
    def msgs_per_s(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        """Message bodies only, in MB (10^6 bytes) a second."""
        return self.msgs_per_s * self.body_size / _MB

    @property
    def median_window(self) -> float:
        """The median of :attr:`window_rates`: steadier than the mean when the CPU is
        taken away from time to time (a shared virtual machine)."""
        return percentile(sorted(self.window_rates), 0.5)

    @property
    def client_ceiling(self) -> float:
        """Messages a second this client could drive with a whole core to itself."""
        return self.messages / self.client_cpu if self.client_cpu > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "flush": self.flush,
            "body_size": self.body_size,
            "expected": self.expected,
            "messages": self.messages,
            "failed": self.failed,
            "seconds": round(self.seconds, 6),
            "msgs_per_s": round(self.msgs_per_s, 1),
            "mb_per_s": round(self.mb_per_s, 3),
            "median_window_msgs_per_s": round(self.median_window, 1),
            "best_window_msgs_per_s": round(max(self.window_rates, default=0.0), 1),
            "window": self.window,
            "connections": self.connections,
            "client_cpu_pct": _pct(self.client_cpu, self.seconds),
            "broker_cpu_pct": _pct(self.broker_cpu, self.seconds),
            "client_us_per_msg": _per_msg_us(self.client_cpu, self.messages),
            "broker_us_per_msg": _per_msg_us(self.broker_cpu, self.messages),
            "client_ceiling_msgs_per_s": round(self.client_ceiling, 1),
            "codes": {str(code): count for code, count in self.codes},
        }


@dataclass(frozen=True, slots=True)
class LatencyResult:
    """One-at-a-time sends: each waits for its answer before the next is written."""

    flush: str
    body_size: int
    messages: int
    failed: int
    seconds: float
    p50_us: float
    p99_us: float
    mean_us: float
    max_us: float
    client_cpu: float
    broker_cpu: float | None
    kind: Literal["latency"] = "latency"

    @property
    def msgs_per_s(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "flush": self.flush,
            "body_size": self.body_size,
            "messages": self.messages,
            "failed": self.failed,
            "seconds": round(self.seconds, 6),
            "msgs_per_s": round(self.msgs_per_s, 1),
            "p50_us": round(self.p50_us, 1),
            "p99_us": round(self.p99_us, 1),
            "mean_us": round(self.mean_us, 1),
            "max_us": round(self.max_us, 1),
            "client_cpu_pct": _pct(self.client_cpu, self.seconds),
            "broker_cpu_pct": _pct(self.broker_cpu, self.seconds),
        }


Result = ThroughputResult | LatencyResult


def _pct(cpu: float | None, seconds: float) -> float | None:
    return None if cpu is None or seconds <= 0 else round(100 * cpu / seconds, 1)


def _per_msg_us(cpu: float | None, messages: int) -> float | None:
    return None if cpu is None or messages <= 0 else round(1e6 * cpu / messages, 2)


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of ascending values (0.0 when there are none)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


# -- CPU sampling ------------------------------------------------------------------------------

_CLOCK_TICKS: Final = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of process ``pid`` from /proc; None if unreadable."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
    except OSError:
        return None
    # Fields after the command name start at field 3 (state): utime is 14, stime 15.
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


class _Span:
    """Wall time and CPU of this process and of the broker, from construction to ``end``."""

    def __init__(self, broker_pid: int | None) -> None:
        self._pid = broker_pid
        self._broker = process_cpu_seconds(broker_pid)
        self._cpu = time.process_time()
        self._wall = time.perf_counter()

    def end(self) -> tuple[float, float, float | None]:
        """(wall seconds, client CPU seconds, broker CPU seconds or None)."""
        wall = time.perf_counter() - self._wall
        cpu = time.process_time() - self._cpu
        broker = process_cpu_seconds(self._pid)
        used = None if broker is None or self._broker is None else broker - self._broker
        return wall, cpu, used


def calibrate(rounds: int = 5, iterations: int = 1_000_000) -> tuple[float, float]:
    """(fastest, slowest) milliseconds of a fixed pure-Python loop, a machine speed probe.

    On a shared virtual machine the same loop can take many times longer from one round to
    the next: a wide spread says the figures beside it are noisy, whatever they are.
    """
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        total = 0
        for i in range(iterations):
            total += i
        times.append(1000 * (time.perf_counter() - started))
    return min(times), max(times)


# -- scenarios ---------------------------------------------------------------------------------


async def _invoke(client: RemotingClient, address: str, cmd: RemotingCommand) -> RemotingCommand:
    reply = await client.invoke(address, cmd)
    if reply.code != ResponseCode.SUCCESS:
        raise errors.RemotingError(
            f"request {cmd.code} to {address} answered {reply.code}: {reply.remark}"
        )
    return reply


async def create_topic(client: RemotingClient, address: str, topic: str, queues: int) -> None:
    """UPDATE_AND_CREATE_TOPIC (17) with ``queues`` read and write queues, perm RW."""
    header = admin_headers.CreateTopicRequestHeader(
        topic=topic,
        default_topic=pipeline.DEFAULT_TOPIC,
        read_queue_nums=queues,
        write_queue_nums=queues,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        order=False,
    )
    await _invoke(client, address, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC,
                                                           header.encode()))  # fmt: skip


async def queue_ranges(
    client: RemotingClient, address: str, topic: str, queues: int
) -> dict[int, tuple[int, int]]:
    """Each queue's (min offset, max offset) by GET_MIN_OFFSET (29) and GET_MAX_OFFSET (30)."""
    out: dict[int, tuple[int, int]] = {}
    for q in range(queues):
        bounds = []
        for code, header_cls in (
            (RequestCode.GET_MIN_OFFSET, pull_headers.GetMinOffsetRequestHeader),
            (RequestCode.GET_MAX_OFFSET, pull_headers.GetMaxOffsetRequestHeader),
        ):
            ext = header_cls(topic=topic, queue_id=q).encode()
            reply = await _invoke(client, address, RemotingCommand.request(code, ext))
            bounds.append(int(reply.ext_fields["offset"]))
        out[q] = (bounds[0], bounds[1])
    return out


async def send_pipelined(
    address: str,
    topic: str,
    body_size: int,
    count: int,
    *,
    window: int = 512,
    connections: int = 1,
    queues: int = 8,
    flush: str = "unknown",
    broker_pid: int | None = None,
    timeout: float = 600.0,
) -> ThroughputResult:
    """Send ``count`` messages of ``body_size`` bytes, ``window`` outstanding per connection."""
    frames = pipeline.SendFrames(topic, b"b" * body_size, queues, int(time.time() * 1000))
    connections = max(1, min(connections, count or 1))
    shares = [count // connections + (i < count % connections) for i in range(connections)]
    firsts = [sum(shares[:i]) for i in range(connections)]

    progress = pipeline.Progress()

    def factory(share: int, first: int) -> Callable[[], pipeline.Pipeline]:
        return lambda: pipeline.SendPipeline(frames, share, first, window, progress)

    pipes = await pipeline.open_pipelines(
        address, [factory(s, f) for s, f in zip(shares, firsts, strict=True)]
    )
    span = _Span(broker_pid)
    await pipeline.run_pipelines(pipes, timeout, progress)
    seconds, client_cpu, broker_cpu = span.end()
    sends = typing.cast(list[pipeline.SendPipeline], pipes)
    codes: Counter[int] = Counter()
    for pipe in sends:
        codes.update(pipe.codes)
    return ThroughputResult(
        kind="send",
        flush=flush,
        body_size=body_size,
        expected=count,
        messages=sum(p.completed for p in sends),
        failed=sum(p.failed for p in sends),
        seconds=seconds,
        window=window,
        connections=connections,
        client_cpu=client_cpu,
        broker_cpu=broker_cpu,
        codes=tuple(sorted(codes.items())),
        window_rates=tuple(progress.window_rates()),
    )


async def pull_all(
    client: RemotingClient,
    address: str,
    topic: str,
    body_size: int,
    *,
    queues: int = 8,
    batch: int = 32,
    window: int = 16,
    flush: str = "unknown",
    broker_pid: int | None = None,
    timeout: float = 600.0,
) -> ThroughputResult:
    """Pull every message of ``topic`` (one connection), decoding each record."""
    ranges = await queue_ranges(client, address, topic, queues)
    expected = sum(high - low for low, high in ranges.values())
    plan = pipeline.pull_plan(ranges, batch)
    progress = pipeline.Progress()
    pipes = await pipeline.open_pipelines(
        address, [lambda: pipeline.PullPipeline(topic, plan, batch, window, progress)]
    )
    span = _Span(broker_pid)
    await pipeline.run_pipelines(pipes, timeout, progress)
    seconds, client_cpu, broker_cpu = span.end()
    pipe = typing.cast(pipeline.PullPipeline, pipes[0])
    return ThroughputResult(
        kind="pull",
        flush=flush,
        body_size=body_size,
        expected=expected,
        messages=pipe.completed,
        failed=pipe.failed,
        seconds=seconds,
        window=window,
        connections=1,
        client_cpu=client_cpu,
        broker_cpu=broker_cpu,
        codes=tuple(sorted(pipe.codes.items())),
        window_rates=tuple(progress.window_rates()),
    )


async def send_latency(
    client: RemotingClient,
    address: str,
    topic: str,
    body_size: int,
    count: int,
    *,
    queues: int = 8,
    flush: str = "unknown",
    broker_pid: int | None = None,
) -> LatencyResult:
    """Send ``count`` messages one at a time; the time of each ``invoke``, building excluded."""
    body = b"l" * body_size
    prefix = secrets.token_hex(10).upper()
    born = int(time.time() * 1000)
    conn = await client.connection(address)
    timings: list[float] = []
    failed = 0
    perf = time.perf_counter
    span = _Span(broker_pid)
    for seq in range(count):
        cmd = pipeline.send_request(topic, seq % queues, body, f"{prefix}{seq:012X}", born)
        started = perf()
        reply = await conn.invoke(cmd, client.timeout)
        timings.append(perf() - started)
        if reply.code != ResponseCode.SUCCESS:
            failed += 1
    seconds, client_cpu, broker_cpu = span.end()
    timings.sort()
    return LatencyResult(
        flush=flush,
        body_size=body_size,
        messages=count - failed,
        failed=failed,
        seconds=seconds,
        p50_us=1e6 * percentile(timings, 0.50),
        p99_us=1e6 * percentile(timings, 0.99),
        mean_us=1e6 * sum(timings) / len(timings) if timings else 0.0,
        max_us=1e6 * timings[-1] if timings else 0.0,
        client_cpu=client_cpu,
        broker_cpu=broker_cpu,
    )


async def run_suite(
    address: str,
    settings: BenchSettings,
    *,
    flush: str = "unknown",
    broker_pid: int | None = None,
    on_result: Callable[[Result], None] | None = None,
) -> list[Result]:
    """For each body size: warm-up, pipelined sends, pulls of them, then latency sends."""
    results: list[Result] = []

    def emit(result: Result) -> None:
        results.append(result)
        if on_result is not None:
            on_result(result)

    token = f"{os.getpid():x}{secrets.token_hex(3)}"
    client = RemotingClient(timeout=30.0)
    s = settings
    try:
        for size in s.body_sizes:
            name = f"bench_{flush.split('_')[0].lower()}_{size}_{token}"
            for topic in (f"{name}_warmup", name, f"{name}_latency"):
                await create_topic(client, address, topic, s.queues)
            if s.warmup > 0:
                await send_pipelined(
                    address, f"{name}_warmup", size, s.warmup, window=s.window,
                    connections=s.connections, queues=s.queues, timeout=s.timeout,
                )  # fmt: skip
            sent = await send_pipelined(
                address, name, size, s.messages, window=s.window, connections=s.connections,
                queues=s.queues, flush=flush, broker_pid=broker_pid, timeout=s.timeout,
            )  # fmt: skip
            emit(sent)
            pulled = await pull_all(
                client, address, name, size, queues=s.queues, batch=s.pull_batch,
                window=s.pull_window, flush=flush, broker_pid=broker_pid, timeout=s.timeout,
            )  # fmt: skip
            emit(pulled)
            if s.latency_count > 0:
                latency = await send_latency(
                    client, address, f"{name}_latency", size, s.latency_count, queues=s.queues,
                    flush=flush, broker_pid=broker_pid,
                )  # fmt: skip
                emit(latency)
    finally:
        await client.close()
    return results


# -- reporting ---------------------------------------------------------------------------------

_COLUMNS: Final = (
    ("scenario", 8), ("flush", 11), ("body", 5), ("messages", 9), ("failed", 6), ("secs", 7),
    ("msgs/s", 9), ("median win", 10), ("MB/s", 7), ("p50 us", 7), ("p99 us", 7),
    ("client", 6), ("broker", 6),
)  # fmt: skip


def format_header() -> str:
    """The table heading; CPU columns are % of one core over the scenario."""
    return "  ".join(f"{name:>{width}}" for name, width in _COLUMNS)


def _cpu_cell(cpu: float | None, seconds: float) -> str:
    pct = _pct(cpu, seconds)
    return "-" if pct is None else f"{pct:.0f}%"


def format_result(result: Result) -> str:
    """One table row."""
    if isinstance(result, LatencyResult):
        kind, win, mb = "latency", "-", "-"
        p50, p99 = f"{result.p50_us:.0f}", f"{result.p99_us:.0f}"
    else:
        kind, win = result.kind, f"{result.median_window:,.0f}"
        mb, p50, p99 = f"{result.mb_per_s:.1f}", "-", "-"
    cells = (
        kind, result.flush, str(result.body_size), str(result.messages), str(result.failed),
        f"{result.seconds:.3f}", f"{result.msgs_per_s:,.0f}", win, mb, p50, p99,
        _cpu_cell(result.client_cpu, result.seconds), _cpu_cell(result.broker_cpu, result.seconds),
    )  # fmt: skip
    return "  ".join(f"{cell:>{width}}" for cell, (_, width) in zip(cells, _COLUMNS, strict=True))


@dataclass(frozen=True, slots=True)
class _Target:
    name: str
    kind: str
    flush: str
    body_size: int
    goal: str
    value: Callable[[Result], float]
    met: Callable[[float], bool]


_TARGETS: Final = (
    _Target("pipelined 100 B sends, ASYNC_FLUSH", "send", "ASYNC_FLUSH", 100,
            ">= 100000 msgs/s", lambda r: r.msgs_per_s, lambda v: v >= 100_000),
    _Target("pipelined 100 B sends, SYNC_FLUSH (group commit)", "send", "SYNC_FLUSH", 100,
            ">= 30000 msgs/s", lambda r: r.msgs_per_s, lambda v: v >= 30_000),
    _Target("one-at-a-time 100 B sends, ASYNC_FLUSH: p99", "latency", "ASYNC_FLUSH", 100,
            "< 1000 us", lambda r: typing.cast(LatencyResult, r).p99_us, lambda v: v < 1000),
    _Target("client capacity (msgs/s per client core), 100 B ASYNC_FLUSH sends", "send",
            "ASYNC_FLUSH", 100, ">= 50000 msgs/s",
            lambda r: typing.cast(ThroughputResult, r).client_ceiling, lambda v: v >= 50_000),
)  # fmt: skip


def check_targets(results: Iterable[Result]) -> list[dict[str, Any]]:
    """The project's targets against the results that measure them."""
    results = list(results)
    out = []
    for target in _TARGETS:
        for r in results:
            if (r.kind, r.flush, r.body_size) == (target.kind, target.flush, target.body_size):
                value = target.value(r)
                out.append({"target": target.name, "goal": target.goal,
                            "value": round(value, 1), "met": target.met(value)})  # fmt: skip
    return out
