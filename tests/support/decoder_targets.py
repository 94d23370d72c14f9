"""Every decoder a peer's bytes reach, as fuzz targets: what it decodes, inputs (arbitrary
bytes, and valid encodings mutated), and the errors it declares. A decoder fed anything
must return or raise one of those, never IndexError, struct.error, UnicodeDecodeError or
another exception leaking from its insides.

    frame.*            the frame decoder (length, header word, JSON and ROCKETMQ binary
                       headers), through the pure-Python scan and the compiled one when built,
                       the input fed whole and in pieces
    header.<Class>     every request/response header family (CommandHeader.decode from
                       extFields), and the send headers' own parser
    body.*             message bodies: a batch (SEND_BATCH_MESSAGE), commit log records (a
                       pull or QUERY_MESSAGE body, the store's recovery check), properties
    namesrv.*          register-broker bodies, JSON and compressed; routes and cluster info
    client.*           heartbeats, lock and reset-offset bodies
    ha.*               the replication stream: the master's transfer headers (read by a
                       slave), the slave's offset reports (read by a master)

Used by tests/common/test_decoder_fuzz.py (a few examples each, in ``make test``) and by
tools/fuzz_decoders.py (many, printing figures).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import struct
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import strategies as st

from rocketkube.broker.ha import wire
from rocketkube.common import errors, fastjson
from rocketkube.common.message import batch, properties, record
from rocketkube.common.protocol import (
    consumer_headers,
    heartbeat,
    route,
    send_headers,
    topic_config,
)
from rocketkube.common.remoting import frame
from rocketkube.common.remoting.codes import SerializeType
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.header import CommandHeader

HEADER_MODULES = (
    "admin_headers", "consumer_headers", "namesrv_headers", "pull_headers", "running_info",
    "send_headers", "transaction_headers",
)  # fmt: skip

_DECODE = (errors.ProtocolError,)
_EXTREMES = (0, 1, -1, 4, 21, 2**15 - 1, 2**15, 2**31 - 1, -(2**31), 2**24, 0x7F)
_TEXTS = st.text(max_size=40)
_NUMBERS = st.integers(min_value=-(2**70), max_value=2**70).map(str)
_VALUES = st.one_of(_TEXTS, _NUMBERS, st.sampled_from(["true", "false", "", " 1", "0x10"]))


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    """One decoder: ``decode`` applied to an input of ``inputs`` may raise ``declared``."""

    name: str
    decode: Callable[[Any], object]
    inputs: st.SearchStrategy[Any]
    declared: tuple[type[BaseException], ...] = _DECODE


@st.composite
def mutated(draw: st.DrawFn, valid: st.SearchStrategy[bytes]) -> bytes:
    """A valid encoding with a few mutations: bytes flipped, 16/32-bit fields overwritten
    with extreme values, slices cut, inserted or repeated, the end truncated."""
    data = bytearray(draw(valid))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        kind = draw(st.integers(0, 5))
        if kind == 0 and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == 1 and len(data) >= at + 4:
            value = draw(st.sampled_from((*_EXTREMES, len(data), len(data) + 1)))
            data[at : at + 4] = struct.pack(">i", max(min(value, 2**31 - 1), -(2**31)))
        elif kind == 2 and len(data) >= at + 2:
            data[at : at + 2] = struct.pack(">h", draw(st.sampled_from((-1, 0, 127, 32767))))
        elif kind == 3:
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == 4:
            del data[at : at + draw(st.integers(1, 16))]
        else:
            data[at:at] = data[at : at + draw(st.integers(1, 16))]
    return bytes(data)


def _fuzzed(valid: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    return st.one_of(st.binary(max_size=200), mutated(valid), valid)


# -- frames ------------------------------------------------------------------


def _commands(serialize: SerializeType) -> st.SearchStrategy[RemotingCommand]:
    def build(code: int, opaque: int, ext: dict[str, str], remark: str | None,
              body: bytes) -> RemotingCommand:  # fmt: skip
        cmd = RemotingCommand.request(code, ext, body)
        cmd.opaque, cmd.remark, cmd.serialize_type = opaque, remark, serialize
        return cmd

    return st.builds(
        build,
        st.integers(-(2**15), 2**15 - 1),
        st.integers(-(2**31), 2**31 - 1),
        st.dictionaries(
            st.text(min_size=1, max_size=8), st.text(min_size=1, max_size=12), max_size=4
        ),
        st.none() | st.text(max_size=12),
        st.binary(max_size=24),
    )


def _frames(serialize: SerializeType) -> st.SearchStrategy[bytes]:
    one = _commands(serialize).map(frame.encode_bytes)
    return st.lists(one, min_size=1, max_size=3).map(b"".join)


def _scans() -> list[tuple[str, frame.Scan]]:
    scans: list[tuple[str, frame.Scan]] = [("python", frame.FrameDecoder.scan)]
    compiled = frame.compiled_scan()
    if compiled is not None:
        scans.append(("compiled", compiled))
    return scans


def _feed(scan: frame.Scan, piece: int) -> Callable[[bytes], object]:
    """Feed a fresh decoder the input in pieces of ``piece`` bytes (0: whole), then decode
    each command's body as the processors would read it (``bytes``)."""

    def decode(data: bytes) -> object:
        decoder = frame.FrameDecoder(scan=scan)
        step = piece or max(len(data), 1)
        out = []
        for start in range(0, len(data), step):
            out += decoder.feed(data[start : start + step])
        return [(cmd.code, dict(cmd.ext_fields), bytes(cmd.body)) for cmd in out]

    return decode


def frame_targets() -> Iterator[Target]:
    for scan_name, scan in _scans():
        for serialize in (SerializeType.JSON, SerializeType.ROCKETMQ):
            name = serialize.name.lower()
            inputs = _fuzzed(_frames(serialize))
            yield Target(f"frame.{name}.{scan_name}", _feed(scan, 0), inputs)
            yield Target(f"frame.{name}.{scan_name}.pieces", _feed(scan, 7), inputs)
    yield Target(
        "frame.json_header",
        frame.decode_json_header,
        _fuzzed(_commands(SerializeType.JSON).map(frame.encode_json_header)),
    )
    yield Target(
        "frame.binary_header",
        frame.decode_binary_header,
        _fuzzed(_commands(SerializeType.ROCKETMQ).map(frame.encode_binary_header)),
    )


# -- headers -----------------------------------------------------------------


def header_classes() -> list[type[CommandHeader]]:
    """Every header family of the protocol modules, by name (not the ones tests define)."""
    for module in HEADER_MODULES:
        importlib.import_module(f"rocketkube.common.protocol.{module}")
    found: dict[str, type[CommandHeader]] = {}
    pending = list(CommandHeader.__subclasses__())
    while pending:
        cls = pending.pop()
        if cls.__module__.startswith("rocketkube."):
            found[cls.__qualname__] = cls
        pending += cls.__subclasses__()
    return [found[name] for name in sorted(found)]


def _ext_fields(cls: type[CommandHeader]) -> st.SearchStrategy[dict[str, str]]:
    """Its own wire names (each maybe missing) with any value, and unknown keys."""
    names = [spec.wire for spec in cls._specs()]
    own = st.fixed_dictionaries({}, optional=dict.fromkeys(names, _VALUES))
    extra = st.dictionaries(_TEXTS, _VALUES, max_size=3)
    return st.builds(lambda a, b: {**b, **a}, own, extra)


def header_targets() -> Iterator[Target]:
    for cls in header_classes():
        inputs = _ext_fields(cls)
        yield Target(f"header.{cls.__qualname__}", cls.decode, inputs, (errors.HeaderError,))
    sends = ((1, send_headers.SendMessageRequestHeader),
             (2, send_headers.SendMessageRequestHeaderV2))  # fmt: skip
    for version, cls in sends:
        parse = functools.partial(_parse_send, v2=version == 2)
        yield Target(f"header.parse_send_header.v{version}", parse, _ext_fields(cls),
                     (errors.HeaderError,))  # fmt: skip


def _parse_send(ext: dict[str, str], *, v2: bool) -> object:
    return send_headers.parse_send_header(ext, v2=v2)


# -- bodies ------------------------------------------------------------------

_PROPERTIES = st.dictionaries(
    st.text(min_size=1, max_size=8).filter(lambda k: "\x01" not in k and "\x02" not in k),
    st.text(min_size=1, max_size=12).filter(lambda v: "\x01" not in v and "\x02" not in v),
    max_size=4,
).map(properties.encode_properties)

_BATCH_ITEMS = st.lists(
    st.builds(
        batch.BatchItem, st.integers(-(2**31), 2**31 - 1), st.binary(max_size=24), _PROPERTIES
    ),
    min_size=1,
    max_size=3,
).map(batch.encode_batch)

_HOSTS = st.sampled_from(["127.0.0.1:10911", "10.0.0.1:0", "[::1]:10911", "[fe80::1]:1"])

_RECORDS = st.lists(
    st.builds(
        functools.partial(record.encode),
        topic=st.text(min_size=1, max_size=10),
        body=st.binary(max_size=24),
        properties=_PROPERTIES,
        queue_id=st.integers(0, 7),
        queue_offset=st.integers(0, 2**40),
        born_host=_HOSTS,
        store_host=_HOSTS,
    ),
    min_size=1,
    max_size=3,
).map(b"".join)


def _check_all(data: bytes) -> object:
    """The store's recovery check over every position: it never raises."""
    return [record.check(data, pos) for pos in range(0, len(data), 13)]


def body_targets() -> Iterator[Target]:
    yield Target("body.batch", batch.decode_batch, _fuzzed(_BATCH_ITEMS))
    yield Target("body.records", record.decode_all, _fuzzed(_RECORDS))
    yield Target("body.record_check", _check_all, _fuzzed(_RECORDS), ())
    yield Target("body.properties", properties.decode_properties,
                 _fuzzed(_PROPERTIES.map(str.encode)), ())  # fmt: skip


# -- JSON bodies of the name server and the broker -------------------------------------------

_NAMES = st.text(min_size=1, max_size=8).filter(lambda s: " " not in s)


def _register_body(compressed: bool) -> st.SearchStrategy[bytes]:
    def build(names: list[str], queues: int, filters: list[str]) -> bytes:
        table = {n: topic_config.TopicConfig(n, queues, queues) for n in names}
        wrapper = topic_config.TopicConfigWrapper(topic_config.DataVersion(), table)
        return topic_config.RegisterBrokerBody(wrapper, filters).encode(compressed)

    return st.builds(build, st.lists(_NAMES, max_size=3), st.integers(-5, 16),
                     st.lists(_NAMES, max_size=2))  # fmt: skip


def _register(compressed: bool) -> Callable[[bytes], object]:
    return functools.partial(
        topic_config.RegisterBrokerBody.decode, compressed=compressed, max_inflated=1 << 20
    )


def _heartbeats() -> st.SearchStrategy[bytes]:
    subscription = st.builds(
        heartbeat.parse_subscription, _NAMES, st.sampled_from(["*", "a || b", "", "x"])
    )
    consumer = st.builds(
        heartbeat.ConsumerData, group_name=_NAMES, subscriptions=st.lists(subscription, max_size=2)
    )
    return st.builds(
        heartbeat.HeartbeatData, _NAMES, st.lists(consumer, max_size=2),
        st.lists(_NAMES, max_size=2),
    ).map(heartbeat.HeartbeatData.encode)  # fmt: skip


_JSON_SHAPES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=8,
).map(lambda v: fastjson.dumps(v))  # fmt: skip


def _json_fuzzed(valid: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """Also JSON of any shape, where an object of known fields was expected."""
    return st.one_of(_fuzzed(valid), _JSON_SHAPES)


def json_targets() -> Iterator[Target]:
    yield Target(
        "namesrv.register_broker.json", _register(False), _json_fuzzed(_register_body(False))
    )
    yield Target(
        "namesrv.register_broker.compressed", _register(True), _fuzzed(_register_body(True))
    )
    yield Target("client.heartbeat", heartbeat.HeartbeatData.decode, _json_fuzzed(_heartbeats()))
    locks = st.just(b'{"consumerGroup":"g","clientId":"c","mqSet":[{"topic":"t",'
                    b'"brokerName":"b","queueId":1}]}')  # fmt: skip
    yield Target(
        "client.lock_batch", consumer_headers.LockBatchRequestBody.decode, _json_fuzzed(locks)
    )
    resets = st.just(b'{"offsetTable":{{"topic":"t","brokerName":"b","queueId":1}:5}}')
    yield Target(
        "client.reset_offset", consumer_headers.ResetOffsetBody.decode, _json_fuzzed(resets)
    )
    routes = st.just(b'{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"b",'
                     b'"cluster":"c"}],"queueDatas":[{"brokerName":"b","perm":6,'
                     b'"readQueueNums":4,"writeQueueNums":4,"topicSysFlag":0}]}')  # fmt: skip
    yield Target("namesrv.route", route.TopicRouteData.decode, _json_fuzzed(routes))
    clusters = st.just(
        b'{"brokerAddrTable":{"b":{"brokerAddrs":{0:"127.0.0.1:10911"},'
        b'"brokerName":"b","cluster":"c"}},"clusterAddrTable":{"c":["b"]}}'
    )
    yield Target("namesrv.cluster_info", route.ClusterInfo.decode, _json_fuzzed(clusters))
    yield Target(
        "namesrv.topic_list",
        route.decode_topic_list,
        _json_fuzzed(st.just(b'{"topicList":["a","b"]}')),
    )
    yield Target(
        "namesrv.kv_table", route.decode_kv_table, _json_fuzzed(st.just(b'{"table":{"a":"b"}}'))
    )


# -- HA ----------------------------------------------------------------------


def _transfer_header(data: bytes) -> object:
    return wire.transfer_header(data[: wire.TRANSFER_HEADER.size], 1 << 20)


def _offset_reports(data: bytes) -> object:
    buffer = bytearray()
    out = []
    for start in range(0, len(data), 5):
        buffer += data[start : start + 5]
        out.append(wire.last_offset(buffer))
    return out


def ha_targets() -> Iterator[Target]:
    headers = st.builds(wire.TRANSFER_HEADER.pack, st.integers(0, 2**62), st.integers(0, 1 << 20))
    yield Target("ha.transfer_header", _transfer_header, _fuzzed(headers))
    reports = st.lists(st.integers(0, 2**62).map(wire.OFFSET.pack), max_size=4).map(b"".join)
    yield Target("ha.offset_reports", _offset_reports, _fuzzed(reports), ())


def all_targets() -> list[Target]:
    return [*frame_targets(), *header_targets(), *body_targets(), *json_targets(), *ha_targets()]


def leak(target: Target, value: Any) -> BaseException | None:
    """The exception ``target`` let leak on ``value``: one it does not declare; None when it
    returned or raised a declared one."""
    try:
        target.decode(value)
    except target.declared:
        return None
    except Exception as exc:  # what this looks for
        return exc
    return None
