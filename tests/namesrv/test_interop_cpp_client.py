"""A real third-party client (C++ RocketMQ client 1.0.1, PyPI ``rocketmq``) and our name server.

The C++ producer runs in a subprocess (``cpp_producer_probe.py``) with a temporary HOME
and is given a recording TCP proxy as its name server::

    C++ producer --105--> RecordingProxy --> NamesrvApp  (route: broker = FakeBroker)
         \\----SEND 10|310----------------------------> FakeBroker (registered via 103)

The test asserts that the name server answered the client's GET_ROUTEINFO_BY_TOPIC for
the topic with code 0 and a route naming the fake broker, that the client's send then
reached that broker with the message body, and that the client accepted the answer.

What C++ 1.0.1 was seen to send: JSON headers ending in a newline, ``language`` "CPP",
``version`` 63, ``remark`` "", AccessKey/Signature/OnsChannel in every extFields; one
GET_ROUTEINFO_BY_TOPIC (105, all values strings), then SEND_MESSAGE (10, long names;
``queueId``, ``sysFlag``, ``flag``, ``defaultTopicQueueNums`` as JSON numbers) and
UNREGISTER_CLIENT (35) at shutdown. No HEART_BEAT before the send.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import struct
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rocketkube.common.message import ids
from rocketkube.common.protocol import route
from rocketkube.common.protocol.namesrv_headers import RegisterBrokerRequestHeader
from rocketkube.common.protocol.topic_config import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigWrapper,
)
from rocketkube.common.remoting import frame
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply
from rocketkube.common.remoting.dispatch import Dispatcher
from rocketkube.common.remoting.server import RemotingServer
from rocketkube.namesrv.app import NamesrvApp
from rocketkube.namesrv.settings import NamesrvSettings

pytestmark = pytest.mark.interop

PROBE = Path(__file__).with_name("cpp_producer_probe.py")
#: Mirrors cpp_producer_probe.EXIT_NO_CLIENT (the probe is a script, not imported).
EXIT_NO_CLIENT = 77
#: The probe's own watchdog ends it after 90 s; this is the hard stop on our side.
PROBE_DEADLINE = 120.0

TOPIC = "InteropCppTopic"
GROUP = "PG_interop_cpp"
BODY = "hello from the C++ client"
CLUSTER = "DefaultCluster"
BROKER_NAME = "broker-a"
STORE_OFFSET = 0x1234
_LENGTH = struct.Struct(">i")


# -- raw frame capture ----------------------------------------------------------------------


@dataclass(frozen=True)
class RawFrame:
    """One frame exactly as it crossed the wire (length field included), and when."""

    data: bytes
    at: float

    @property
    def serialize_type(self) -> int:
        return self.data[4]

    @property
    def header(self) -> bytes:
        header_len = _LENGTH.unpack_from(self.data, 4)[0] & 0xFFFFFF
        return self.data[8 : 8 + header_len]

    def json_header(self) -> dict[str, Any]:
        """The header as the peer wrote it: values keep their JSON types."""
        parsed = json.loads(self.header)
        assert isinstance(parsed, dict)
        return parsed

    def command(self) -> RemotingCommand:
        return frame.decode_frame(memoryview(self.data)[4:])


class FrameSplitter:
    """Cuts a byte stream into whole frames, keeping their raw bytes."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[RawFrame]:
        self._buffer += data
        out = []
        while len(self._buffer) >= 4:
            end = 4 + _LENGTH.unpack_from(self._buffer, 0)[0]
            if len(self._buffer) < end:
                break
            out.append(RawFrame(bytes(self._buffer[:end]), time.monotonic()))
            del self._buffer[:end]
        return out


class RecordingProxy:
    """A TCP proxy on 127.0.0.1 that records every frame in both directions."""

    def __init__(self, upstream_port: int) -> None:
        self._upstream_port = upstream_port
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.requests: list[RawFrame] = []
        self.responses: list[RawFrame] = []

    @property
    def address(self) -> str:
        assert self._server is not None
        return f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in self._writers:
            writer.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._upstream_port)
        self._writers.update((writer, up_writer))
        for task in (
            asyncio.create_task(self._pump(reader, up_writer, self.requests)),
            asyncio.create_task(self._pump(up_reader, writer, self.responses)),
        ):
            self._tasks.add(task)

    @staticmethod
    async def _pump(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, record: list[RawFrame]
    ) -> None:
        splitter = FrameSplitter()
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                record.extend(splitter.feed(data))
                writer.write(data)
                await writer.drain()
        writer.close()

    def response_to(self, request: RawFrame) -> RawFrame:
        opaque = request.command().opaque
        matches = [f for f in self.responses if f.command().opaque == opaque]
        assert len(matches) == 1, f"expected one response with opaque {opaque}: {matches}"
        return matches[0]


# -- the fake broker --------------------------------------------------------------------------


class FakeBroker:
    """Records every request; answers sends and heartbeats like a healthy Apache broker."""

    def __init__(self) -> None:
        self.requests: list[tuple[float, RemotingCommand]] = []
        self.server = RemotingServer(self, "127.0.0.1", 0, idle_timeout=60)
        self._dispatcher = Dispatcher(
            {
                RequestCode.SEND_MESSAGE: self._send,
                RequestCode.SEND_MESSAGE_V2: self._send,
                RequestCode.HEART_BEAT: self._ok,
                RequestCode.UNREGISTER_CLIENT: self._ok,
            }
        )

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    def handle(self, conn: Connection, request: RemotingCommand) -> Reply:
        request.body = request.body_bytes()  # plain bytes, to compare and print
        self.requests.append((time.monotonic(), request))
        return self._dispatcher.handle(conn, request)

    def _send(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        msg_id = ids.encode_offset_msg_id("127.0.0.1", self.server.port, STORE_OFFSET)
        return RemotingCommand.response(
            ext_fields={
                "msgId": msg_id,
                "queueId": "0",
                "queueOffset": "0",
                "MSG_REGION": "DefaultRegion",
                "TRACE_ON": "true",
            }
        )

    def _ok(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response()


# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture
async def name_server(tmp_path: Path) -> AsyncIterator[NamesrvApp]:
    """A name server on the wall clock (the client and the fake broker live in real time)."""
    settings = NamesrvSettings.model_validate(
        {
            "listenPort": 0,
            "httpPort": 0,
            "bindAddress": "127.0.0.1",
            "kvConfigPath": str(tmp_path / "kv.json"),
        }
    )
    app = NamesrvApp(settings)
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    fake = FakeBroker()
    await fake.server.start()
    try:
        yield fake
    finally:
        await fake.server.stop()


@pytest.fixture
async def broker_link() -> AsyncIterator[RemotingClient]:
    """The fake broker's connection to the name server, open for the whole test."""
    client = RemotingClient(timeout=5.0)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def proxy(name_server: NamesrvApp) -> AsyncIterator[RecordingProxy]:
    recording = RecordingProxy(name_server.port)
    await recording.start()
    try:
        yield recording
    finally:
        await recording.stop()


async def register(namesrv: NamesrvApp, broker: FakeBroker, client: RemotingClient) -> None:
    """REGISTER_BROKER (103) the fake broker as master of TOPIC and TBW102.

    The connection must stay open: like Apache's RouteInfoManager.onChannelDestroy, the
    name server drops a broker as soon as the channel it registered over closes.
    """
    table = {
        TOPIC: TopicConfig(TOPIC, read_queue_nums=4, write_queue_nums=4, perm=6),
        "TBW102": TopicConfig("TBW102", read_queue_nums=8, write_queue_nums=8, perm=7),
    }
    body = RegisterBrokerBody(TopicConfigWrapper(DataVersion(1_700_000_000_000, 1), table))
    header = RegisterBrokerRequestHeader(
        broker_name=BROKER_NAME,
        broker_addr=broker.address,
        cluster_name=CLUSTER,
        ha_server_addr="127.0.0.1:10912",
        broker_id=0,
    )
    request = RemotingCommand.request(RequestCode.REGISTER_BROKER, header.encode(), body.encode())
    response = await client.invoke(namesrv.address, request)
    assert response.code == ResponseCode.SUCCESS, response.remark


async def run_probe(namesrv_addr: str, home: Path) -> tuple[int | None, str, str]:
    """Run the C++ producer: (exit code, stdout, stderr), or (None, "", "") when killed."""
    env = dict(os.environ, HOME=str(home))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(PROBE),
        namesrv_addr,
        TOPIC,
        GROUP,
        BODY,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), PROBE_DEADLINE)
    except TimeoutError:
        return None, "", ""
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def client_log(home: Path) -> str:
    logs = sorted((home / "logs").rglob("*")) if (home / "logs").exists() else []
    return "\n".join(p.read_text(errors="replace")[-4000:] for p in logs if p.is_file())


# -- the test -------------------------------------------------------------------------------


async def test_cpp_producer_routes_through_our_name_server(
    name_server: NamesrvApp,
    broker: FakeBroker,
    broker_link: RemotingClient,
    proxy: RecordingProxy,
    tmp_path: Path,
) -> None:
    await register(name_server, broker, broker_link)
    home = tmp_path / "home"
    home.mkdir()

    code, out, err = await run_probe(proxy.address, home)
    if code == EXIT_NO_CLIENT:
        pytest.skip(f"the rocketmq C++ client cannot be imported: {out.strip()}")
    if code is None:
        pytest.fail(f"the C++ producer was killed after {PROBE_DEADLINE}s:\n{client_log(home)}")
    why = f"probe exit {code}\nstdout: {out}\nstderr: {err}\nclient log:\n{client_log(home)}"

    # (1) The client asked our name server for the topic's route, as C++ 1.0.1 does.
    assert proxy.requests, f"the client sent nothing to the name server\n{why}"
    route_request = proxy.requests[0]
    raw = route_request.json_header()
    assert route_request.serialize_type == 0  # JSON
    assert route_request.header.endswith(b"}\n"), "C++ ends its JSON header with a newline"
    assert raw["code"] == RequestCode.GET_ROUTEINFO_BY_TOPIC
    assert (raw["language"], raw["version"], raw["remark"]) == ("CPP", 63, "")
    assert raw["extFields"] == {
        "AccessKey": "",
        "OnsChannel": "ALIYUN",
        "Signature": raw["extFields"]["Signature"],
        "topic": TOPIC,
    }

    route_response = proxy.response_to(route_request)
    answer = route_response.command()
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    routed = route.TopicRouteData.decode(answer.body)
    assert [(b.broker_name, b.broker_addrs) for b in routed.broker_datas] == [
        (BROKER_NAME, {0: broker.address})
    ]
    assert [
        (q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in routed.queue_datas
    ] == [(BROKER_NAME, 4, 4, 6)]

    # (2) Its next frame went to the broker that route named: the send, with the body.
    assert broker.requests, f"the client sent nothing to the broker\n{why}"
    send_at, send = broker.requests[0]
    assert send_at > route_response.at, "the send left before the route arrived"
    assert send.code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2), why
    assert (send.language, send.version) == ("CPP", 63)
    assert send.code == RequestCode.SEND_MESSAGE  # C++ 1.0.1: long field names, code 10
    fields = send.ext_fields
    assert (fields["topic"], fields["producerGroup"], fields["defaultTopic"]) == (
        TOPIC,
        GROUP,
        "TBW102",
    )
    # C++ 1.0.1 writes these three as JSON numbers; our frame decoder hands on strings.
    assert (fields["sysFlag"], fields["defaultTopicQueueNums"]) == ("0", "4")
    assert fields["queueId"] in {"0", "1", "2", "3"}
    assert send.body == BODY.encode()
    properties = dict(pair.split("\x01", 1) for pair in fields["properties"].split("\x02") if pair)
    assert properties["KEYS"] == "probe-key"
    assert properties["TAGS"] == "probe-tag"

    # (3) The client accepted the broker's answer and reports its UNIQ_KEY as the id.
    result = json.loads(out.splitlines()[-1]) if out.strip() else {}
    assert result.get("ok") is True, why
    assert result["status"] == 0  # SendStatus.OK
    assert result["msg_id"] == properties["UNIQ_KEY"]
    assert result["offset"] == 0

    # The route was found at once and served the send: no fallback to TBW102, no retries.
    assert [(f.command().code, f.command().ext_fields["topic"]) for f in proxy.requests] == [
        (RequestCode.GET_ROUTEINFO_BY_TOPIC, TOPIC)
    ], why
