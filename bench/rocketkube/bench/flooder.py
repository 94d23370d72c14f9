"""The flooding side of ``rocketkube bench flood``: connections that send malformed frames.

Three kinds of flooding connection, all writing as fast as the peer reads:

    garbage     one undecodable frame (a bad length, a header that is not JSON, an unknown
                serialize type, a header longer than its frame), then waits for the server
                to close the connection and connects again
    truncated   one well-formed request cut short (in its length, its header or its body),
                then the end of the stream; waits for the server to close, connects again
    malformed   well-framed requests with bad content, pipelined without a window: lock
                bodies that are not JSON, integers out of range in send headers, unknown
                request codes, heartbeats and broker registrations that do not decode,
                headers missing their fields; the answers are read and counted

The mix is :func:`plan`'s: every fourth connection floods garbage or truncated frames (in
turn), every third goes to the name server when one is given. Everything it does stops by
itself after ``duration`` seconds, or once the servers took ``frames`` of its frames when
given (:attr:`FloodCounts.taken`: answered, or ending a connection the server closed;
frames written but left unread by a server that holds a throttled connection do not count).
Only loopback addresses are accepted (:func:`loopback_address`). To an IPv4 loopback
address the flood comes from 127.0.0.2 to 127.0.0.9 (:func:`source_host`), as from other
hosts: the servers hold back the new connections of a host whose connections keep sending
garbage, and the client measured (from 127.0.0.1) is not one of those.

It runs as a child process of the benchmark (``python -m rocketkube.bench.flooder``),
so the client it measures has its own interpreter, and prints a JSON line of counts.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import ipaddress
import itertools
import json
import math
import struct
import sys
import time
from collections.abc import Sequence
from typing import Final, Literal

from rocketkube.common.remoting import frame
from rocketkube.common.remoting.addresses import split_address
from rocketkube.common.remoting.codes import RequestCode
from rocketkube.common.remoting.command import RemotingCommand

__all__ = [
    "FloodCounts",
    "Role",
    "garbage_frames",
    "loopback_address",
    "malformed_requests",
    "plan",
    "run_flood",
    "source_host",
    "truncated_frames",
]

Role = Literal["garbage", "truncated", "malformed"]

CONNECT_TIMEOUT: Final = 2.0
CLOSE_TIMEOUT: Final = 5.0
"""How long a garbage connection waits for the server to close it before closing itself."""
BATCH_FRAMES: Final = 64
"""Malformed requests written at a time, while the server reads them."""
MAX_DURATION: Final = 3600.0
STARTED: Final = "flooding"
"""The line the child process prints once it floods."""
_LENGTH: Final = struct.Struct(">i")
_OUT_OF_RANGE: Final = str(2**70)


def loopback_address(address: str) -> str:
    """``address`` (host:port) when its host is a loopback one, else ValueError: a flood is
    for one's own machine."""
    host, _ = split_address(address)
    if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
        raise ValueError(f"{address}: a flood goes to loopback addresses only")
    return address


SOURCE_HOSTS: Final = 8


def source_host(address: str, index: int) -> str | None:
    """The address flooding connection ``index`` to ``address`` comes from: one of
    127.0.0.2 to 127.0.0.9 for an IPv4 loopback one, else the system's choice (None)."""
    host, _ = split_address(address)
    if host == "localhost" or ipaddress.ip_address(host).version == 4:
        return f"127.0.0.{2 + index % SOURCE_HOSTS}"
    return None


def _json_frame(header: bytes, serialize: int = 0, body: bytes = b"") -> bytes:
    return struct.pack(">ii", 4 + len(header) + len(body), serialize << 24 | len(header)) + (
        header + body
    )


def garbage_frames() -> tuple[bytes, ...]:
    """Frames no decoder accepts: the server closes the connection at each."""
    return (
        struct.pack(">ii", 1, 0),  # a length below the minimum
        struct.pack(">ii", 1 << 30, 0),  # a length over 16 MiB
        _json_frame(b"{not json"),
        _json_frame(b'{"code":"ten"}'),
        _json_frame(b"[310]"),
        _json_frame(b'{"code":310}', serialize=5),
        struct.pack(">ii", 8, 100) + b"abcd",  # a header longer than its frame
    )


def truncated_frames() -> tuple[bytes, ...]:
    """Requests cut short: in the length field, the header word, the header, the body."""
    request = RemotingCommand.request(RequestCode.HEART_BEAT, {"a": "b"}, b'{"clientID":"t"}')
    whole = frame.encode_bytes(request)
    return tuple(whole[:cut] for cut in (2, 6, 12, len(whole) - 20, len(whole) - 1))


def _send(**changes: str) -> dict[str, str]:
    """A SEND_MESSAGE_V2 header (one-letter names) with ``changes``."""
    header = {"a": "flood_producer", "b": "FloodTopic", "c": "TBW102", "d": "4", "e": "0",
              "f": "0", "g": "1700000000000", "h": "0", "i": "", "j": "0", "k": "false",
              "l": "16", "m": "false"}  # fmt: skip
    header.update(changes)
    return header


def malformed_requests(target: Literal["broker", "namesrv"]) -> tuple[RemotingCommand, ...]:
    """Well-framed requests with content the server refuses, for a broker or a name server."""
    code = RequestCode
    common = (
        RemotingCommand.request(9999),  # no such request code
        RemotingCommand.request(4242, {"a": "b"}, b"body"),
    )
    if target == "namesrv":
        return (
            *common,
            RemotingCommand.request(code.REGISTER_BROKER, {
                "brokerName": "flood", "brokerAddr": "127.0.0.1:1", "clusterName": "flood",
                "haServerAddr": "", "brokerId": "0", "bodyCrc32": "0"}, b"{not json"),
            RemotingCommand.request(code.UNREGISTER_BROKER, {
                "brokerName": "flood", "brokerAddr": "127.0.0.1:1", "clusterName": "flood",
                "brokerId": _OUT_OF_RANGE}),
            RemotingCommand.request(code.GET_ROUTEINFO_BY_TOPIC),  # no topic
            RemotingCommand.request(code.PUT_KV_CONFIG, {"namespace": "flood"}),
        )  # fmt: skip
    return (
        *common,
        RemotingCommand.request(code.LOCK_BATCH_MQ, {}, b"{not json"),
        RemotingCommand.request(code.UNLOCK_BATCH_MQ, {}, b'{"consumerGroup":1,"mqSet":"x"}'),
        RemotingCommand.request(code.SEND_MESSAGE_V2, _send(g=_OUT_OF_RANGE), b"flood"),
        RemotingCommand.request(code.SEND_MESSAGE_V2, _send(h=_OUT_OF_RANGE), b"flood"),
        RemotingCommand.request(code.SEND_MESSAGE_V2, _send(f="-" + _OUT_OF_RANGE), b"flood"),
        RemotingCommand.request(code.HEART_BEAT, {}, b'{"clientID":5,"producerDataSet":7}'),
        RemotingCommand.request(code.PULL_MESSAGE, {"topic": "FloodTopic"}),  # fields missing
        RemotingCommand.request(code.UPDATE_CONSUMER_OFFSET, {
            "consumerGroup": "flood", "topic": "FloodTopic", "queueId": "zero",
            "commitOffset": "0"}),
    )  # fmt: skip


def _batch(requests: Sequence[RemotingCommand], count: int) -> bytes:
    """``count`` frames cycling through ``requests``, with opaques 1.. (one buffer)."""
    frames = []
    for opaque, request in zip(range(1, count + 1), itertools.cycle(requests), strict=False):
        request.opaque = opaque
        frames.append(frame.encode_bytes(request))
    return b"".join(frames)


@dataclasses.dataclass(slots=True)
class FloodCounts:
    """What the flooding connections did, all together."""

    frames: int = 0
    """Frames written: malformed requests and garbage frames."""
    garbage: int = 0
    """Garbage frames among them (each one connection)."""
    truncated: int = 0
    """Truncated frames among them (each one connection)."""
    answers: int = 0
    """Answer frames read back."""
    closed_by_server: int = 0
    connects: int = 0
    connect_failures: int = 0
    taken: int = 0
    """Frames the servers took: answered, or ending a connection they closed."""
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    """The flooding process's own CPU time: on a small machine it takes CPU from the rest."""

    def as_dict(self) -> dict[str, float]:
        rate = self.frames / self.seconds if self.seconds > 0 else 0.0
        return {**dataclasses.asdict(self), "frames_per_s": round(rate, 1)}


class _Goal:
    """The frames the servers are to take of the flood; :attr:`reached` is set once they
    took them, and every flooding connection then ends."""

    def __init__(self, counts: FloodCounts, frames: float) -> None:
        self.counts = counts
        self.frames = frames
        self.reached = asyncio.Event()

    def take(self, frames: int) -> None:
        self.counts.taken += frames
        if self.counts.taken >= self.frames:
            self.reached.set()


class _Flooding(asyncio.Protocol):
    """One connection: writes its payload (again and again while the server reads it, for
    a malformed flood) and counts the answers."""

    def __init__(self, payload: bytes, frames: int, role: Role, goal: _Goal) -> None:
        self._payload = payload
        self._frames = frames
        self._role = role
        self._counts = goal.counts
        self._goal = goal
        self._transport: asyncio.Transport | None = None
        self._paused = False
        self._carry = b""
        self.closed_by_peer = False
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        self._write()

    def _write(self) -> None:
        transport = self._transport
        if transport is None or transport.is_closing() or self._paused:
            return
        if self._goal.reached.is_set():
            return
        transport.write(self._payload)
        self._counts.frames += self._frames
        if self._role == "truncated":
            transport.write_eof()
        elif self._role == "malformed":  # a batch a loop turn: the other connections write too
            asyncio.get_running_loop().call_soon(self._write)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._write()

    def data_received(self, data: bytes) -> None:
        data = self._carry + data if self._carry else data
        pos = 0
        while len(data) - pos >= 4:
            (length,) = _LENGTH.unpack_from(data, pos)
            if len(data) - pos - 4 < length:
                break
            pos += 4 + length
            self._counts.answers += 1
            self._goal.take(1)
        self._carry = data[pos:]

    def eof_received(self) -> bool:
        """The server closed: drop what is unwritten. (Letting asyncio close a transport
        with a full buffer, then aborting it, has it call ``connection_lost`` twice.)"""
        self.closed_by_peer = True
        if self._transport is not None:
            self._transport.abort()
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        if exc is not None:  # reset by the server
            self.closed_by_peer = True
        if not self.closed.done():
            self.closed.set_result(None)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.abort()


async def _flood_one(
    address: str,
    role: Role,
    payloads: Sequence[bytes],
    deadline: float,
    goal: _Goal,
    index: int,
) -> None:
    """Connect, flood, and connect again whenever the server closes, until ``deadline`` or
    until the servers took the ``goal``'s frames."""
    loop = asyncio.get_running_loop()
    counts = goal.counts
    host, port = split_address(address)
    source = source_host(address, index)
    local = None if source is None else (source, 0)
    garbage = role != "malformed"  # one frame a connection
    frames = 1 if garbage else BATCH_FRAMES
    for payload in itertools.cycle(payloads):
        left = deadline - time.monotonic()
        if left <= 0 or goal.reached.is_set():
            return
        made = functools.partial(_Flooding, payload, frames, role, goal)
        try:
            _, protocol = await asyncio.wait_for(
                loop.create_connection(made, host, port, local_addr=local),
                min(left, CONNECT_TIMEOUT),
            )
        except (OSError, TimeoutError):
            counts.connect_failures += 1
            await asyncio.sleep(0.05)  # the server may be momentarily out of descriptors
            continue
        counts.connects += 1
        counts.garbage += role == "garbage"
        counts.truncated += role == "truncated"
        wait = min(deadline - time.monotonic(), CLOSE_TIMEOUT if garbage else float("inf"))
        reached = asyncio.ensure_future(goal.reached.wait())
        await asyncio.wait((protocol.closed, reached), timeout=max(wait, 0.0),
                           return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        reached.cancel()
        counts.closed_by_server += protocol.closed_by_peer
        if garbage and protocol.closed_by_peer:
            goal.take(1)
        protocol.close()
        await protocol.closed


def plan(connections: int, broker: str, namesrv: str | None) -> list[tuple[str, Role]]:
    """(address, role) of each flooding connection: every fourth sends garbage or truncated
    frames (in turn), every third goes to the name server (when given)."""
    out: list[tuple[str, Role]] = []
    for i in range(connections):
        address = namesrv if namesrv is not None and i % 3 == 2 else broker
        role: Role = "malformed"
        if i % 4 == 3:
            role = "garbage" if i % 8 == 3 else "truncated"
        out.append((address, role))
    return out


async def run_flood(
    broker: str,
    namesrv: str | None,
    connections: int,
    duration: float,
    frames: int | None = None,
) -> FloodCounts:
    """Flood ``broker`` (and ``namesrv``) from ``connections`` connections for ``duration``
    seconds (at most :data:`MAX_DURATION`), or until the servers took ``frames`` frames."""
    for address in (broker, namesrv):
        if address is not None:
            loopback_address(address)
    duration = min(duration, MAX_DURATION)
    counts = FloodCounts()
    payloads_of: dict[Role, tuple[bytes, ...]] = {
        "garbage": garbage_frames(),
        "truncated": truncated_frames(),
    }
    goal = _Goal(counts, math.inf if frames is None else frames)
    batches = {
        target: (_batch(malformed_requests(target), BATCH_FRAMES),)
        for target in ("broker", "namesrv")
    }
    started = time.monotonic()
    cpu_started = time.process_time()
    deadline = started + duration
    floods = []
    for index, (address, role) in enumerate(plan(connections, broker, namesrv)):
        server = "namesrv" if address == namesrv and address != broker else "broker"
        payloads = payloads_of.get(role) or batches[server]
        floods.append(_flood_one(address, role, payloads, deadline, goal, index))
    await asyncio.gather(*floods)
    counts.seconds = time.monotonic() - started
    counts.cpu_seconds = time.process_time() - cpu_started
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rocketkube.bench.flooder",
        description="Flood a broker (and a name server) on loopback with malformed frames "
        "for --duration seconds; print the counts as JSON.",
    )
    parser.add_argument("broker", type=loopback_address, help="broker host:port (loopback)")
    parser.add_argument("--namesrv", type=loopback_address, help="name server host:port")
    parser.add_argument("--connections", type=int, default=24)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--frames", type=int, help="stop once the servers took this many")
    args = parser.parse_args(argv)
    print(STARTED, flush=True)
    counts = asyncio.run(
        run_flood(args.broker, args.namesrv, args.connections, args.duration, args.frames)
    )
    print(json.dumps(counts.as_dict()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
