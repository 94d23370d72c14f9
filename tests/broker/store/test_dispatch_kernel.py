"""The compiled dispatch loop (``_dispatch.pyx``) and index append (``_index.pyx``) feed
the consume queues and the index as ``Dispatcher.dispatch_run`` and ``IndexFile.put_many``
do, and the compiled ``unready`` names the queues ``Dispatcher.unready`` names.

Two stores get the same appends, one dispatching through the kernels, one through the
Python loops: afterwards every consume queue and index file holds the same bytes, and the
arrival listeners heard the same calls. Hinted and unhinted messages, transaction parts,
delayed messages (the schedule topic's tags code), keys with runs of spaces and empty
keys are covered; hypothesis draws runs of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketkube.broker.store import DispatchHints, InnerMessage, MessageStore, StoreConfig
from rocketkube.broker.store.dispatch import (
    SCHEDULE_TOPIC,
    Dispatcher,
    compiled_dispatch_run,
    compiled_unready,
)
from rocketkube.broker.store.index import IndexFile, compiled_put_many
from rocketkube.common.message import ids
from rocketkube.common.message.properties import decode_properties, encode_properties

COMPILED = compiled_dispatch_run()
PUT_MANY = compiled_put_many()
UNREADY = compiled_unready()
pytestmark = pytest.mark.skipif(
    COMPILED is None or PUT_MANY is None or UNREADY is None, reason="accelerators not built"
)
HOST = ids.pack_host("10.0.0.9", 40000)


def message(topic: str = "TopicA", queue_id: int = 0, sys_flag: int = 0, hinted: bool = True,
            **props: str) -> InnerMessage:  # fmt: skip
    stored = encode_properties(dict(props)).encode()
    decoded = decode_properties(stored)
    hints = DispatchHints(decoded.get("TAGS"), decoded.get("KEYS"), decoded.get("UNIQ_KEY"))
    return InnerMessage(topic, queue_id, b"body", stored, sys_flag=sys_flag, born_host=HOST,
                        hints=hints if hinted else None)  # fmt: skip


class Pair:
    """Two stores fed alike: ``compiled`` dispatches through the kernel."""

    def __init__(self, config: StoreConfig, root: Path) -> None:
        self.stores: list[MessageStore] = []
        self.heard: list[list[tuple[str, int, int, list[int]]]] = []
        python = ("python", Dispatcher.dispatch_run, IndexFile.put_many)
        for name, run, put_many in (("compiled", COMPILED, PUT_MANY), python):
            store = MessageStore(
                dataclasses.replace(config, store_path_root_dir=root / name),
                clock=lambda: 1_700_000_000_000, disk_usage=lambda _path: 0.1,
            )  # fmt: skip
            store.open()
            store._dispatcher._dispatch_run = run  # type: ignore[assignment]
            index = store._dispatcher._index
            assert index is not None
            index._put_many = put_many  # type: ignore[assignment]
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


def test_the_queues_and_the_index_are_the_python_loops(pair: Pair) -> None:
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


_messages = st.builds(
    message,
    topic=st.sampled_from(["A", "B", SCHEDULE_TOPIC]),
    queue_id=st.sampled_from([0, 1, 2, 64]),  # 64: past the queues the kernel keeps aside
    sys_flag=st.sampled_from([0, 0, 0x4, 0x8, 0xC]),
    hinted=st.booleans(),
    TAGS=st.sampled_from(["x", "TagA", "é"]),
    KEYS=st.sampled_from(["k", "k1 k2", "  a  b ", "z"]),
    UNIQ_KEY=st.sampled_from(["U", "V", "W"]),
    DELAY=st.sampled_from(["0", "1", "18", "x"]),
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.lists(_messages, min_size=1, max_size=6), min_size=1, max_size=4))
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


def test_consume_queue_files_roll_alike(pair: Pair) -> None:
    """250 entries in one queue cross two 100-entry consume queue files."""
    for first in range(0, 250, 32):
        pair.put([message(TAGS=f"T{n % 3}", UNIQ_KEY=f"U{n}") for n in range(first, first + 32)])
    pair.check()
    files = [name for name in pair.files("python") if name.startswith("consumequeue")]
    assert len(files) == 3


def test_index_files_roll_and_slots_collide_alike(pair: Pair) -> None:
    """600 keys: index files of 256 entries roll twice; 64 hash slots collide often."""
    for first in range(0, 300, 25):
        pair.put([message(KEYS=f"k{n} x{n % 7}") for n in range(first, first + 25)])
    pair.check()
    index_files = [name for name in pair.files("python") if name.startswith("index")]
    assert len(index_files) == 3


def unready_alike(store: MessageStore, run: list[InnerMessage]) -> list[tuple[str, int]]:
    assert UNREADY is not None
    args = (run, store._queues.queues, store._log.queue_offsets)
    found = UNREADY(*args)
    assert found == Dispatcher.unready(*args)
    return found


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


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.lists(_messages, min_size=1, max_size=40), min_size=1, max_size=6))
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
