"""Fixtures for the store tests: small segment sizes, a fake clock, message builders."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from rocketkube.broker.store import InnerMessage, MessageStore, StoreConfig
from rocketkube.common.message import ids, properties

T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z


class FakeClock:
    """Epoch milliseconds that only move when told to."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


class MakeMessage(Protocol):
    def __call__(
        self,
        body: bytes = ...,
        *,
        topic: str = ...,
        queue_id: int = ...,
        tags: str | None = ...,
        keys: str | None = ...,
        uniq: str | None = ...,
        sys_flag: int = ...,
        extra: dict[str, str] | None = ...,
    ) -> InnerMessage: ...


def make_message(
    body: bytes = b"hello",
    *,
    topic: str = "TopicA",
    queue_id: int = 0,
    tags: str | None = None,
    keys: str | None = None,
    uniq: str | None = None,
    sys_flag: int = 0,
    extra: dict[str, str] | None = None,
) -> InnerMessage:
    props: dict[str, str | None] = {"TAGS": tags, "KEYS": keys, "UNIQ_KEY": uniq}
    props.update(extra or {})
    return InnerMessage(
        topic=topic,
        queue_id=queue_id,
        body=body,
        properties=properties.encode_properties(props).encode(),
        sys_flag=sys_flag,
        born_timestamp=T0 - 5,
        born_host=ids.pack_host("10.0.0.9", 40000),
    )


@pytest.fixture
def msg() -> MakeMessage:
    return make_message


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def config(tmp_path: Path) -> StoreConfig:
    return StoreConfig(
        store_path_root_dir=tmp_path / "store",
        store_host="10.0.0.1:10911",
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=100 * 20,
        max_hash_slot_num=64,
        max_index_num=256,
        flush_interval_commit_log=20,
        flush_interval_consume_queue=20,
        flush_interval_index=20,
        clean_resource_interval=60_000,
        delete_when="99",
        max_message_size=16 * 1024,
    )


OpenStore = Callable[..., MessageStore]


@pytest.fixture
def open_store(config: StoreConfig, clock: FakeClock) -> Iterator[OpenStore]:
    """Opens stores (``open()``, no event loop tasks) and closes the survivors after."""
    opened: list[MessageStore] = []

    def make(cfg: StoreConfig | None = None, **kwargs: Any) -> MessageStore:
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("disk_usage", lambda _path: 0.10)
        store = MessageStore(cfg or config, **kwargs)
        store.open()
        opened.append(store)
        return store

    yield make
    for store in opened:
        if store._open and not store._started:
            store.close()
        elif store._open:
            store.close_abruptly()


def replace(config: StoreConfig, **changes: Any) -> StoreConfig:
    return dataclasses.replace(config, **changes)
