"""``rocketkube bench``: benchmarks over the wire: ``broker`` (raw frames, the broker's own
ceiling), ``producer``, ``consumer`` and ``tproducer`` (the SDK, in the shape of
RocketMQ's benchmark tools) and ``flood`` (what a flood of malformed frames leaves a
well-behaved producer).

This module holds the flags; :mod:`.runners` runs each benchmark and
:mod:`.local_cluster` starts the servers one measures when none is given. Every option
that has a default says it in its help, through :func:`_option`.

Until the ``bench`` entry point is installed: ``python -m rocketkube.bench.cli broker``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from rocketkube.bench import broker as bench
from rocketkube.bench import flood, flooder, runners, sdk
from rocketkube.client import credential_options, tls_options
from rocketkube.common import errors, runtime
from rocketkube.common.cli import Command

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


def _shown(value: object) -> str:
    """A default as the help shows it: ``100,1024`` for sizes, ``1.5`` for seconds."""
    if isinstance(value, tuple):
        return ",".join(str(part) for part in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _option(
    parser: argparse.ArgumentParser,
    *flags: str,
    default: object,
    help: str,
    unit: str = "",
    **kwargs: Any,
) -> None:
    """An option whose help ends with its default: ``(default 100)``, ``(default 3000 ms)``."""
    suffix = f" {unit}" if unit else ""
    parser.add_argument(
        *flags, default=default, help=f"{help} (default {_shown(default)}{suffix})", **kwargs
    )


def _common(parser: argparse.ArgumentParser, *, namesrv: str | None = None) -> None:
    """What several benchmarks share: ``--json`` and, given its help, ``-n``."""
    if namesrv is not None:
        parser.add_argument(
            "-n", "--namesrv-addr", default=os.environ.get("NAMESRV_ADDR"), help=namesrv
        )
    parser.add_argument("--json", action="store_true", help="print only the JSON summary on stdout")


def configure_broker(parser: argparse.ArgumentParser) -> None:
    defaults = bench.BenchSettings()
    _option(
        parser,
        "--messages",
        default=defaults.messages,
        help="timed sends per body size",
        type=_positive,
    )
    _option(
        parser,
        "--body-sizes",
        type=_sizes,
        default=defaults.body_sizes,
        metavar="N,N",
        help="message body sizes in bytes",
    )
    _option(
        parser,
        "--window",
        default=defaults.window,
        help="sends outstanding per connection",
        type=_positive,
    )
    _option(
        parser,
        "--connections",
        default=defaults.connections,
        help="connections sending at once",
        type=_positive,
    )
    _option(
        parser,
        "--flush",
        choices=sorted(runners.FLUSH_MODES),
        default="both",
        help="flushDiskType of the brokers started; with --broker, only a label",
    )
    parser.add_argument(
        "--broker", metavar="HOST:PORT", help="measure this broker instead of starting one"
    )
    _option(
        parser,
        "--queues",
        default=defaults.queues,
        help="queues of each benchmark topic",
        type=_positive,
    )
    _option(
        parser,
        "--warmup",
        type=_non_negative,
        default=defaults.warmup,
        help="untimed sends before each body size",
    )
    _option(
        parser,
        "--latency-count",
        type=_non_negative,
        default=defaults.latency_count,
        help="one-at-a-time sends timed for p50/p99",
    )
    _option(
        parser,
        "--pull-window",
        default=defaults.pull_window,
        help=f"pulls outstanding, {defaults.pull_batch} messages each",
        type=_positive,
    )
    _common(parser)


def configure_client(parser: argparse.ArgumentParser, defaults: sdk.ClientBenchSettings) -> None:
    """The flags of RocketMQ's benchmark tools (-n -t -w -s -k) plus count and duration."""
    _common(
        parser,
        namesrv="name server(s), host:port;... (default $NAMESRV_ADDR; none: start a cluster here)",
    )
    _option(parser, "-t", "--topic", default=defaults.topic, help="topic")
    _option(
        parser,
        "-w",
        "--workers",
        type=_positive,
        default=defaults.workers,
        help="concurrent operations, as RocketMQ's threads",
    )
    _option(
        parser,
        "-s",
        "--size",
        type=_positive,
        default=defaults.body_size,
        help="message body bytes",
    )
    parser.add_argument(
        "-k",
        "--keys",
        nargs="?",
        type=_flag,
        const=True,
        default=defaults.keys,
        help="give every message a key (-k or -k true)",
    )
    parser.add_argument("--tags", default=defaults.tags, help="tag of every message")
    _option(parser, "-g", "--group", default=defaults.group, help="group")
    _option(
        parser,
        "--messages",
        type=_non_negative,
        default=defaults.messages,
        help="stop after this many messages, 0 for no limit",
    )
    parser.add_argument(
        "--duration", type=float, default=defaults.duration, help="stop after this many seconds"
    )
    _option(
        parser, "--interval", type=float, default=defaults.interval, help="seconds between reports"
    )
    _option(
        parser,
        "--send-timeout-ms",
        type=_positive,
        default=round(defaults.send_timeout * 1000),
        unit="ms",
        help="a send's timeout, RocketMQ's sendMsgTimeout",
    )
    parser.add_argument(
        "--default-gc",
        dest="settle_heap",
        action="store_false",
        help="leave CPython's garbage collector as it comes (default: settle the heap first, "
        "as the servers do and as the README advises a busy producer)",
    )
    tls_options.add_arguments(parser)
    credential_options.add_arguments(parser)


def configure_flood(parser: argparse.ArgumentParser) -> None:
    defaults = flood.FloodSettings()
    _common(
        parser,
        namesrv="name server(s) on this machine (default $NAMESRV_ADDR; none: start a cluster)",
    )
    parser.add_argument(
        "--broker", metavar="HOST:PORT", help="the broker to flood (default: the topic's)"
    )
    _option(
        parser,
        "--connections",
        type=_positive,
        default=defaults.connections,
        help="flooding connections",
    )
    _option(
        parser, "--duration", type=_seconds, default=defaults.duration, help="seconds of the flood"
    )
    _option(
        parser,
        "--baseline",
        type=_seconds,
        default=defaults.baseline,
        help="seconds of the producer alone first",
    )
    _option(
        parser, "-s", "--size", type=_non_negative, default=defaults.body_size, help="body bytes"
    )
    _option(parser, "-t", "--topic", default=defaults.topic, help="topic")
    parser.add_argument(
        "--frames",
        type=_positive,
        help="flood until this many frames are written (--duration then bounds it)",
    )


def _configure_producer(parser: argparse.ArgumentParser) -> None:
    defaults = sdk.ClientBenchSettings()
    configure_client(parser, defaults)
    parser.add_argument(
        "--auto-batch",
        action="store_true",
        help="gather sends into batches (Producer(auto_batch=True), RocketMQ 5's autoBatch)",
    )
    _option(
        parser,
        "--batch-max-delay-ms",
        type=_non_negative,
        unit="ms",
        default=defaults.batch_max_delay_ms,
        help="with --auto-batch: how long a batch gathers",
    )


def _configure_consumer(parser: argparse.ArgumentParser) -> None:
    configure_client(parser, sdk.ClientBenchSettings(group="benchmark_consumer"))
    parser.add_argument(
        "--prefill", action="store_true", help="send --messages messages first, then consume them"
    )


def _configure_tproducer(parser: argparse.ArgumentParser) -> None:
    configure_client(parser, sdk.ClientBenchSettings(group="benchmark_tproducer"))
    _option(
        parser,
        "--rollback-rate",
        type=_rate,
        default=0.0,
        help="share of transactions rolled back, 0-1",
    )
    _option(
        parser,
        "--unknown-rate",
        type=_rate,
        default=0.0,
        help="share left unknown until checked back, 0-1",
    )


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    benchmarks: list[tuple[str, str, str, Callable[[argparse.ArgumentParser], None], Runner]] = [
        ("broker", "broker ingest, delivery and send latency over loopback",
         "Pipelined sends (SYNC_FLUSH and ASYNC_FLUSH), pulls of what was sent and "
         "one-at-a-time send latency, against brokers started here or --broker.",
         configure_broker, runners.run_broker),
        ("producer", "SDK producer throughput and latency (RocketMQ's Producer benchmark)",
         "Sync sends from -w concurrent senders of one rocketkube Producer; prints TPS, MB/s "
         "and latency every --interval seconds and a JSON summary at the end. Without -n it "
         "starts a name server and a broker here.",
         _configure_producer, runners.run_client_bench),
        ("consumer",
         "SDK push consumer throughput and born-to-consume latency (RocketMQ's Consumer)",
         "A rocketkube PushConsumer of -t counting messages and their born-to-consumed "
         "latency. Without -n (or with --prefill) it first sends --messages messages and "
         "consumes them from the first offset; with -n it consumes what producers send from "
         "now on, until --messages arrived or --duration ran out.",
         _configure_consumer, runners.run_client_bench),
        ("tproducer", "SDK transactional producer (RocketMQ's TransactionProducer benchmark)",
         "Half message, local transaction, END_TRANSACTION, from -w concurrent senders of one "
         "TransactionProducer; --rollback-rate and --unknown-rate make that share of local "
         "transactions roll back or stay unknown (committed on check-back).",
         _configure_tproducer, runners.run_client_bench),
        ("flood", "a well-behaved producer's sends/s and latency, alone and under a flood",
         "One producer sends one message at a time, alone for --baseline seconds, then for "
         "--duration seconds while --connections connections flood the broker and the name "
         "server with malformed frames (loopback only). Without -n it starts a name server "
         "and a broker here.",
         configure_flood, runners.run_flood_bench),
    ]  # fmt: skip
    client_benches: dict[str, sdk.ClientBench] = {
        "producer": sdk.run_producer,
        "consumer": sdk.run_consumer,
        "tproducer": sdk.run_tproducer,
    }
    for name, help, description, configure_one, runner in benchmarks:
        child = sub.add_parser(name, help=help, description=description)
        configure_one(child)
        child.set_defaults(_bench=runner, _client_bench=client_benches.get(name))


def run(args: argparse.Namespace) -> int:
    runner: Runner = args._bench
    try:
        return runtime.run(runner(args))
    except (errors.RocketKubeError, OSError, TimeoutError) as exc:
        print(f"rocketkube bench: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


COMMAND = Command(help="benchmarks over the wire (bench broker ...)", configure=configure, run=run)


def main_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rocketkube bench", description=COMMAND.help)
    COMMAND.configure(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rocketkube.bench.cli broker ...`` (no entry point needed)."""
    return COMMAND.run(main_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
