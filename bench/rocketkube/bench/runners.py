"""What each ``rocketkube bench`` benchmark does once its flags are parsed: build its
settings, start a local cluster when no server was given (:mod:`.local_cluster`), run it,
and print the table or progress lines and the JSON summary.

``bench broker`` measures a running broker (``--broker host:port``), or starts its own in a
temporary directory: a name server, then one broker per flush mode asked for (``--flush
both``: ASYNC_FLUSH, then SYNC_FLUSH). It prints a table row as each scenario ends and a
JSON summary at the end (``--json``: the JSON alone on stdout, the table on stderr). Every
runner returns the exit code: 1 when a send failed or a pull missed a message, 2 for
flags that cannot go together.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from rocketkube.bench import broker as bench
from rocketkube.bench import flood, flooder, sdk
from rocketkube.bench.local_cluster import local_broker, local_namesrv, local_namesrv_process
from rocketkube.bench.stats import Report
from rocketkube.client import credential_options, tls_options
from rocketkube.common import runtime
from rocketkube.common.remoting import frame

__all__ = ["FLUSH_MODES", "run_broker", "run_client_bench", "run_flood_bench"]

FLUSH_MODES = {"async": ("ASYNC_FLUSH",), "sync": ("SYNC_FLUSH",),
               "both": ("ASYNC_FLUSH", "SYNC_FLUSH")}  # fmt: skip
_BATCH_MAX_DELAY_MS = sdk.ClientBenchSettings().batch_max_delay_ms


def settings_from(args: argparse.Namespace) -> bench.BenchSettings:
    return bench.BenchSettings(
        messages=args.messages,
        body_sizes=args.body_sizes,
        window=args.window,
        connections=args.connections,
        queues=args.queues,
        warmup=args.warmup,
        latency_count=args.latency_count,
        pull_window=args.pull_window,
    )


async def run_broker(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    table: TextIO = sys.stderr if args.json else sys.stdout
    results: list[bench.Result] = []

    def show(result: bench.Result) -> None:
        results.append(result)
        print(bench.format_result(result), file=table, flush=True)

    fastest, slowest = bench.calibrate()
    load = os.getloadavg()
    # Brokers started here run this install, with this environment: compiled or not alike.
    compiled = frame.compiled_scan() is not None
    machine: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "load_before": load,
        "calibration_ms": [round(fastest, 1), round(slowest, 1)],
        "compiled_modules": compiled,
    }
    print(
        f"machine: {os.cpu_count()} CPUs, load {load[0]:.2f}, a 1M-step Python loop takes "
        f"{fastest:.0f}-{slowest:.0f} ms (a wide spread: noisy figures); compiled "
        f"modules {'on' if compiled else 'off (ROCKETKUBE_NO_EXTENSIONS or not built)'}",
        file=table,
    )
    print(bench.format_header(), file=table, flush=True)
    if args.broker:
        label = {"sync": "SYNC_FLUSH", "async": "ASYNC_FLUSH"}.get(args.flush, "unknown")
        await bench.run_suite(args.broker, settings, flush=label, on_result=show)
        where = args.broker
    else:
        with tempfile.TemporaryDirectory(prefix="rocketkube-bench-") as tmp:
            async with local_namesrv(Path(tmp)) as namesrv:
                for mode in FLUSH_MODES[args.flush]:
                    async with local_broker(Path(tmp), namesrv, mode) as (address, pid):
                        await bench.run_suite(
                            address, settings, flush=mode, broker_pid=pid, on_result=show
                        )
        where = "child processes on 127.0.0.1"
    summary = {
        "benchmark": "broker",
        "broker": where,
        "python": sys.version.split()[0],
        "machine": {**machine, "load_after": os.getloadavg()},
        "settings": dataclasses.asdict(settings),
        "results": [r.as_dict() for r in results],
        "targets": bench.check_targets(results),
    }
    if args.json:
        print(json.dumps(summary), flush=True)
    else:
        print(file=table)
        for target in summary["targets"]:
            verdict = "met" if target["met"] else "NOT met"
            print(f"target {target['target']}: {target['goal']}, measured {target['value']:,}"
                  f" -> {verdict}", file=table)  # fmt: skip
        print(f"summary: {json.dumps(summary)}", file=table, flush=True)
    return 0 if all_delivered(results) else 1


def client_settings_from(args: argparse.Namespace) -> sdk.ClientBenchSettings:
    return sdk.ClientBenchSettings(
        topic=args.topic,
        workers=args.workers,
        body_size=args.size,
        keys=args.keys,
        tags=args.tags,
        group=args.group,
        messages=args.messages or None,
        duration=args.duration,
        interval=args.interval,
        rollback_rate=getattr(args, "rollback_rate", 0.0),
        unknown_rate=getattr(args, "unknown_rate", 0.0),
        prefill=getattr(args, "prefill", False) or not args.namesrv_addr,
        auto_batch=getattr(args, "auto_batch", False),
        batch_max_delay_ms=getattr(args, "batch_max_delay_ms", _BATCH_MAX_DELAY_MS),
        send_timeout=args.send_timeout_ms / 1000,
        settle_heap=args.settle_heap,
        tls=tls_options.from_args(args, os.environ),
        credentials=credential_options.from_args(args, os.environ),
    )


async def run_client_bench(args: argparse.Namespace) -> int:
    """``bench producer|consumer|tproducer``: against ``-n`` or a cluster started here."""
    settings = client_settings_from(args)
    if settings.messages is None and settings.duration is None:
        print("rocketkube bench: give --messages or --duration", file=sys.stderr)
        return 2
    if settings.tls is not None and not args.namesrv_addr:
        print("rocketkube bench: TLS needs -n (the cluster started here is plain)",
              file=sys.stderr)  # fmt: skip
        return 2
    bench_run: sdk.ClientBench = args._client_bench
    out: TextIO = sys.stderr if args.json else sys.stdout
    live = sys.stderr.isatty()

    def report(label: str, window: Report) -> None:
        if live:
            print("\r\x1b[K", end="", file=sys.stderr)
        print(f"{time.strftime('%H:%M:%S')} {window.line(label)}", file=out, flush=True)

    def progress(done: int, elapsed: float) -> None:
        goal = f"/{settings.messages:,}" if settings.messages else ""
        print(f"\r\x1b[K{done:,}{goal} messages, {elapsed:.0f} s", end="", file=sys.stderr,
              flush=True)  # fmt: skip

    on_progress = progress if live else None
    heap = runtime.settled_heap() if settings.settle_heap else contextlib.nullcontext()
    if args.namesrv_addr:
        with heap:
            summary = await bench_run(args.namesrv_addr, settings, report, on_progress)
    else:
        with tempfile.TemporaryDirectory(prefix="rocketkube-bench-") as tmp:
            root = Path(tmp)
            async with (
                local_namesrv(root) as namesrv,
                local_broker(root, namesrv, "ASYNC_FLUSH"),
            ):
                with heap:
                    summary = await bench_run(namesrv, settings, report, on_progress)
    if live:
        print("\r\x1b[K", end="", file=sys.stderr)
    result = summary.as_dict()
    if not args.json:
        print(summary.total.line(f"Total ({summary.total.messages:,} in "
                                 f"{summary.total.seconds:.1f} s)"), file=out)  # fmt: skip
    print(json.dumps(result), flush=True)
    return 1 if summary.total.failed else 0


async def run_flood_bench(args: argparse.Namespace) -> int:
    """``bench flood``: against ``-n`` (servers on this machine) or a cluster started here."""
    settings = flood.FloodSettings(
        connections=args.connections,
        duration=args.duration,
        baseline=args.baseline,
        body_size=args.size,
        topic=args.topic,
        frames=args.frames,
    )
    try:
        for address in [*(args.namesrv_addr or "").split(";"), args.broker or ""]:
            if address.strip():
                flooder.loopback_address(address.strip())
    except ValueError as exc:
        print(f"rocketkube bench: {exc}", file=sys.stderr)
        return 2
    out: TextIO = sys.stderr if args.json else sys.stdout
    extent = f"{settings.duration:g} s" if settings.frames is None else (
        f"{settings.frames:,} frames (at most {settings.duration:g} s)")  # fmt: skip
    print(f"a producer alone for {settings.baseline:g} s, then under a flood of "
          f"{settings.connections} connections for {extent}", file=out, flush=True)  # fmt: skip
    if args.namesrv_addr:
        result = await flood.run_flood(args.namesrv_addr, settings, broker=args.broker)
    else:
        with tempfile.TemporaryDirectory(prefix="rocketkube-bench-") as tmp:
            root = Path(tmp)
            async with (
                local_namesrv_process(root) as (namesrv, namesrv_pid),
                local_broker(root, namesrv, "ASYNC_FLUSH") as (_, broker_pid),
            ):
                result = await flood.run_flood(
                    namesrv, settings, broker_pid=broker_pid, namesrv_pid=namesrv_pid
                )
    print(flood.format_result(result), file=out)
    print(json.dumps(result.as_dict()), flush=True)
    failed = result.baseline.report.failed or result.flood.report.failed
    return 1 if failed or result.verdict.lost else 0


def all_delivered(results: Sequence[bench.Result]) -> bool:
    """Every send acknowledged and every pull read what the queues held."""
    for r in results:
        if r.failed or (isinstance(r, bench.ThroughputResult) and r.messages != r.expected):
            return False
    return True
