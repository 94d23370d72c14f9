"""A plain send's preparation (``records.prepare_plain``, in Python and compiled) gives
what the send path's Python checks (``SendProcessor._check``) give.

Each request goes through a processor with the preparation and one without it: a plain
send yields the same store message and answer details from both; any other (batches,
retry topics, delay or transaction properties, repeated or malformed properties, lenient
integers, unknown topics, bad queues) is left to the checks (the preparation returns
None), so the outcome is theirs by construction. Every test runs with the Python module
and, when it was built, the compiled one.
"""

from __future__ import annotations

import typing

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketkube.broker.context import BrokerContext
from rocketkube.broker.processors.send import processor as send
from rocketkube.broker.store import InnerMessage, records
from rocketkube.common.protocol.topic_config import TopicConfig
from rocketkube.common.remoting import frame
from rocketkube.common.remoting.codes import RequestCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection

_COMPILED = records.compiled_module()
LAYOUTS = [pytest.param(typing.cast("records.Implementation", records), id="python")]
if _COMPILED is not None:
    LAYOUTS.append(pytest.param(_COMPILED, id="compiled", marks=pytest.mark.compiled))
TOPIC = "PlainTopic"


@pytest.fixture(params=LAYOUTS)
def layout(request: pytest.FixtureRequest) -> records.Implementation:
    """The records module under test: the Python one, or the compiled one."""
    return typing.cast("records.Implementation", request.param)


def _never(
    request: RemotingCommand,
    v2: bool,
    topics: dict[str, records.PlainTopic],
    configs: dict[str, TopicConfig],
    rules: records.PlainRules,
    born_host: bytes,
) -> None:
    """A preparation that finds no send plain: every one goes through the checks."""
    return None


def processor_pair(
    context: BrokerContext, layout: records.Implementation
) -> tuple[send.SendProcessor, send.SendProcessor]:
    """A processor preparing plain sends with ``layout`` and one with the checks only."""
    with_layout = send.SendProcessor(context)
    with_layout._plain = layout.prepare_plain
    with_layout._prepare_run = layout.prepare_run
    checks_only = send.SendProcessor(context)
    checks_only._plain = _never
    return with_layout, checks_only


class _Peer(Connection):
    """A connection that is never opened: the processor reads its address, and reports
    malformed sends to it (kept in ``faults``)."""

    def __init__(self) -> None:
        self.remote_address = "127.0.0.1:40000"
        self.faults: list[str] = []

    def fault(self, kind: str, detail: str, count: int = 1) -> None:
        self.faults += [kind] * count


def v2_fields(**changes: str | None) -> dict[str, str]:
    fields: dict[str, str | None] = {
        "a": "group", "b": TOPIC, "c": "TBW102", "d": "4", "e": "3", "f": "0",
        "g": "1700000000000", "h": "0",
        "i": "UNIQ_KEY\x01U1\x02WAIT\x01true\x02TAGS\x01TagA\x02KEYS\x01k1 k2\x02",
        "j": "0", "k": "false", "l": "16", "m": "false",
    }  # fmt: skip
    fields.update(changes)
    return {key: value for key, value in fields.items() if value is not None}


def v1_fields(**changes: str | None) -> dict[str, str]:
    names = dict(zip("abcdefghijklm", (
        "producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
        "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes",
        "batch",
    ), strict=True))  # fmt: skip
    return {names[key]: value for key, value in v2_fields(**changes).items()}


def outcome(ready: records.PreparedSend | RemotingCommand) -> tuple[object, ...]:
    """What a prepared send decides: its store messages and what its answer names."""
    if isinstance(ready, RemotingCommand):
        return ("refused", ready.code, ready.remark)
    messages = [
        tuple(bytes(value) if isinstance(value, memoryview) else value
              for value in m)
        for m in ready.messages
    ]  # fmt: skip
    return (messages, ready.topic, ready.queue_id, ready.body_bytes, ready.wait_flush)


@pytest.fixture
def processors(
    context: BrokerContext, layout: records.Implementation
) -> tuple[send.SendProcessor, send.SendProcessor]:
    """A processor with the preparation and one with the checks only; the topic known."""
    context.topics.update(TopicConfig(TOPIC, read_queue_nums=8, write_queue_nums=8))
    return processor_pair(context, layout)


def prepared_alone(
    processor: send.SendProcessor, request: RemotingCommand, v2: bool
) -> records.PreparedSend | None:
    """What the preparation alone makes of ``request`` with ``processor``'s topic states."""
    topics, configs = processor._plain_topics, processor._topics.table
    return processor._plain(request, v2, topics, configs, processor._rules, bytes(8))


def prepare(
    processors: tuple[send.SendProcessor, send.SendProcessor], ext: dict[str, str], code: int
) -> tuple[tuple[object, ...], tuple[object, ...], records.PreparedSend | None]:
    """Both processors' outcomes, twice each (the first caches the topic's state), and
    what the preparation alone made of it."""
    compiled, python = processors
    peer = _Peer()
    body = memoryview(b"hello world")
    v2 = code != RequestCode.SEND_MESSAGE
    primer = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, v2_fields(), body)
    compiled._prepare(peer, primer, True)  # the topic's state cached
    request = RemotingCommand.request(code, dict(ext), body)
    alone = prepared_alone(compiled, request, v2)
    results = []
    for processor in (compiled, python, compiled, python):
        request = RemotingCommand.request(code, dict(ext), body)
        results.append(outcome(processor._prepare(peer, request, v2)))
    assert results[0] == results[2]
    assert results[1] == results[3]
    return results[0], results[1], alone


@pytest.mark.parametrize(
    ("code", "fields"),
    [
        (RequestCode.SEND_MESSAGE_V2, v2_fields()),
        (RequestCode.SEND_MESSAGE, v1_fields()),
        (RequestCode.SEND_MESSAGE_V2, v2_fields(i=None, j=None, k=None, l=None, m=None)),
        (RequestCode.SEND_MESSAGE_V2, v2_fields(i="WAIT\x01FALSE\x02TAGS\x01é\x01x")),
        (RequestCode.SEND_MESSAGE_V2, v2_fields(i="\x02\x02a\x01\x02\x01b\x02ok\x01v")),
        (RequestCode.SEND_MESSAGE_V2, v2_fields(f="-3", h="-7", j="2", m="no")),
    ],
)
def test_a_plain_send_is_prepared_alike(
    processors: tuple[send.SendProcessor, send.SendProcessor], code: int, fields: dict[str, str]
) -> None:
    compiled, python, alone = prepare(processors, fields, code)
    assert compiled == python
    assert alone is not None, "a plain send is the preparation's"


@pytest.mark.parametrize(
    "fields",
    [
        v2_fields(m="true"),  # a batch
        v2_fields(m="1"),
        v2_fields(e="8"),  # over the limit: refused
        v2_fields(e=" 3"),  # lenient integers: Python's int()
        v2_fields(g="+1"),
        v2_fields(h="1_0"),
        v2_fields(d="x"),  # malformed: refused
        v2_fields(b=None),  # missing
        v2_fields(b="Unknown"),  # auto-created
        v2_fields(b="%RETRY%group"),
        v2_fields(i="DELAY\x013"),
        v2_fields(i="TRAN_MSG\x01true"),
        v2_fields(i="CLUSTER\x01mine"),
        v2_fields(i="TAGS\x01a\x02TAGS\x01b"),  # repeated: the dict keeps the last value
        v2_fields(i="TAGS\x01\ud800"),  # a lone surrogate
        v2_fields(j="x"),
        v2_fields(l="1.5"),
        v2_fields(e="-"),  # one character, not a digit
        v2_fields(e="\u0663"),  # a digit, but not an ASCII one
        v2_fields(f=" "),
    ],
)
def test_any_other_send_is_left_to_python(
    processors: tuple[send.SendProcessor, send.SendProcessor], fields: dict[str, str]
) -> None:
    compiled, python, alone = prepare(processors, fields, RequestCode.SEND_MESSAGE_V2)
    assert compiled == python
    assert alone is None


def test_a_send_without_a_queue_is_left_to_python(
    context: BrokerContext, layout: records.Implementation
) -> None:
    """The broker picks its queue, round robin from a random start per topic state."""
    context.topics.update(TopicConfig(TOPIC, read_queue_nums=8, write_queue_nums=8))
    processor, _ = processor_pair(context, layout)
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, v2_fields(e="-1"), b"b")
    first = processor._prepare(_Peer(), request, True)
    assert isinstance(first, records.PreparedSend)
    assert 0 <= first.queue_id < 8
    assert prepared_alone(processor, request, True) is None


@pytest.mark.parametrize(
    ("changed", "plain"),
    [
        (TopicConfig(TOPIC, read_queue_nums=8, write_queue_nums=8, perm=4), False),  # read only
        (TopicConfig(TOPIC, read_queue_nums=2, write_queue_nums=2), False),  # queue 3 over it
        (TopicConfig(TOPIC, 4, 4, topic_filter_type="MULTI_TAG"), True),
    ],
)
def test_a_changed_topic_is_decided_again_in_python_first(
    context: BrokerContext, layout: records.Implementation, changed: TopicConfig, plain: bool
) -> None:
    """The topic rules handed to the compiled preparation hold for the config they were
    made of: once the topic changes, the next send goes through the Python checks, which
    hand it the new rules (none for a topic that is not writable)."""
    context.topics.update(TopicConfig(TOPIC, read_queue_nums=8, write_queue_nums=8))
    processor, python = processor_pair(context, layout)
    peer = _Peer()

    def request() -> RemotingCommand:
        return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, v2_fields(), b"body")

    assert isinstance(processor._prepare(peer, request(), True), records.PreparedSend)
    assert prepared_alone(processor, request(), True) is not None
    context.topics.update(changed)
    assert prepared_alone(processor, request(), True) is None
    assert outcome(processor._prepare(peer, request(), True)) == outcome(
        python._prepare(peer, request(), True)
    )
    again = prepared_alone(processor, request(), True)
    assert (again is not None) is plain
    if again is not None:  # (prepared_alone's born host is 0.0.0.0:0)
        expected = python._prepare(peer, request(), True)
        assert isinstance(expected, records.PreparedSend)
        hostless = [m._replace(born_host=bytes(8)) for m in expected.messages]
        assert outcome(again) == outcome(expected._replace(messages=hostless))


_text = st.text(alphabet=st.sampled_from("ab\x01\x02WAITGSKEYUNQ_é1"), max_size=30)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)  # one topic for all
@given(properties=_text, queue=st.sampled_from(["0", "7", "-0", "007", "9", "1a"]))
def test_any_properties_are_prepared_alike(context: BrokerContext, layout: records.Implementation,
                                           properties: str, queue: str) -> None:  # fmt: skip
    context.topics.update(TopicConfig(TOPIC, read_queue_nums=8, write_queue_nums=8))
    compiled, python = processor_pair(context, layout)
    ext = v2_fields(i=properties, e=queue)
    results, _, _ = prepare((compiled, python), ext, RequestCode.SEND_MESSAGE_V2)
    assert results == prepare((python, compiled), ext, RequestCode.SEND_MESSAGE_V2)[0]


def test_a_mixed_run_is_prepared_alike(
    processors: tuple[send.SendProcessor, send.SendProcessor],
) -> None:
    """``prepare_run`` over plain and other sends gives what ``_prepare`` gives each."""
    compiled, python = processors
    prepare_run = compiled._prepare_run
    peer = _Peer()
    mixed = [
        v2_fields(), v2_fields(e="8"), v2_fields(m="true"), v2_fields(b="Auto"),
        v2_fields(i="DELAY\x012"), v2_fields(e="1"), v2_fields(b="Auto", e="0"),
    ]  # fmt: skip
    body = memoryview(b"payload")

    def requests() -> list[RemotingCommand]:
        return [RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, f, body) for f in mixed]

    replies: list[object] = []
    ready: list[tuple[int, records.PreparedSend]] = []
    messages: list[InnerMessage] = []
    prepare_run(requests(), lambda r, v2: compiled._check(peer, r, v2), compiled._plain_topics,
               compiled._topics.table, compiled._rules, compiled._born_host(peer.remote_address),
               replies, ready, messages)  # fmt: skip
    expected = [python._prepare(peer, r, True) for r in requests()]
    assert [i for i, _ in ready] == [
        i for i, e in enumerate(expected) if isinstance(e, records.PreparedSend)
    ]
    assert [outcome(one) for _, one in ready] == [
        outcome(e) for e in expected if isinstance(e, records.PreparedSend)
    ]
    assert [m for _, one in ready for m in one.messages] == messages
    refused = [outcome(r) for r in replies if r is not None]  # type: ignore[arg-type]
    assert refused == [outcome(e) for e in expected if not isinstance(e, records.PreparedSend)]
    assert len(ready) == 5  # refused: the queue over the limit, the batch that is not one


SCAN = frame.compiled_scan()


def scanned(ext: dict[str, str], body: bytes) -> tuple[RemotingCommand, RemotingCommand]:
    """A send as the compiled scan leaves it, and as the Python decoder decodes it."""
    assert SCAN is not None
    data = frame.encode_bytes(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body))
    (compiled,), _ = SCAN(memoryview(data), frame.MAX_FRAME_LENGTH, frame.decode_frame)
    return compiled, frame.decode_frame(memoryview(data)[4:])


def unmade(request: RemotingCommand) -> bool:
    """Whether ``request``'s ext_fields dict is still unmade (as the scan left it, unread)."""
    return request.header_values is not None


@pytest.mark.compiled
@pytest.mark.parametrize(
    "ext",
    [
        v2_fields(),
        v2_fields(e="7", i="TAGS\x01x\x02UNIQ_KEY\x01é"),
        v2_fields(i="WAIT\x01false"),
        v2_fields(m="true"),  # a batch: left to Python, which makes the dict
        v2_fields(b="Unknown"),  # not a known topic: the same
        {**v2_fields(), "n": "broker-a"},  # a 5.x client's brokerName: not read
    ],
)
def test_a_scanned_send_is_prepared_from_its_values_alike(
    processors: tuple[send.SendProcessor, send.SendProcessor], ext: dict[str, str]
) -> None:
    compiled, python = processors
    peer = _Peer()
    compiled._prepare(peer, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, v2_fields()),
                      True)  # fmt: skip  # the topic's state cached
    request, decoded = scanned(ext, b"hello")
    assert unmade(request)
    ready = prepared_alone(compiled, request, True)
    if ready is not None:
        assert unmade(request), "prepared from the values, no dict made"
    assert outcome(compiled._prepare(peer, request, True)) == outcome(
        python._prepare(peer, decoded, True)
    )
    assert request.ext_fields == decoded.ext_fields
    assert list(request.ext_fields) == list(decoded.ext_fields)


@pytest.mark.compiled
def test_only_one_letter_names_of_requests_are_left_unmade() -> None:
    request, decoded = scanned({**v2_fields(), "zz": "1"}, b"x")
    assert type(request) is RemotingCommand
    assert not unmade(request)
    assert request.ext_fields == decoded.ext_fields
    request, _ = scanned({"a": "1", "b": "2"}, b"x")
    assert type(request) is RemotingCommand
    assert unmade(request)
    assert SCAN is not None
    answer = RemotingCommand.response(0, ext_fields={"a": "1"})
    (command,), _ = SCAN(memoryview(frame.encode_bytes(answer)), frame.MAX_FRAME_LENGTH,
                         frame.decode_frame)  # fmt: skip
    assert type(command) is RemotingCommand
    assert not unmade(command), "a response's extFields are a dict at once"
    assert command.ext_fields == {"a": "1"}
