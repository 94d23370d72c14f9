"""The compiled append loop (``_append.pyx``) writes what the Python loop writes.

Both are run on the same messages into their own buffers: the same bytes, the same
results, the same queue offsets afterwards, for IPv4 and IPv6 hosts, every transaction
part, memoryview and bytearray bodies, empty properties and signed fields. Hypothesis
draws the rest. Without a compiled build (``ROCKETKUBE_NO_EXTENSIONS``, no compiler) the
comparison is skipped, and ``test_the_build_compiled_it`` says why.
"""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketkube.broker.store import AppendResult, InnerMessage, StoreConfig
from rocketkube.broker.store.commitlog import CommitLog, EncodeRun, compiled_encode_run
from rocketkube.broker.store.settings import StorePaths
from rocketkube.common import accelerators
from rocketkube.common.message import record

V4 = bytes([127, 0, 0, 1, 0, 0, 0x27, 0x1B])
V6 = bytes(range(16)) + b"\x00\x00\x30\x39"
COMPILED = compiled_encode_run()
needs_compiled = pytest.mark.skipif(COMPILED is None, reason="accelerators not built")


Outcome = tuple[bytes, int, list[AppendResult], list[tuple[tuple[str, int], int]]]
"""The buffer written, the end position, the results and the queue offsets after (in the
dict's order: the compiled loop keeps a topic's offsets aside during a run)."""


def run(
    encode: EncodeRun,
    messages: list[InnerMessage],
    host: bytes = V4,
    offsets: dict[tuple[str, int], int] | None = None,
) -> Outcome:
    buf = bytearray(1 << 16)
    queue_offsets = dict(offsets or {})
    topics = {m.topic: m.topic.encode() for m in messages}
    end, appended = encode(buf, 24, 1 << 30, messages, topics, queue_offsets, host,
                           host.hex().upper(), 1_700_000_000_123, AppendResult)  # fmt: skip
    return bytes(buf), end, appended, list(queue_offsets.items())


def both(
    messages: list[InnerMessage],
    host: bytes = V4,
    offsets: dict[tuple[str, int], int] | None = None,
) -> tuple[Outcome, Outcome]:
    """The compiled loop's outcome and the Python loop's."""
    assert COMPILED is not None
    return (
        run(COMPILED, messages, host, offsets),
        run(CommitLog.encode_run, messages, host, offsets),
    )


def test_the_build_compiled_it() -> None:
    """`make install` builds the accelerators where Cython and a C compiler are (CI)."""
    if not accelerators.wanted():
        pytest.skip("ROCKETKUBE_NO_EXTENSIONS is set")
    assert COMPILED is not None, "the build hook did not compile _append.pyx"


@needs_compiled
def test_the_records_and_results_are_the_python_loops() -> None:
    messages = [
        InnerMessage(
            "TopicA",
            0,
            b"hello",
            b"TAGS\x01a\x02KEYS\x01k1 k2",
            flag=-7,
            sys_flag=0,
            born_timestamp=1_700_000_000_000,
            born_host=V4,
        ),
        InnerMessage("TopicA", 0, memoryview(b"second body"), b"", reconsume_times=3),
        InnerMessage("TopicB", 5, bytearray(b"x" * 300), b"UNIQ_KEY\x01U", born_host=V6),
        InnerMessage("Half", 0, b"prepared", b"", sys_flag=0x4),  # PREPARED: offset 0
        InnerMessage("Half", 0, b"rollback", b"", sys_flag=0xC),
        InnerMessage("Half", 0, b"commit", b"", sys_flag=0x8, prepared_transaction_offset=99),
        InnerMessage("TopicA", 0, b"", b"", sys_flag=0x30),  # stale v6 bits are cleared
    ]
    compiled, python = both(messages, offsets={("TopicA", 0): 41})
    assert compiled == python
    _, end, appended, offsets = python
    assert [a.queue_offset for a in appended] == [41, 42, 0, 0, 0, 0, 43]
    assert offsets == [(("TopicA", 0), 44), (("TopicB", 5), 1), (("Half", 0), 1)]
    assert end == 24 + sum(a.size for a in appended)


@needs_compiled
def test_an_ipv6_store_host_sets_the_bit_in_both() -> None:
    compiled, python = both([InnerMessage("T", 1, b"b", b"")], host=V6)
    assert compiled == python
    assert record.decode(python[0][24:]).store_host.startswith("[")


@needs_compiled
def test_an_out_of_range_field_is_refused_like_struct() -> None:
    assert COMPILED is not None
    encoders: tuple[EncodeRun, EncodeRun] = (COMPILED, CommitLog.encode_run)
    for encode in encoders:
        with pytest.raises((struct.error, OverflowError)):
            run(encode, [InnerMessage("T", 0, b"b", b"", flag=1 << 31)])


_messages = st.lists(
    st.builds(
        InnerMessage,
        topic=st.sampled_from(["A", "Bb", "TopicC"]),
        queue_id=st.sampled_from([0, 1, 2, 7, 63, 64, 200]),  # 64 on: not kept aside
        body=st.binary(max_size=200),
        properties=st.binary(max_size=60),
        flag=st.integers(-(1 << 31), (1 << 31) - 1),
        sys_flag=st.integers(0, 0xFF),
        born_timestamp=st.integers(0, 1 << 62),
        born_host=st.sampled_from([V4, V6]),
        reconsume_times=st.integers(0, 1000),
        prepared_transaction_offset=st.integers(-1, 1 << 40),
    ),
    max_size=12,
)


_offsets = st.dictionaries(
    st.tuples(st.sampled_from(["A", "Bb", "TopicC"]), st.sampled_from([0, 1, 64])),
    st.integers(0, 1 << 40),
    max_size=4,
)


@needs_compiled
@settings(max_examples=60, deadline=None)
@given(_messages, _offsets)
def test_any_run_is_encoded_alike(
    messages: list[InnerMessage], offsets: dict[tuple[str, int], int]
) -> None:
    compiled, python = both(messages, offsets=offsets)
    assert compiled == python


def test_the_environment_turns_the_accelerators_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert accelerators.wanted({})
    assert accelerators.wanted({"ROCKETKUBE_NO_EXTENSIONS": "0"})
    assert not accelerators.wanted({"ROCKETKUBE_NO_EXTENSIONS": "1"})
    monkeypatch.setenv("ROCKETKUBE_NO_EXTENSIONS", "1")
    assert compiled_encode_run() is None


@needs_compiled
def test_records_are_sized_as_validate_sizes_them(config: StoreConfig, tmp_path: Path) -> None:
    from rocketkube.broker.store import _append

    log = CommitLog(StorePaths(tmp_path), config, V4)
    messages = [
        InnerMessage("A", 0, b"x" * 10, b"p", born_host=V4),
        InnerMessage("Bb", 1, memoryview(b"y" * 300), b"", born_host=V6),
    ]
    total, error = log._validate(messages)  # caches the topics
    assert (total, error) == (sum(record.record_size(len(m.body), len(m.topic),
                                                     len(m.properties), len(m.born_host))
                                  for m in messages), "")  # fmt: skip
    size = _append.records_size
    assert size(messages, log._topics, log._fixed_size, log.max_body_size) == total
    unknown = [*messages, InnerMessage("New", 0, b"z")]
    assert size(unknown, log._topics, log._fixed_size, log.max_body_size) == -1
    big = [InnerMessage("A", 0, b"x" * (log.max_body_size + 1))]
    assert size(big, log._topics, log._fixed_size, log.max_body_size) == -1
    props = [InnerMessage("A", 0, b"x", b"p" * 32768)]
    assert size(props, log._topics, log._fixed_size, log.max_body_size) == -1
    assert log._validate(props)[0] == -2  # the loop decides, as before
    for field, value, bits in [("flag", 1 << 31, 32), ("queue_id", -(1 << 31) - 1, 32),
                               ("born_timestamp", 1 << 63, 64),
                               ("reconsume_times", 1 << 31, 32)]:  # fmt: skip
        wide = [dataclasses.replace(messages[0], **{field: value})]  # type: ignore[arg-type]
        assert size(wide, log._topics, log._fixed_size, log.max_body_size) == -1
        assert log._validate(wide) == (-1, f"{field} {value} is not a {bits}-bit integer")
