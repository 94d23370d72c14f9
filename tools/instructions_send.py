"""Instructions per pipelined send (not a test): run this file with the venv's python.

Timing figures on shared machines swing several-fold with the host; instruction counts do
not. This runs itself twice under ``valgrind --tool=callgrind`` (installed separately:
``apt-get install valgrind``), feeding ``N`` and ``2N`` pre-built 100 B SEND_MESSAGE_V2
frames, in chunks of ``--chunk``, to an in-process broker's server connection whose
transport counts the answers it is given and drops them (decode, checks, append, dispatch,
index and the answer all count; with ``--flush sync`` the group commit and the wait for it
too). The broker runs on the event loop its process would use (uvloop when installed),
its heap settled as ``rocketkube broker`` settles it once started (garbage collection
counts: sends waiting for a flush survive young collections).
Collection is switched on (``callgrind_control -i on``) from the feeding until the last
answer is written, and the difference of the two counts divided by ``N`` is the marginal
cost of one send, free of start-up. Compare two trees with ``PYTHONPATH`` pointing at each.

``--sdk`` counts the other side: one ``Producer.send`` of the SDK, ``--workers`` of them in
flight as ``rocketkube bench producer`` drives them, against a name server and a broker
running as uncounted child processes. They answer the slowed-down producer at once, so
its answers arrive in larger batches than at full speed: compare versions with it, not
wall-clock figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from rocketkube.bench import pipeline
from rocketkube.bench.local_cluster import local_broker, local_namesrv
from rocketkube.broker.app import BrokerApp
from rocketkube.broker.settings import BrokerSettings
from rocketkube.client import Message, Producer
from rocketkube.common import runtime
from rocketkube.common.remoting.connection import Connection

_COLLECTED = re.compile(r"Collected : (\d+)")


def _quiet_timers(flush: str) -> dict[str, int]:
    """``--quiet-timers``: flush rounds driven by the clock held off (the commit log's too
    under ASYNC_FLUSH). Under callgrind a send takes 50 times as long, so these rounds fall
    into one count or the other (a whole-table copy of the index slots alone is 20 M
    instructions: 15k a send at ``-n 1280``)."""
    timers = {"flush_interval_consume_queue": 600_000, "flush_consumer_offset_interval": 600_000}
    if flush == "async":
        timers["flush_interval_commit_log"] = 600_000
    return timers


class _Sink(asyncio.Transport):
    """A transport that counts the frames written to it, drops them and sets ``done`` at
    the ``expected``-th (the connection writes whole frames)."""

    def __init__(self, expected: int) -> None:
        super().__init__()
        self.frames = 0
        self.expected = expected
        self.done = asyncio.Event()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        at = 0
        while at < len(view):
            at += 4 + int.from_bytes(view[at : at + 4], "big")
            self.frames += 1
        if self.frames >= self.expected:
            self.done.set()

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        for data in list_of_data:
            self.write(data)

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass  # a chunk of more than a turn's requests: the rest is fed on the next turn

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 40000) if name in ("peername", "sockname") else default


def _callgrind(switch: str) -> None:
    subprocess.run(["callgrind_control", "-i", switch, str(os.getpid())], check=True,
                   capture_output=True)  # fmt: skip


async def feed(
    messages: int,
    chunk: int,
    body_size: int,
    flush: str,
    switch: Callable[[str], None] = _callgrind,
    quiet: bool = False,
) -> int:
    """Feed ``messages`` sends to a broker in this process, ``switch("on")`` before the
    first and ``switch("off")`` after the last answer (callgrind's collection by default)."""
    warmup = 20
    with tempfile.TemporaryDirectory() as tmp:
        settings = BrokerSettings(
            namesrv_addr="",
            listen_port=0,
            http_port=0,
            broker_ip1="127.0.0.1",
            store_path_root_dir=str(Path(tmp) / "store"),
            mapped_file_size_commit_log=256 << 20,
            flush_disk_type=f"{flush.upper()}_FLUSH",
            **(_quiet_timers(flush) if quiet else {}),
        )
        app = BrokerApp(settings)
        await app.start()
        conn: Connection = app.server._make_connection()
        sink = _Sink(warmup * chunk + messages)
        conn.connection_made(sink)
        # 4 queues: what a topic auto-created from TBW102 has
        frames = pipeline.SendFrames("InstructionsT", b"b" * body_size, 4, 1_700_000_000_000)
        seq = 0

        def build() -> bytes:
            nonlocal seq
            out: list[bytes] = []
            for _ in range(chunk):
                frames.add(out, seq + 1, seq)
                seq += 1
            return b"".join(out)

        for _ in range(warmup):  # warm-up: topic creation, first page touches
            conn.data_received(build())
            await asyncio.sleep(0)
        chunks = [build() for _ in range(messages // chunk)]
        runtime.settle_heap()  # as `rocketkube broker` does once started
        switch("on")
        for data in chunks:
            conn.data_received(data)
            await asyncio.sleep(0)
        await asyncio.wait_for(sink.done.wait(), 600)
        switch("off")
        await app.stop()
    return 0


async def _send_sdk(namesrv: str, messages: int, workers: int, body_size: int) -> int:
    """``messages`` SDK sends, ``workers`` in flight, collecting only meanwhile."""
    body = b"b" * body_size
    async with Producer("InstructionsProducer", namesrv, send_timeout=600.0) as producer:

        async def run(count: int) -> None:
            sequence = itertools.count()

            async def worker() -> None:
                while next(sequence) < count:
                    await producer.send(Message("InstructionsSdk", body))

            await asyncio.gather(*(worker() for _ in range(workers)))

        await run(4 * workers)  # warm-up: routes, connection, first code paths
        gc.collect()
        gc.freeze()
        _callgrind("on")
        await run(messages)
        _callgrind("off")
    return 0


def _count(messages: int, args: argparse.Namespace, namesrv: str | None = None) -> int:
    side = ["--sdk-child", namesrv, "--workers", str(args.workers)] if namesrv else ["--child"]
    command = [
        "valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/dev/null",
        sys.executable, __file__, *side, "-n", str(messages), "--chunk", str(args.chunk),
        "--body-size", str(args.body_size), "--flush", args.flush,
        *(["--quiet-timers"] if args.quiet_timers else []),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind run failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return int(found.group(1))


async def _count_sdk(args: argparse.Namespace) -> tuple[int, int]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        flush = f"{args.flush.upper()}_FLUSH"
        async with local_namesrv(root) as namesrv, local_broker(root, namesrv, flush):
            one = await asyncio.to_thread(_count, args.messages, args, namesrv)
            two = await asyncio.to_thread(_count, 2 * args.messages, args, namesrv)
    return one, two


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--messages", type=int, default=6400)
    parser.add_argument("--chunk", type=int, default=64, help="sends per received chunk")
    parser.add_argument("--body-size", type=int, default=100)
    parser.add_argument("--flush", choices=("async", "sync"), default="async",
                        help="flushDiskType of the broker (default async)")  # fmt: skip
    parser.add_argument("--sdk", action="store_true", help="count the SDK producer's side")
    parser.add_argument("--workers", type=int, default=256, help="--sdk: sends in flight")
    parser.add_argument("--quiet-timers", action="store_true",
                        help="hold off the clock-driven flushes (steadier counts)")  # fmt: skip
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sdk-child", metavar="NAMESRV", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.messages % args.chunk:
        parser.error(f"-n must be a multiple of --chunk ({args.chunk}): whole chunks are fed")
    if args.child:
        quiet = args.quiet_timers
        runtime.run(feed(args.messages, args.chunk, args.body_size, args.flush, quiet=quiet))
        return
    if args.sdk_child:
        runtime.run(_send_sdk(args.sdk_child, args.messages, args.workers, args.body_size))
        return
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("needs valgrind (apt-get install valgrind)")
    if args.sdk:
        one, two = asyncio.run(_count_sdk(args))
    else:
        one, two = _count(args.messages, args), _count(2 * args.messages, args)
    print(f"{args.messages} sends: {one:,} instructions; {2 * args.messages}: {two:,}")
    print(f"marginal: {(two - one) / args.messages:,.0f} instructions per send")


if __name__ == "__main__":
    main()
