"""The disk guard's ratio rule, with an injected disk use: a writer is refused once the disk
passes ``diskSpaceWarningLevelRatio`` without waiting for a retention round, the state is
logged once on the way in and once on the way out, and passing ``diskMaxUsedSpaceRatio``
runs retention early."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

import pytest
from waiting import wait_until

from rocketkube.broker.store import InnerMessage, MessageStore, PutStatus, StoreConfig
from rocketkube.broker.store.disk_guard import CHECK_BYTES, CHECK_MS

MakeMessage = Callable[..., InnerMessage]
OpenStore = Callable[..., MessageStore]
HOUR = 3_600_000
BODY = b"b" * 15_000


class Disk:
    def __init__(self, ratio: float = 0.10) -> None:
        self.ratio = ratio
        self.measured = 0

    def __call__(self, _path: object) -> float:
        self.measured += 1
        return self.ratio


def test_a_fast_writer_is_refused_once_it_appended_enough_to_measure(
    open_store: OpenStore, msg: MakeMessage
) -> None:
    """The clock stands still: the bytes appended alone bring the next measurement."""
    disk = Disk()
    store = open_store(disk_usage=disk)
    assert store.put_message(msg(BODY)).ok
    measured = disk.measured
    disk.ratio = 0.93  # another writer filled the disk meanwhile
    taken = 0
    while store.put_message(msg(BODY)).ok:
        taken += 1
        assert taken * len(BODY) <= CHECK_BYTES + len(BODY)
    assert disk.measured == measured + 1  # once per CHECK_BYTES, not per append
    assert "diskSpaceWarningLevelRatio is 90%" in (store.write_refusal or "")


def test_the_disk_is_measured_again_after_check_ms(
    open_store: OpenStore, msg: MakeMessage, clock: object
) -> None:
    disk = Disk()
    store = open_store(disk_usage=disk)
    assert store.put_message(msg()).ok
    disk.ratio = 0.95
    assert store.put_message(msg()).ok  # not measured yet: a few bytes, no time
    clock.advance(CHECK_MS)  # type: ignore[attr-defined]
    refused = store.put_message(msg())
    assert refused.status is PutStatus.SERVICE_NOT_AVAILABLE
    assert "disk full: 95.0% used" in refused.error


def test_entering_and_leaving_the_full_state_is_logged_once_each(
    open_store: OpenStore, msg: MakeMessage, clock: object, caplog: pytest.LogCaptureFixture
) -> None:
    disk = Disk(0.95)
    store = open_store(disk_usage=disk)
    caplog.set_level(logging.WARNING, "rocketkube.broker.store")
    for _ in range(5):
        clock.advance(CHECK_MS)  # type: ignore[attr-defined]
        assert store.put_message(msg()).status is PutStatus.SERVICE_NOT_AVAILABLE
    disk.ratio = 0.50
    clock.advance(CHECK_MS)  # type: ignore[attr-defined]
    for _ in range(5):
        assert store.put_message(msg()).ok
    texts = [r.getMessage() for r in caplog.records]
    assert sum("store writes refused" in t for t in texts) <= 1  # open() may have logged it
    assert sum("store writes accepted again" in t for t in texts) == 1


async def test_passing_disk_max_used_space_ratio_runs_retention_at_once(
    config: StoreConfig, msg: MakeMessage, clock: object
) -> None:
    """The retention timer is a minute away; an append that finds the disk above 75 %
    has the expired segments deleted now."""
    disk = Disk()
    cfg = dataclasses.replace(config, file_reserved_time=1, clean_resource_interval=60_000)
    store = MessageStore(cfg, clock=clock, disk_usage=disk)  # type: ignore[arg-type]
    await store.start()
    try:
        for i in range(14):  # two full 64 KiB segments and a third begun
            assert store.put_message(msg(b"%02d" % i + BODY)).ok
        clock.advance(2 * HOUR)  # type: ignore[attr-defined]
        disk.ratio = 0.80
        assert store.put_message(msg(b"late")).ok
        await wait_until(lambda: store.commit_log_min_offset > 0, "expired segments deleted")
    finally:
        await store.shutdown()
