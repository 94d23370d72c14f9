"""The compiled store records (``_records.pyx``) are the Python ``records`` module.

Appends: both write the same bytes, results and queue offsets afterwards for IPv4 and IPv6
hosts, every transaction part, memoryview and bytearray bodies, empty properties and
signed fields, and size runs alike. Dispatch: two stores get the same appends, one through
each module; afterwards every consume queue and index file holds the same bytes, and the
arrival listeners heard the same calls (hinted and unhinted messages, transaction parts,
delayed messages, keys with runs of spaces and empty keys). Hypothesis draws the rest.
Without a compiled build (``ROCKETKUBE_NO_EXTENSIONS``, no compiler) the comparisons are
skipped, and ``test_the_build_compiled_it`` says why.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketkube.broker.store import (
    AppendResult,
    DispatchHints,
    InnerMessage,
    MessageStore,
    StoreConfig,
    records,
)
from rocketkube.broker.store.commitlog import CommitLog
from rocketkube.broker.store.dispatch import SCHEDULE_TOPIC
from rocketkube.broker.store.settings import StorePaths
from rocketkube.common import compiled
from rocketkube.common.message import ids, record
from rocketkube.common.message.properties import decode_properties, encode_properties

V4 = bytes([127, 0, 0, 1, 0, 0, 0x27, 0x1B])
V6 = bytes(range(16)) + b"\x00\x00\x30\x39"
HOST = ids.pack_host("10.0.0.9", 40000)
COMPILED = records.compiled_module()
PYTHON: records.Implementation = records
needs_compiled = pytest.mark.skipif(COMPILED is None, reason="compiled modules not built")
pytestmark = pytest.mark.compiled


Outcome = tuple[bytes, int, list[AppendResult], list[tuple[tuple[str, int], int]]]
"""The buffer written, the end position, the results and the queue offsets after (in the
dict's order: the compiled loop keeps a topic's offsets aside during a run)."""


def run(
    module: records.Implementation,
    messages: list[InnerMessage],
    host: bytes = V4,
    offsets: dict[tuple[str, int], int] | None = None,
) -> Outcome:
    buf = bytearray(1 << 16)
    queue_offsets = dict(offsets or {})
    topics = {m.topic: m.topic.encode() for m in messages}
    end, appended = module.encode_records(
        messages, buf, 24, 1 << 30, topics=topics, queue_offsets=queue_offsets,
        store_host=host, now=1_700_000_000_123,
    )  # fmt: skip
    return bytes(buf), end, appended, list(queue_offsets.items())


def both(
    messages: list[InnerMessage],
    host: bytes = V4,
    offsets: dict[tuple[str, int], int] | None = None,
) -> tuple[Outcome, Outcome]:
    """The compiled module's outcome and the Python module's."""
    assert COMPILED is not None
    return run(COMPILED, messages, host, offsets), run(PYTHON, messages, host, offsets)


def test_the_build_compiled_it() -> None:
    """`make install` builds the compiled modules where Cython and a C compiler are (CI)."""
    if not compiled.enabled():
        pytest.skip("ROCKETKUBE_NO_EXTENSIONS is set")
    assert COMPILED is not None, "the build hook did not compile _records.pyx"
    assert records.implementation() is COMPILED


@needs_compiled
def test_the_records_and_results_are_the_pythons() -> None:
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
    from_compiled, from_python = both(messages, offsets={("TopicA", 0): 41})
    assert from_compiled == from_python
    _, end, appended, offsets = from_python
    assert [a.queue_offset for a in appended] == [41, 42, 0, 0, 0, 0, 43]
    assert offsets == [(("TopicA", 0), 44), (("TopicB", 5), 1), (("Half", 0), 1)]
    assert end == 24 + sum(a.size for a in appended)


@needs_compiled
def test_an_ipv6_store_host_sets_the_bit_in_both() -> None:
    from_compiled, from_python = both([InnerMessage("T", 1, b"b", b"")], host=V6)
    assert from_compiled == from_python
    assert record.decode(from_python[0][24:]).store_host.startswith("[")


@needs_compiled
def test_an_out_of_range_field_is_refused_like_struct() -> None:
    assert COMPILED is not None
    for module in (COMPILED, PYTHON):
        with pytest.raises((struct.error, OverflowError)):
            run(module, [InnerMessage("T", 0, b"b", b"", flag=1 << 31)])


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
    from_compiled, from_python = both(messages, offsets=offsets)
    assert from_compiled == from_python


def test_the_environment_turns_the_compiled_module_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert compiled.enabled({})
    assert compiled.enabled({"ROCKETKUBE_NO_EXTENSIONS": "0"})
    assert not compiled.enabled({"ROCKETKUBE_NO_EXTENSIONS": "1"})
    monkeypatch.setenv("ROCKETKUBE_NO_EXTENSIONS", "1")
    assert records.compiled_module() is None
    assert records.implementation() is PYTHON


@pytest.mark.parametrize("use_compiled", [True, False], ids=["compiled", "python"])
def test_records_are_sized_as_validate_sizes_them(
    config: StoreConfig, tmp_path: Path, use_compiled: bool
) -> None:
    module = COMPILED if use_compiled else PYTHON
    if module is None:
        pytest.skip("compiled modules not built")
    log = CommitLog(StorePaths(tmp_path), config, V4)
    messages = [
        InnerMessage("A", 0, b"x" * 10, b"p", born_host=V4),
        InnerMessage("Bb", 1, memoryview(b"y" * 300), b"", born_host=V6),
    ]
    total, error = log._validate(messages)  # caches the topics
    assert (total, error) == (sum(record.record_size(len(m.body), len(m.topic),
                                                     len(m.properties), len(m.born_host))
                                  for m in messages), "")  # fmt: skip
    size = module.records_size
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
        wide = [messages[0]._replace(**{field: value})]  # type: ignore[arg-type]
        assert size(wide, log._topics, log._fixed_size, log.max_body_size) == -1
        assert log._validate(wide) == (-1, f"{field} {value} is not a {bits}-bit integer")


def message(topic: str = "TopicA", queue_id: int = 0, sys_flag: int = 0, hinted: bool = True,
            **props: str) -> InnerMessage:  # fmt: skip
    stored = encode_properties(dict(props)).encode()
    decoded = decode_properties(stored)
    hints = DispatchHints(decoded.get("TAGS"), decoded.get("KEYS"), decoded.get("UNIQ_KEY"))
    return InnerMessage(topic, queue_id, b"body", stored, sys_flag=sys_flag, born_host=HOST,
                        hints=hints if hinted else None)  # fmt: skip


class Pair:
    """Two stores fed alike: ``compiled`` dispatches through the compiled module."""

    def __init__(self, config: StoreConfig, root: Path) -> None:
        self.stores: list[MessageStore] = []
        self.heard: list[list[tuple[str, int, int, list[int]]]] = []
        assert COMPILED is not None
        for name, module in (("compiled", COMPILED), ("python", PYTHON)):
            store = MessageStore(
                dataclasses.replace(config, store_path_root_dir=root / name),
                clock=lambda: 1_700_000_000_000, disk_usage=lambda _path: 0.1,
            )  # fmt: skip
            store.open()
            store._log._records = module
            store._dispatcher._records = module
            index = store._dispatcher._index
            assert index is not None
            index._records = module
            heard: list[tuple[str, int, int, list[int]]] = []
            store.add_arrival_listener(lambda *call, heard=heard: heard.append(call))
            self.stores.append(store)
            self.heard.append(heard)
        self.root = root

    def put(self, messages: list[InnerMessage]) -> None:
        for store in self.stores:
            assert store.put_messages(messages).ok

    def files(self, name: str) -> dict[str, bytes]:
        base = self.root / name
        return {
            str(path.relative_to(base)): path.read_bytes()
            for folder in ("consumequeue", "index")
            for path in sorted((base / folder).rglob("*"))
            if path.is_file()
        }

    def check(self) -> None:
        for store in self.stores:
            store._dispatcher.finish_replay()  # publish the index headers
        assert self.files("compiled") == self.files("python")
        assert self.heard[0] == self.heard[1]

    def close(self) -> None:
        for store in self.stores:
            store.close()


@pytest.fixture
def pair(config: StoreConfig, tmp_path: Path) -> Iterator[Pair]:
    made = Pair(config, tmp_path / "pair")
    yield made
    made.close()


@needs_compiled
def test_the_queues_and_the_index_are_the_pythons(pair: Pair) -> None:
    run = [
        message(TAGS="TagA", KEYS="k1  k2 ", UNIQ_KEY="U1"),
        message(queue_id=1, TAGS="TagB"),
        message(KEYS=" ", UNIQ_KEY=""),
        message(hinted=False, TAGS="TagC", KEYS="k3", UNIQ_KEY="U3"),
        message(topic="Half", sys_flag=0x4, UNIQ_KEY="P"),  # prepared: index only
        message(topic="Half", sys_flag=0xC, UNIQ_KEY="R"),  # rollback: neither
        message(topic="TopicB", sys_flag=0x8, TAGS="TagA", UNIQ_KEY="C"),  # commit
        message(topic=SCHEDULE_TOPIC, queue_id=2, DELAY="3", TAGS="TagA", UNIQ_KEY="D"),
        message(topic="TopicA", KEYS="é ü", TAGS="é"),
    ]
    pair.put(run)
    pair.put(run)  # again, the caches warm
    pair.put(list(reversed(run)))
    pair.check()
    assert len(pair.files("python")) == 5, "four consume queues and an index file"


_dispatched = st.builds(
    message,
    topic=st.sampled_from(["A", "B", SCHEDULE_TOPIC]),
    queue_id=st.sampled_from([0, 1, 2, 64]),  # 64: past the queues kept aside
    sys_flag=st.sampled_from([0, 0, 0x4, 0x8, 0xC]),
    hinted=st.booleans(),
    TAGS=st.sampled_from(["x", "TagA", "é"]),
    KEYS=st.sampled_from(["k", "k1 k2", "  a  b ", "z"]),
    UNIQ_KEY=st.sampled_from(["U", "V", "W"]),
    DELAY=st.sampled_from(["0", "1", "18", "x"]),
)


@needs_compiled
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.lists(_dispatched, min_size=1, max_size=6), min_size=1, max_size=4))
def test_any_runs_are_dispatched_alike(
    config: StoreConfig, tmp_path_factory: pytest.TempPathFactory, runs: list[list[InnerMessage]]
) -> None:
    pair = Pair(config, tmp_path_factory.mktemp("pair"))
    try:
        for run in runs:
            pair.put(run)
        pair.check()
    finally:
        pair.close()


@needs_compiled
def test_consume_queue_files_roll_alike(pair: Pair) -> None:
    """250 entries in one queue cross two 100-entry consume queue files."""
    for first in range(0, 250, 32):
        pair.put([message(TAGS=f"T{n % 3}", UNIQ_KEY=f"U{n}") for n in range(first, first + 32)])
    pair.check()
    files = [name for name in pair.files("python") if name.startswith("consumequeue")]
    assert len(files) == 3


@needs_compiled
def test_index_files_roll_and_slots_collide_alike(pair: Pair) -> None:
    """600 keys: index files of 256 entries roll twice; 64 hash slots collide often."""
    for first in range(0, 300, 25):
        pair.put([message(KEYS=f"k{n} x{n % 7}") for n in range(first, first + 25)])
    pair.check()
    index_files = [name for name in pair.files("python") if name.startswith("index")]
    assert len(index_files) == 3


def unready_alike(store: MessageStore, run: list[InnerMessage]) -> list[tuple[str, int]]:
    """What the store's dispatcher finds unready, the queue keys the same in both."""
    assert COMPILED is not None
    assert COMPILED.queue_keys(run) == PYTHON.queue_keys(run)
    return store._dispatcher.unready(run, store._log.queue_offsets)


@needs_compiled
def test_the_queues_a_run_needs_ready_are_the_python_ones(
    config: StoreConfig, tmp_path: Path
) -> None:
    store = MessageStore(dataclasses.replace(config, store_path_root_dir=tmp_path / "s"))
    store.open()
    try:
        run = [message(queue_id=n % 3) for n in range(9)] + [message(topic="B", queue_id=70)]
        assert unready_alike(store, run) == [("TopicA", 0), ("TopicA", 1), ("TopicA", 2),
                                             ("B", 70)]  # fmt: skip
        assert store.put_messages(run).ok
        assert unready_alike(store, run) == []  # started, with room
        assert unready_alike(store, [message(topic="Half", sys_flag=0x4)]) == []  # no entry
        many = [message(queue_id=1)] * 200  # more than the 100-entry file has room for
        assert unready_alike(store, many) == [("TopicA", 1)]
        odd = [message(queue_id=2**70), message(queue_id=-1), message(sys_flag=2**80 | 0x4),
               message(topic="C", sys_flag=2**80), message(topic="D", sys_flag=-4)]  # fmt: skip
        assert unready_alike(store, odd) == [("TopicA", 2**70), ("TopicA", -1), ("C", 0)]
    finally:
        store.close()


@needs_compiled
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.lists(_dispatched, min_size=1, max_size=40), min_size=1, max_size=6))
def test_any_runs_need_the_same_queues_ready(
    config: StoreConfig, tmp_path_factory: pytest.TempPathFactory, runs: list[list[InnerMessage]]
) -> None:
    root = tmp_path_factory.mktemp("unready")
    store = MessageStore(dataclasses.replace(config, store_path_root_dir=root))
    store.open()
    try:
        for run in runs:
            unready_alike(store, run)
            assert store.put_messages(run).ok
    finally:
        store.close()
