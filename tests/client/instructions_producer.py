"""Instructions per SDK send (not a test): run this file with the venv's python.

The SDK's half of ``tests/broker/instructions_send.py``: how many instructions one
``Producer.send`` of a 100 B message costs the client process, pipelined by ``--workers``
concurrent senders as ``rocketkube bench producer`` drives them. A name server and a broker
run as child processes (uncounted); the producer runs twice under
``valgrind --tool=callgrind`` (``apt-get install valgrind``), sending ``N`` and ``2N``
messages after a warm-up, with collection switched on only meanwhile, and the difference
of the two counts divided by ``N`` is the marginal cost of one send. The broker answers
the slowed-down producer at once, so its answers arrive in larger batches than at full
speed: compare two versions of the SDK with this, not against wall-clock figures.
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
from pathlib import Path

from rocketkube.client import Message, Producer
from rocketkube.client.bench.cli import local_broker, local_namesrv
from rocketkube.common import runtime

_COLLECTED = re.compile(r"Collected : (\d+)")
TOPIC = "InstructionsSdk"


def _callgrind(switch: str) -> None:
    subprocess.run(["callgrind_control", "-i", switch, str(os.getpid())], check=True,
                   capture_output=True)  # fmt: skip


async def _send(namesrv: str, messages: int, workers: int, body_size: int) -> int:
    body = b"b" * body_size
    async with Producer("InstructionsProducer", namesrv, send_timeout=600.0) as producer:

        async def run(count: int) -> None:
            sequence = itertools.count()

            async def worker() -> None:
                while next(sequence) < count:
                    await producer.send(Message(TOPIC, body))

            await asyncio.gather(*(worker() for _ in range(workers)))

        await run(4 * workers)  # warm-up: routes, connection, first code paths
        gc.collect()
        gc.freeze()
        _callgrind("on")
        await run(messages)
        _callgrind("off")
    return 0


def _count(namesrv: str, messages: int, args: argparse.Namespace) -> int:
    command = [
        "valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/dev/null",
        sys.executable, __file__, "--child", namesrv, "-n", str(messages),
        "--workers", str(args.workers), "--body-size", str(args.body_size),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind run failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return int(found.group(1))


async def _measure(args: argparse.Namespace) -> tuple[int, int]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        async with local_namesrv(root) as namesrv, local_broker(root, namesrv, "ASYNC_FLUSH"):
            one = await asyncio.to_thread(_count, namesrv, args.messages, args)
            two = await asyncio.to_thread(_count, namesrv, 2 * args.messages, args)
    return one, two


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--messages", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=256, help="sends in flight")
    parser.add_argument("--body-size", type=int, default=100)
    parser.add_argument("--child", metavar="NAMESRV", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        runtime.run(_send(args.child, args.messages, args.workers, args.body_size))
        return
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("needs valgrind (apt-get install valgrind)")
    one, two = asyncio.run(_measure(args))
    print(f"{args.messages} sends: {one:,} instructions; {2 * args.messages}: {two:,}")
    print(f"marginal: {(two - one) / args.messages:,.0f} instructions per send")


if __name__ == "__main__":
    main()
