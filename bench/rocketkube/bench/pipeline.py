"""The wire side of the broker benchmark: pre-encoded send frames and pipelined connections.

A :class:`Pipeline` is an asyncio protocol that keeps up to ``window`` requests outstanding
on one connection and matches answers by opaque; :class:`SendPipeline` writes
SEND_MESSAGE_V2 (310) frames from :class:`SendFrames`, :class:`PullPipeline` walks a plan
of PULL_MESSAGE (11) requests and decodes every record it gets back.

``Connection.invoke`` is not used here: a future and a timer per request would make the
client the bottleneck. Send frames come from a template encoded once by the project's JSON
header encoder (:func:`frame.encode_json_header`), with only the opaque and the UNIQ_KEY
spliced in, a window's worth written with one ``transport.write``; a send answer is read
with one ``orjson.loads`` of its header, cheaper than decoding a RemotingCommand.
Messages look like a Java producer's: properties ``UNIQ_KEY``, ``WAIT=true``, ``TAGS``.
"""

from __future__ import annotations

import abc
import asyncio
import secrets
import struct
import time
import typing
from collections import Counter, deque
from collections.abc import Callable, Iterable
from typing import Any, Final

import orjson

from rocketkube.common import errors
from rocketkube.common.message import record, sysflag
from rocketkube.common.protocol import pull_headers, send_headers
from rocketkube.common.remoting import addresses, frame
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

__all__ = [
    "CONSUMER_GROUP",
    "DEFAULT_TOPIC",
    "PRODUCER_GROUP",
    "Progress",
    "PullPipeline",
    "PullRange",
    "SendFrames",
    "SendPipeline",
    "open_pipelines",
    "pull_plan",
    "run_pipelines",
    "send_request",
]

DEFAULT_TOPIC: Final = "TBW102"
PRODUCER_GROUP: Final = "rocketkube_bench_producer"
CONSUMER_GROUP: Final = "rocketkube_bench_consumer"
TAG: Final = "TagA"

_HEAD: Final = struct.Struct(">ii")  # frame length, header length (serialize type 0: JSON)
_LENGTH: Final = struct.Struct(">i")
_OPAQUE_MARK: Final = 7_070_707_070_707
_UNIQ_MARK: Final = "UNIQSEQMARK"
_UNIQ_DIGITS: Final = 12  # UNIQ_KEY = 20 hex of this producer + 12 hex of the sequence


def _properties(uniq_key: str) -> str:
    """A Java producer's properties: ``UNIQ_KEY``, ``WAIT``, ``TAGS`` (separators as in
    docs/protocol.md §9.2)."""
    return f"UNIQ_KEY\x01{uniq_key}\x02WAIT\x01true\x02TAGS\x01{TAG}"


def send_request(
    topic: str, queue_id: int, body: bytes, uniq_key: str, born_timestamp: int
) -> RemotingCommand:
    """A SEND_MESSAGE_V2 request the way a Java 4.x producer fills it (opaque still 0)."""
    ext = send_headers.SendMessageRequestHeaderV2(
        producer_group=PRODUCER_GROUP,
        topic=topic,
        default_topic=DEFAULT_TOPIC,
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=born_timestamp,
        flag=0,
        properties=_properties(uniq_key),
        reconsume_times=0,
        unit_mode=False,
        max_reconsume_times=16,
        batch=False,
    ).encode()
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body, language="JAVA")


class SendFrames:
    """Pre-encoded SEND_MESSAGE_V2 frames of one producer: only opaque and UNIQ_KEY vary.

    Message ``seq`` goes to queue ``seq % queues`` with UNIQ_KEY ``<prefix><seq as 12 hex>``.
    Each queue's frame is the JSON header :func:`frame.encode_json_header` writes for
    :func:`send_request`, cut into three pieces around the opaque and the sequence digits.
    """

    __slots__ = ("_body", "_pieces", "_queues", "prefix")

    def __init__(self, topic: str, body: bytes, queues: int, born_timestamp: int) -> None:
        self.prefix = secrets.token_hex(10).upper()
        self._body = body
        self._queues = queues
        self._pieces = [self._template(topic, q, born_timestamp) for q in range(queues)]

    def _template(
        self, topic: str, queue_id: int, born_timestamp: int
    ) -> tuple[bytes, bytes, bytes, bool, int]:
        """(piece, piece, piece, UNIQ_KEY comes first, header length without the opaque)."""
        cmd = send_request(topic, queue_id, b"", self.prefix + _UNIQ_MARK, born_timestamp)
        cmd.opaque = _OPAQUE_MARK
        header = frame.encode_json_header(cmd)
        opaque_mark = b"%d" % _OPAQUE_MARK
        uniq_mark = _UNIQ_MARK.encode()
        if header.count(opaque_mark) != 1 or header.count(uniq_mark) != 1:
            raise ValueError("send header template: a marker is not found exactly once")
        uniq_first = header.index(uniq_mark) < header.index(opaque_mark)
        first, second = (uniq_mark, opaque_mark) if uniq_first else (opaque_mark, uniq_mark)
        a, _, rest = header.partition(first)
        b, _, c = rest.partition(second)
        return a, b, c, uniq_first, len(a) + len(b) + len(c) + _UNIQ_DIGITS

    def uniq_key(self, seq: int) -> str:
        return f"{self.prefix}{seq:0{_UNIQ_DIGITS}X}"

    def add(self, out: list[bytes], opaque: int, seq: int) -> None:
        """Append the frame of message ``seq`` with ``opaque`` to ``out`` (as pieces)."""
        a, b, c, uniq_first, fixed = self._pieces[seq % self._queues]
        op = b"%d" % opaque
        uniq = b"%012X" % seq
        header_len = fixed + len(op)
        body = self._body
        head = _HEAD.pack(4 + header_len + len(body), header_len)
        if uniq_first:
            out += (head, a, uniq, b, op, c, body)
        else:
            out += (head, a, op, b, uniq, c, body)

    def build(self, opaque: int, seq: int) -> bytes:
        """One whole frame, length field included."""
        out: list[bytes] = []
        self.add(out, opaque, seq)
        return b"".join(out)


# -- pipelines ---------------------------------------------------------------------------------

_MISSING: Final = object()


class Progress:
    """Messages completed over time, shared by the pipelines of one run.

    :meth:`window_rates` cuts the run into windows of equal message counts: on a machine
    whose CPU is taken away now and then, the median window is steadier than the mean.
    """

    __slots__ = ("events", "started")

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.events: list[tuple[float, int]] = []

    def add(self, count: int) -> None:
        self.events.append((time.perf_counter(), count))

    def window_rates(self, windows: int = 20) -> list[float]:
        """Messages a second in each of about ``windows`` windows (the last partial one too
        when it is the only one)."""
        total = sum(count for _, count in self.events)
        size = max(1, total // max(1, windows))
        rates: list[float] = []
        done = last_done = 0
        last_time = self.started
        for at, count in self.events:
            done += count
            if done - last_done >= size or (done == total and not rates):
                if at > last_time:
                    rates.append((done - last_done) / (at - last_time))
                last_time, last_done = at, done
        return rates


class Pipeline(asyncio.Protocol, abc.ABC):
    """Keeps up to ``window`` requests outstanding on one connection.

    Requests are written in batches: after answers arrive, the freed slots are refilled only
    once at least ``window // 16`` are free (or everything left fits), so a burst of answers
    costs one write, not one per answer. ``done`` resolves when nothing is left to send and
    every request was answered; it fails if the connection drops.

    Received bytes are cut into frames here; :meth:`_frame` gets each frame from its header
    length word on (what :func:`frame.decode_frame` takes), so a subclass can read only what
    it needs of it.
    """

    def __init__(self, window: int, progress: Progress | None = None) -> None:
        self._window = max(1, window)
        self._progress = progress
        self.completed = 0
        """Messages done: sends acknowledged with code 0, records pulled."""
        self._refill = max(1, self._window // 16)
        self._carry = b""
        self._pending: dict[int, Any] = {}
        self._opaque = 0
        self._transport: asyncio.Transport | None = None
        self.codes: Counter[int] = Counter()
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    # subclasses: how many requests are left, make ``n`` of them, read an answer

    @abc.abstractmethod
    def _left(self) -> int:
        """See the subclasses."""

    @abc.abstractmethod
    def _take(self, n: int, out: list[bytes]) -> None:
        """See the subclasses."""

    @abc.abstractmethod
    def _frame(self, data: memoryview) -> None:
        """See the subclasses."""

    def _next_opaque(self, context: Any) -> int:
        self._opaque = opaque = self._opaque + 1
        self._pending[opaque] = context
        return opaque

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = typing.cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(errors.ConnectionClosedError(f"connection closed with {len(self._pending)} "
                                                "requests unanswered"))  # fmt: skip

    def data_received(self, data: bytes) -> None:
        before = self.completed
        if self._carry:
            data = self._carry + data
        view = memoryview(data)
        size = len(data)
        pos = 0
        unpack = _LENGTH.unpack_from
        try:
            while size - pos >= 4:
                (length,) = unpack(view, pos)
                if not 4 <= length <= frame.MAX_FRAME_LENGTH:
                    raise errors.ProtocolError(f"frame length {length} is out of range")
                end = pos + 4 + length
                if end > size:
                    break
                self._frame(view[pos + 4 : end])
                pos = end
        except errors.ProtocolError as exc:
            self._fail(exc)
            return
        self._carry = data[pos:] if pos < size else b""
        if self._progress is not None and self.completed != before:
            self._progress.add(self.completed - before)
        self._fill()

    def _fail(self, exc: Exception) -> None:
        if not self.done.done():
            self.done.set_exception(exc)

    def start(self) -> None:
        self._fill()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def _fill(self) -> None:
        if self.done.done() or self._transport is None:
            return
        pending = len(self._pending)
        free = self._window - pending
        left = self._left()
        if left == 0:
            if pending == 0:
                self.done.set_result(None)
            return
        if free < self._refill and free < left and pending:
            return
        out: list[bytes] = []
        self._take(min(free, left), out)
        if out:
            self._transport.write(b"".join(out))


class SendPipeline(Pipeline):
    """Sends ``count`` messages from ``frames``, sequence numbers ``first_seq`` on."""

    def __init__(
        self,
        frames: SendFrames,
        count: int,
        first_seq: int,
        window: int,
        progress: Progress | None = None,
    ) -> None:
        super().__init__(window, progress)
        self._frames = frames
        self._seq = first_seq
        self._to_send = count
        self.failed = 0

    def _left(self) -> int:
        return self._to_send

    def _take(self, n: int, out: list[bytes]) -> None:
        add = self._frames.add
        seq = self._seq
        for _ in range(n):
            add(out, self._next_opaque(None), seq)
            seq += 1
        self._seq = seq
        self._to_send -= n

    def _frame(self, data: memoryview) -> None:
        # Only the code and the opaque matter: a JSON header is read with orjson alone (a
        # third of what building a RemotingCommand costs); anything else the general way.
        (word,) = _LENGTH.unpack_from(data, 0)
        if word >> 24 == 0:
            try:
                header = orjson.loads(data[4 : 4 + (word & 0xFFFFFF)])
                code, opaque = header["code"], header["opaque"]
            except (orjson.JSONDecodeError, KeyError, TypeError):
                raise errors.ProtocolError("send answer header is not a JSON command") from None
        else:
            cmd = frame.decode_frame(data)
            code, opaque = cmd.code, cmd.opaque
        if self._pending.pop(opaque, _MISSING) is _MISSING:
            return
        self.codes[code] += 1
        if code == ResponseCode.SUCCESS:
            self.completed += 1
        else:
            self.failed += 1


PullRange = tuple[int, int, int]
"""(queue id, first offset, end offset) still to pull."""


class PullPipeline(Pipeline):
    """Pulls each range of ``plan`` (again from ``nextBeginOffset`` if an answer falls short)
    and decodes every record received; ``failed`` counts pulls answered with an error."""

    def __init__(
        self,
        topic: str,
        plan: Iterable[PullRange],
        batch: int,
        window: int,
        progress: Progress | None = None,
    ) -> None:
        super().__init__(window, progress)
        self._refill = 1  # a pull answer carries many messages: refill at once
        self._topic = topic
        self._plan: deque[PullRange] = deque(plan)
        self._batch = batch
        self.body_bytes = 0
        self.failed = 0

    def _left(self) -> int:
        return len(self._plan)

    def _take(self, n: int, out: list[bytes]) -> None:
        plan = self._plan
        for _ in range(n):
            queue_id, offset, end = item = plan.popleft()
            header = pull_headers.PullMessageRequestHeader(
                consumer_group=CONSUMER_GROUP,
                topic=self._topic,
                queue_id=queue_id,
                queue_offset=offset,
                max_msg_nums=min(self._batch, end - offset),
                sys_flag=sysflag.FLAG_SUBSCRIPTION,
                commit_offset=0,
                suspend_timeout_millis=0,
                sub_version=0,
                subscription="*",
                expression_type="TAG",
            )
            cmd = RemotingCommand.request(RequestCode.PULL_MESSAGE, header.encode())
            cmd.opaque = self._next_opaque(item)
            head, _ = frame.encode(cmd)
            out.append(head)

    def _frame(self, data: memoryview) -> None:
        cmd = frame.decode_frame(data)
        context = self._pending.pop(cmd.opaque, _MISSING)
        if context is _MISSING:
            return
        queue_id, offset, end = context
        code = cmd.code
        self.codes[code] += 1
        if code == ResponseCode.SUCCESS:
            for message in record.iter_records(cmd.body):
                self.completed += 1
                self.body_bytes += len(message.body)
        if code in (ResponseCode.SUCCESS, ResponseCode.PULL_RETRY_IMMEDIATELY):
            next_offset = int(cmd.ext_fields.get("nextBeginOffset", offset))
            if offset < next_offset < end:
                self._plan.appendleft((queue_id, next_offset, end))
            elif next_offset <= offset:
                self.failed += 1
        else:
            self.failed += 1


def pull_plan(ranges: dict[int, tuple[int, int]], batch: int) -> list[PullRange]:
    """Pulls of ``batch`` messages covering each queue's [min, max), queues interleaved."""
    per_queue = [
        [(q, start, min(start + batch, high)) for start in range(low, high, batch)]
        for q, (low, high) in sorted(ranges.items())
    ]
    plan: list[PullRange] = []
    for turn in range(max((len(p) for p in per_queue), default=0)):
        plan.extend(p[turn] for p in per_queue if turn < len(p))
    return plan


# -- running pipelines -------------------------------------------------------------------------


async def open_pipelines(
    address: str, factories: Iterable[Callable[[], Pipeline]]
) -> list[Pipeline]:
    """One connection per factory; on failure the ones opened are closed."""
    host, port = addresses.split_address(address)
    loop = asyncio.get_running_loop()
    pipes: list[Pipeline] = []
    try:
        for factory in factories:
            _, pipe = await loop.create_connection(factory, host, port)
            pipes.append(pipe)
    except BaseException:
        for pipe in pipes:
            pipe.close()
        raise
    return pipes


async def run_pipelines(
    pipes: list[Pipeline], timeout: float, progress: Progress | None = None
) -> None:
    """Start every pipeline and wait until all are done; they are closed afterwards."""
    if progress is not None:
        progress.started = time.perf_counter()
    try:
        for pipe in pipes:
            pipe.start()
        await asyncio.wait_for(asyncio.gather(*(p.done for p in pipes)), timeout)
    finally:
        for pipe in pipes:
            pipe.close()
