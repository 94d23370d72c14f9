"""Send-path throughput probe (not a test): ``.venv/bin/python tools/bench_send.py``.

One process, one event loop: a RemotingServer serving the send processors over a real
store in a temporary directory, and a client on 127.0.0.1 pipelining SEND_MESSAGE_V2
requests (100-byte bodies, Java-like properties: UNIQ_KEY, WAIT, TAGS) in windows of
``--window`` outstanding requests. Three measurements:

- ``direct``:    the processor alone, called in a loop on pre-decoded requests (also with
                 the store's append stubbed out: ``direct-nostore``)
- ``raw``:       pre-encoded frames written by a minimal client (server-side cost dominates)
- ``remoting``:  the project's RemotingClient ``invoke`` (client and server share the CPU)

Each reports the mean and the median window, and the process CPU time per send (median
window): the machines stall for whole seconds at times and are shared, so CPU time says
more about the code than wall time. ``--profile`` runs cProfile (CPU time) around the
``raw`` windows only. Machines of this kind vary 3-5x from day to day: compare ratios
within one run. Every mode sends a warm-up batch first (the first touch of the index slot
table and the consume queue pages costs a page fault each: a short run would measure
warm-up, not the steady state).

The ``raw`` and ``remoting`` clients run in the same process: their reply decoding shows
in the process CPU and in the profile next to the server's. Per send, a profile counts 5
``unpack_from`` (frame length and header word, for the request on the server and for the
reply in the client; one index slot read) and 2 ``orjson.loads`` (request header, reply
header). ``--ab`` runs ``raw`` twice more, alternating the server's chunk batching
(``handle_many``) off and on.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import prometheus_client

from rocketkube.broker.consumers.clients import ClientManager
from rocketkube.broker.consumers.groups import SubscriptionGroupManager
from rocketkube.broker.consumers.offsets import ConsumerOffsetManager
from rocketkube.broker.context import BrokerContext
from rocketkube.broker.processors.send import processor as send
from rocketkube.broker.settings import BrokerSettings
from rocketkube.broker.stats import BrokerStats
from rocketkube.broker.store import (
    AppendResult,
    FlushDiskType,
    MessageStore,
    PutResult,
    PutStatus,
)
from rocketkube.broker.topics import TopicConfigManager
from rocketkube.common.protocol.send_headers import SendMessageRequestHeaderV2
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting import frame
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer

BODY = b"x" * 100
TOPIC = "BenchTopic"


def clock() -> int:
    return time.time_ns() // 1_000_000


def make_context(root: Path, sync: bool) -> BrokerContext:
    settings = BrokerSettings(
        listen_port=0,
        broker_ip1="127.0.0.1",
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=256 << 20,
        flush_disk_type=FlushDiskType.SYNC_FLUSH if sync else FlushDiskType.ASYNC_FLUSH,
    )
    config_dir = root / "config"
    ctx = BrokerContext(
        settings=settings,
        store=MessageStore(settings.store_config(listen_port=10911)),
        topics=TopicConfigManager(settings, config_dir / "topics.json", clock),
        groups=SubscriptionGroupManager(config_dir / "subscriptionGroup.json", clock),
        offsets=ConsumerOffsetManager(config_dir / "consumerOffset.json"),
        clients=ClientManager(),
        stats=BrokerStats(prometheus_client.CollectorRegistry()),
        clock=clock,
        broker_addr="127.0.0.1:10911",
        permission=6,
    )
    ctx.topics.update(TopicConfig(TOPIC, 8, 8))
    return ctx


def request(i: int) -> RemotingCommand:
    props = f"UNIQ_KEY\x017F0000012F5C18B4AAC2{i:012X}\x02WAIT\x01true\x02TAGS\x01TagA"
    ext = SendMessageRequestHeaderV2(
        producer_group="BenchGroup", topic=TOPIC, default_topic="TBW102",
        default_topic_queue_nums=4, queue_id=i % 8, sys_flag=0,
        born_timestamp=1_700_000_000_000, flag=0, properties=props, reconsume_times=0,
        unit_mode=False, max_reconsume_times=16,
    ).encode()  # fmt: skip
    ext["n"] = "broker-a"
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, BODY, language="JAVA")


class Windows:
    """Per-window timings: the machine stalls for seconds at times, so the median window
    says more about the code than the mean does."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.per_send_us: list[float] = []
        self.cpu_us: list[float] = []
        self.count = 0
        self.seconds = 0.0
        self._cpu_started = 0.0

    def start(self) -> float:
        """Mark the start of a window; returns the wall-clock start."""
        self._cpu_started = time.process_time()
        return time.perf_counter()

    def add(self, count: int, seconds: float) -> None:
        cpu = time.process_time() - self._cpu_started
        self.count += count
        self.seconds += seconds
        self.per_send_us.append(seconds / count * 1e6)
        self.cpu_us.append(cpu / count * 1e6)

    def report(self) -> None:
        times = sorted(self.per_send_us)
        median = statistics.median(times)
        print(
            f"{self.name:>14}: {self.count} sends, mean {self.count / self.seconds:>8,.0f}/s,"
            f" median window {1e6 / median:>8,.0f}/s ({median:.1f} us/send,"
            f" best {times[0]:.1f}, worst {times[-1]:.0f});"
            f" CPU median {statistics.median(self.cpu_us):.1f} us/send,"
            f" best {min(self.cpu_us):.1f}, mean {statistics.fmean(self.cpu_us):.1f}"
        )


def bench_direct(ctx: BrokerContext, count: int, window: int, *, stub_store: bool) -> None:
    """The processor alone: header parse, checks, properties, append, response."""

    class Peer:
        remote_address = "127.0.0.1:50000"

    peer = cast(Connection, Peer())
    handler = send.SendProcessor(ctx).send_message_v2
    for i in range(2000):
        handler(peer, request(30_000_000 + i))  # warm up
    requests = [request(i) for i in range(count)]
    put = ctx.store.put_messages
    if stub_store:
        done = PutResult(PutStatus.PUT_OK, [AppendResult(0, 250, 0, "7F" * 16, 0)])
        ctx.store.put_messages = lambda messages: done  # type: ignore[method-assign]
    timings = Windows("direct-nostore" if stub_store else "direct")
    try:
        for at in range(0, count, window):
            chunk = requests[at : at + window]
            started = timings.start()
            for req in chunk:
                handler(peer, req)
            timings.add(len(chunk), time.perf_counter() - started)
    finally:
        ctx.store.put_messages = put  # type: ignore[method-assign]
    timings.report()


class RawClient(asyncio.Protocol):
    """Writes pre-encoded request frames; counts response frames."""

    def __init__(self) -> None:
        self.decoder = frame.FrameDecoder()
        self.received = 0
        self.codes: dict[int, int] = {}
        self.wanted = 0
        self.done: asyncio.Future[None] | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        for reply in self.decoder.feed(data):
            self.received += 1
            self.codes[reply.code] = self.codes.get(reply.code, 0) + 1
        if self.done is not None and self.received >= self.wanted and not self.done.done():
            self.done.set_result(None)

    async def window(self, frames: list[bytes]) -> None:
        assert self.transport is not None
        self.wanted = self.received + len(frames)
        self.done = asyncio.get_running_loop().create_future()
        self.transport.writelines(frames)
        await asyncio.wait_for(self.done, 60)


async def bench_raw(
    address: tuple[str, int],
    count: int,
    window: int,
    start: int,
    name: str = "raw",
    profiler: cProfile.Profile | None = None,
) -> Windows:
    frames = []
    for i in range(count):
        req = request(start + i)
        req.opaque = i + 1
        frames.append(frame.encode_bytes(req))
    loop = asyncio.get_running_loop()
    transport, client = await loop.create_connection(RawClient, *address)
    timings = Windows(name)
    if profiler is not None:
        profiler.enable()
    for at in range(0, count, window):
        chunk = frames[at : at + window]
        started = timings.start()
        await client.window(chunk)
        timings.add(len(chunk), time.perf_counter() - started)
    if profiler is not None:
        profiler.disable()
    transport.close()
    assert client.codes == {0: count}, client.codes
    return timings


async def bench_remoting(address: str, count: int, window: int, start: int) -> Windows:
    client = RemotingClient(timeout=60)
    await client.connection(address)
    requests = [request(start + i) for i in range(count)]
    timings = Windows("remoting")
    for at in range(0, count, window):
        chunk = requests[at : at + window]
        started = timings.start()
        replies = await asyncio.gather(*(client.invoke(address, r) for r in chunk))
        timings.add(len(chunk), time.perf_counter() - started)
        assert all(r.code == 0 for r in replies)
    await client.close()
    return timings


async def bench_ab(
    dispatcher: Dispatcher, address: tuple[str, int], count: int, window: int
) -> None:
    """``raw`` with the server's chunk batching off, then on, back to back, twice.

    Off: an instance attribute ``handle_many = None`` hides the method from the
    connection, which then serves each request on its own."""
    start = 40_000_000
    for _ in range(2):
        for batched in (False, True):
            if not batched:
                dispatcher.handle_many = None  # type: ignore[assignment, method-assign]
            start += count
            try:
                label = "raw-batched" if batched else "raw-unbatched"
                (await bench_raw(address, count, window, start, label)).report()
            finally:
                vars(dispatcher).pop("handle_many", None)


def print_profile(profiler: cProfile.Profile, limit: int) -> None:
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(limit)
    print(out.getvalue())


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ctx = make_context(Path(tmp), args.sync)
        await ctx.store.start()
        if not args.sync:
            bench_direct(ctx, args.count, args.window, stub_store=True)
            bench_direct(ctx, args.count, args.window, stub_store=False)
        if args.direct_only:
            await ctx.store.shutdown()
            return
        dispatcher = Dispatcher(send.table(ctx))
        server = RemotingServer(dispatcher, "127.0.0.1", 0)
        await server.start()
        address = ("127.0.0.1", server.port)
        try:
            await bench_raw(address, 2000, args.window, 10_000_000)  # warm up
            profiler = cProfile.Profile(time.process_time) if args.profile else None
            timings = await bench_raw(address, args.count, args.window, 0, profiler=profiler)
            timings.report()
            if args.ab:
                await bench_ab(dispatcher, address, args.count, args.window)
            remote = f"127.0.0.1:{server.port}"
            (await bench_remoting(remote, args.count, args.window, 20_000_000)).report()
            if profiler is not None:
                print_profile(profiler, args.top)
        finally:
            await server.stop()
            await ctx.store.shutdown()


def run(args: argparse.Namespace) -> None:
    runner: Callable[[], None]
    if args.uvloop:
        import uvloop

        def runner() -> None:
            uvloop.run(main(args))
    else:

        def runner() -> None:
            asyncio.run(main(args))

    print(f"{'SYNC' if args.sync else 'ASYNC'}_FLUSH, {'uvloop' if args.uvloop else 'asyncio'}")
    runner()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--count", type=int, default=20_000)
    parser.add_argument("-w", "--window", type=int, default=500)
    parser.add_argument("--sync", action="store_true", help="SYNC_FLUSH (group commit)")
    parser.add_argument("--uvloop", action="store_true")
    parser.add_argument("--profile", action="store_true", help="cProfile the raw run")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--direct-only", action="store_true", help="skip the socket runs")
    parser.add_argument("--ab", action="store_true", help="raw without and with chunk batching")
    run(parser.parse_args())
