"""``rocketkube bench``: benchmarks over the wire: ``broker`` (raw frames, the broker's own
ceiling), ``producer`` (the SDK, in the shape of RocketMQ's benchmark tools) and ``flood``
(what a flood of malformed frames leaves a well-behaved producer).

``bench broker`` measures a running broker (``--broker host:port``), or starts its own in a
temporary directory: a name server, then one broker per flush mode asked for (``--flush
both``: ASYNC_FLUSH, then SYNC_FLUSH), each a child process ``python -m rocketkube.common
broker ...``; the client component never imports the broker. It prints a table row as each
scenario ends and a JSON summary at the end (``--json``: the JSON alone on stdout, the table
on stderr). The exit code is 1 when a send failed or a pull missed a message.

Until the ``bench`` entry point is installed: ``python -m rocketkube.client.bench.cli broker``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TextIO

from rocketkube.client import tls_options
from rocketkube.client.bench import broker as bench
from rocketkube.client.bench import flood, flooder, sdk
from rocketkube.client.bench.stats import Report
from rocketkube.common import errors, runtime
from rocketkube.common.cli import Command
from rocketkube.common.protocol import route
from rocketkube.common.remoting import frame
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

FLUSH_MODES = {"async": ("ASYNC_FLUSH",), "sync": ("SYNC_FLUSH",),
               "both": ("ASYNC_FLUSH", "SYNC_FLUSH")}  # fmt: skip
START_TIMEOUT = 60.0
_BATCH_MAX_DELAY_MS = sdk.ClientBenchSettings().batch_max_delay_ms
STOP_TIMEOUT = 20.0

Runner = Callable[[argparse.Namespace], Coroutine[Any, Any, int]]


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of sizes: {text!r}") from None
    if not sizes or any(size < 0 for size in sizes):
        raise argparse.ArgumentTypeError(f"body sizes must be >= 0: {text!r}")
    return sizes


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {text}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {text}")
    return value


def configure_broker(parser: argparse.ArgumentParser) -> None:
    defaults = bench.BenchSettings()
    add = parser.add_argument
    add(
        "--messages",
        type=_positive,
        default=defaults.messages,
        help=f"timed sends per body size (default {defaults.messages})",
    )
    add(
        "--body-sizes",
        type=_sizes,
        default=defaults.body_sizes,
        metavar="N,N",
        help="message body sizes in bytes (default 100,1024)",
    )
    add(
        "--window",
        type=_positive,
        default=defaults.window,
        help=f"sends outstanding per connection (default {defaults.window})",
    )
    add(
        "--connections",
        type=_positive,
        default=defaults.connections,
        help=f"connections sending at once (default {defaults.connections})",
    )
    add(
        "--flush",
        choices=sorted(FLUSH_MODES),
        default="both",
        help="flushDiskType of the brokers started (default both); with --broker, only a label",
    )
    add("--broker", metavar="HOST:PORT", help="measure this broker instead of starting one")
    add(
        "--queues",
        type=_positive,
        default=defaults.queues,
        help=f"queues of each benchmark topic (default {defaults.queues})",
    )
    add(
        "--warmup",
        type=_non_negative,
        default=defaults.warmup,
        help=f"untimed sends before each body size (default {defaults.warmup})",
    )
    add(
        "--latency-count",
        type=_non_negative,
        default=defaults.latency_count,
        help=f"one-at-a-time sends timed for p50/p99 (default {defaults.latency_count})",
    )
    add(
        "--pull-window",
        type=_positive,
        default=defaults.pull_window,
        help=f"pulls outstanding (default {defaults.pull_window}), {defaults.pull_batch} each",
    )
    add("--json", action="store_true", help="print only the JSON summary on stdout")  # fmt: skip


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    child = sub.add_parser(
        "broker",
        help="broker ingest, delivery and send latency over loopback",
        description="Pipelined sends (SYNC_FLUSH and ASYNC_FLUSH), pulls of what was sent "
        "and one-at-a-time send latency, against brokers started here or --broker.",
    )
    configure_broker(child)
    child.set_defaults(_bench=run_broker)
    producer = sub.add_parser(
        "producer",
        help="SDK producer throughput and latency (RocketMQ's Producer benchmark)",
        description="Sync sends from -w concurrent senders of one rocketkube Producer; prints "
        "TPS, MB/s and latency every --interval seconds and a JSON summary at the end. "
        "Without -n it starts a name server and a broker here.",
    )
    producer_defaults = sdk.ClientBenchSettings()
    configure_client(producer, producer_defaults)
    producer.add_argument(
        "--auto-batch",
        action="store_true",
        help="gather sends into batches (Producer(auto_batch=True), RocketMQ 5's autoBatch)",
    )
    producer.add_argument(
        "--batch-max-delay-ms",
        type=_non_negative,
        default=producer_defaults.batch_max_delay_ms,
        help="with --auto-batch: how long a batch gathers (default "
        f"{producer_defaults.batch_max_delay_ms} ms)",
    )
    producer.set_defaults(_bench=run_client_bench, _client_bench=sdk.run_producer)
    consumer = sub.add_parser(
        "consumer",
        help="SDK push consumer throughput and born-to-consume latency (RocketMQ's Consumer)",
        description="A rocketkube PushConsumer of -t counting messages and their "
        "born-to-consumed latency. Without -n (or with --prefill) it first sends --messages "
        "messages and consumes them from the first offset; with -n it consumes what "
        "producers send from now on, until --messages arrived or --duration ran out.",
    )
    configure_client(consumer, sdk.ClientBenchSettings(group="benchmark_consumer"))
    consumer.add_argument(
        "--prefill", action="store_true", help="send --messages messages first, then consume them"
    )
    consumer.set_defaults(_bench=run_client_bench, _client_bench=sdk.run_consumer)
    tproducer = sub.add_parser(
        "tproducer",
        help="SDK transactional producer (RocketMQ's TransactionProducer benchmark)",
        description="Half message, local transaction, END_TRANSACTION, from -w concurrent "
        "senders of one TransactionProducer; --rollback-rate and --unknown-rate make that "
        "share of local transactions roll back or stay unknown (committed on check-back).",
    )
    configure_client(tproducer, sdk.ClientBenchSettings(group="benchmark_tproducer"))
    tproducer.add_argument(
        "--rollback-rate",
        type=_rate,
        default=0.0,
        help="share of transactions rolled back, 0-1 (default 0)",
    )
    tproducer.add_argument(
        "--unknown-rate",
        type=_rate,
        default=0.0,
        help="share left unknown until checked back, 0-1 (default 0)",
    )
    tproducer.set_defaults(_bench=run_client_bench, _client_bench=sdk.run_tproducer)
    flooded = sub.add_parser(
        "flood",
        help="a well-behaved producer's sends/s and latency, alone and under a flood",
        description="One producer sends one message at a time, alone for --baseline seconds, "
        "then for --duration seconds while --connections connections flood the broker and "
        "the name server with malformed frames (loopback only). Without -n it starts a name "
        "server and a broker here.",
    )
    configure_flood(flooded)
    flooded.set_defaults(_bench=run_flood_bench)


def configure_flood(parser: argparse.ArgumentParser) -> None:
    defaults = flood.FloodSettings()
    add = parser.add_argument
    add(
        "-n",
        "--namesrv-addr",
        default=os.environ.get("NAMESRV_ADDR"),
        help="name server(s) on this machine (default $NAMESRV_ADDR; none: start a cluster)",
    )
    add("--broker", metavar="HOST:PORT", help="the broker to flood (default: the topic's)")
    add(
        "--connections",
        type=_positive,
        default=defaults.connections,
        help=f"flooding connections (default {defaults.connections})",
    )
    add(
        "--duration",
        type=_seconds,
        default=defaults.duration,
        help=f"seconds of the flood (default {defaults.duration:g})",
    )
    add(
        "--baseline",
        type=_seconds,
        default=defaults.baseline,
        help=f"seconds of the producer alone first (default {defaults.baseline:g})",
    )
    add("-s", "--size", type=_non_negative, default=defaults.body_size, help="body bytes")
    add("-t", "--topic", default=defaults.topic, help=f"topic (default {defaults.topic})")
    add("--json", action="store_true", help="print only the JSON summary on stdout")


def _seconds(text: str) -> float:
    value = float(text)
    if not 0 < value <= flooder.MAX_DURATION:
        raise argparse.ArgumentTypeError(f"seconds in (0, {flooder.MAX_DURATION:g}]: {text}")
    return value


def _rate(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"a share between 0 and 1, not {text}")
    return value


def _flag(text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"true or false, not {text!r}")
    return lowered == "true"


def configure_client(parser: argparse.ArgumentParser, defaults: sdk.ClientBenchSettings) -> None:
    """The flags of RocketMQ's benchmark tools (-n -t -w -s -k) plus count and duration."""
    add = parser.add_argument
    add(
        "-n",
        "--namesrv-addr",
        default=os.environ.get("NAMESRV_ADDR"),
        help="name server(s), host:port;... (default $NAMESRV_ADDR; none: start a cluster here)",
    )
    add("-t", "--topic", default=defaults.topic, help=f"topic (default {defaults.topic})")
    add(
        "-w",
        "--workers",
        type=_positive,
        default=defaults.workers,
        help=f"concurrent operations (RocketMQ's threads; default {defaults.workers})",
    )
    add(
        "-s",
        "--size",
        type=_positive,
        default=defaults.body_size,
        help=f"message body bytes (default {defaults.body_size})",
    )
    add(
        "-k",
        "--keys",
        nargs="?",
        type=_flag,
        const=True,
        default=defaults.keys,
        help="give every message a key (-k or -k true)",
    )
    add("--tags", default=defaults.tags, help="tag of every message")
    add("-g", "--group", default=defaults.group, help=f"group (default {defaults.group})")
    add(
        "--messages",
        type=_non_negative,
        default=defaults.messages,
        help=f"stop after this many messages, 0 for no limit (default {defaults.messages})",
    )
    add("--duration", type=float, default=defaults.duration, help="stop after this many seconds")
    add(
        "--interval",
        type=float,
        default=defaults.interval,
        help=f"seconds between reports (default {defaults.interval:g})",
    )
    add(
        "--send-timeout-ms",
        type=_positive,
        default=round(defaults.send_timeout * 1000),
        help="a send's timeout, RocketMQ's sendMsgTimeout "
        f"(default {round(defaults.send_timeout * 1000)} ms)",
    )
    add(
        "--default-gc",
        dest="settle_heap",
        action="store_false",
        help="leave CPython's garbage collector as it comes (default: settle the heap first, "
        "as the servers do and as the README advises a busy producer)",
    )
    tls_options.add_arguments(parser)
    add("--json", action="store_true", help="print only the JSON summary on stdout")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    runner: Runner = args._bench
    try:
        return runtime.run(runner(args))
    except (errors.RocketKubeError, OSError, TimeoutError) as exc:
        print(f"rocketkube bench: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


COMMAND = Command(help="benchmarks over the wire (bench broker ...)", configure=configure, run=run)


# -- bench broker ------------------------------------------------------------------------------


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
        "compiled_accelerators": compiled,
    }
    print(
        f"machine: {os.cpu_count()} CPUs, load {load[0]:.2f}, a 1M-step Python loop takes "
        f"{fastest:.0f}-{slowest:.0f} ms (a wide spread: noisy figures); compiled "
        f"accelerators {'on' if compiled else 'off (ROCKETKUBE_NO_EXTENSIONS or not built)'}",
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
    )
    try:
        for address in [*(args.namesrv_addr or "").split(";"), args.broker or ""]:
            if address.strip():
                flooder.loopback_address(address.strip())
    except ValueError as exc:
        print(f"rocketkube bench: {exc}", file=sys.stderr)
        return 2
    out: TextIO = sys.stderr if args.json else sys.stdout
    print(f"a producer alone for {settings.baseline:g} s, then under a flood of "
          f"{settings.connections} connections for {settings.duration:g} s", file=out,
          flush=True)  # fmt: skip
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
    return 1 if result.baseline.report.failed or result.flood.report.failed else 0


def all_delivered(results: Sequence[bench.Result]) -> bool:
    """Every send acknowledged and every pull read what the queues held."""
    for r in results:
        if r.failed or (isinstance(r, bench.ThroughputResult) and r.messages != r.expected):
            return False
    return True


# -- child processes ---------------------------------------------------------------------------


def free_port() -> int:
    """A port free on 127.0.0.1 now (another process could take it before we bind it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@contextlib.asynccontextmanager
async def child_process(args: list[str], log: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """``python -m rocketkube.common ARGS`` with output to ``log``; terminated on exit."""
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "rocketkube.common", *args,
            stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out, env=runtime.child_env(),
        )  # fmt: skip
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), STOP_TIMEOUT)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def _wait_until(
    proc: asyncio.subprocess.Process, log: Path, what: str, ready: Callable[[], Any]
) -> None:
    """Poll ``ready`` (a coroutine function returning truth) until it is, or fail."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc.returncode is not None:
            raise errors.RemotingConnectError(
                f"{what} exited with code {proc.returncode}:\n{_tail(log)}"
            )
        try:
            if await ready():
                return
        except (errors.RemotingError, OSError):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready after {START_TIMEOUT:.0f}s:\n{_tail(log)}")
        await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def local_namesrv(root: Path) -> AsyncIterator[str]:
    """A name server child process; yields its address."""
    async with local_namesrv_process(root) as (address, _):
        yield address


@contextlib.asynccontextmanager
async def local_namesrv_process(root: Path) -> AsyncIterator[tuple[str, int]]:
    """A name server child process; yields (address, pid)."""
    port = free_port()
    args = [
        "namesrv", "--port", str(port), "--http-port", "0", "--log-level", "WARNING",
        "--kv-config-path", str(root / "namesrv" / "kvConfig.json"),
    ]  # fmt: skip
    log = root / "namesrv.log"
    async with child_process(args, log) as proc:

        async def accepting() -> bool:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            await writer.wait_closed()
            return True

        await _wait_until(proc, log, "name server", accepting)
        yield f"127.0.0.1:{port}", proc.pid


@contextlib.asynccontextmanager
async def local_broker(root: Path, namesrv: str, flush: str) -> AsyncIterator[tuple[str, int]]:
    """A broker child process with ``flushDiskType=flush``; yields (address, pid)."""
    port = free_port()
    name = flush.split("_")[0].lower()
    args = [
        "broker", "--port", str(port), "--http-port", "0", "--broker-ip", "127.0.0.1",
        "--broker-name", f"bench-{name}", "--store", str(root / f"store-{name}"),
        "--flush-disk-type", flush, "-n", namesrv, "--log-level", "WARNING",
        "--set", "haListenPort=0",  # no slaves; port+1 may be anyone's
    ]  # fmt: skip
    log = root / f"broker-{name}.log"
    address = f"127.0.0.1:{port}"
    async with child_process(args, log) as proc:
        client = RemotingClient(connect_timeout=1.0, timeout=2.0)

        async def serving() -> bool:
            """Answering, and registered: the name server routes the auto-create template
            to it, so a producer started now finds a route (not "no route to send to")."""
            reply = await client.invoke(
                address, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO)
            )
            if reply.code != ResponseCode.SUCCESS:
                return False
            routed = await client.invoke(
                namesrv,
                RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}),
            )
            if routed.code != ResponseCode.SUCCESS:
                return False
            brokers = route.TopicRouteData.decode(routed.body).broker_datas
            return any(address in b.broker_addrs.values() for b in brokers)

        try:
            await _wait_until(proc, log, f"broker ({flush})", serving)
        finally:
            await client.close()
        yield address, proc.pid


def main_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rocketkube bench", description=COMMAND.help)
    COMMAND.configure(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rocketkube.client.bench.cli broker ...`` (no entry point needed)."""
    return COMMAND.run(main_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
