"""Every decoder a peer can reach (tests/support/decoder_targets.py), fed arbitrary bytes and
mutated valid encodings, raises only the errors it declares; a server fed such frames
closes only the connection that sent them. A few examples per decoder here;
tools/fuzz_decoders.py (``make fuzz``) runs many and prints figures."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import decoder_targets
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketkube.common.remoting import frame
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer

T = TypeVar("T")
ECHO = 1000

TARGETS = decoder_targets.all_targets()


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_decoder_raises_only_its_declared_errors(
    target: decoder_targets.Target, data: st.DataObject
) -> None:
    value = data.draw(target.inputs)
    leaked = decoder_targets.leak(target, value)
    assert leaked is None, f"{target.name} leaked {leaked!r} on {value!r}"


def test_every_header_family_is_a_target() -> None:
    names = {t.name for t in TARGETS}
    classes = decoder_targets.header_classes()
    assert len(classes) >= 45
    assert {f"header.{cls.__qualname__}" for cls in classes} <= names


class ServedInThread:
    """A remoting server (ECHO only) on its own event loop in a thread, so that examples
    drawn by hypothesis talk to it over blocking sockets; and one well-behaved connection."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        table = {ECHO: lambda conn, req: RemotingCommand.response(ext_fields=dict(req.ext_fields))}
        self.server = RemotingServer(Dispatcher(table), "127.0.0.1", 0, idle_timeout=30)
        self.call(self.server.start())
        self.good = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        self.opaque = 0

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def echo(self) -> RemotingCommand:
        """An ECHO on the well-behaved connection, answered."""
        self.opaque += 1
        request = RemotingCommand.request(ECHO, {"n": str(self.opaque)})
        request.opaque = self.opaque
        self.good.sendall(frame.encode_bytes(request))
        (length,) = struct.unpack(">i", _read_exactly(self.good, 4))
        return frame.decode_frame(memoryview(_read_exactly(self.good, length)))

    def close(self) -> None:
        self.good.close()
        self.call(self.server.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "the well-behaved connection was closed"
        data += chunk
    return data


@pytest.fixture(scope="module")
def served() -> Iterator[ServedInThread]:
    served = ServedInThread()
    yield served
    served.close()


FRAMES = [t for t in TARGETS if t.name in ("frame.json.python", "frame.rocketmq.python")]


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(*(t.inputs for t in FRAMES)))
def test_a_server_fed_fuzzed_frames_closes_only_that_connection(
    served: ServedInThread, data: bytes
) -> None:
    address = ("127.0.0.1", served.server.port)
    with socket.create_connection(address, timeout=10) as hostile, contextlib.suppress(OSError):
        hostile.sendall(data)  # the server may close it amid the write
    answer = served.echo()
    assert (answer.opaque, answer.ext_fields) == (served.opaque, {"n": str(served.opaque)})
