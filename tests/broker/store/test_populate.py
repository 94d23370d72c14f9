"""Populating commit log pages ahead of the writer in a worker thread."""

from __future__ import annotations

import errno
import mmap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rocketkube.broker.store import InnerMessage, MessageStore, PutStatus, StoreConfig
from rocketkube.broker.store.mapped_file import MappedFile
from rocketkube.broker.store.populate import AheadPopulator

MakeMessage = Callable[..., InnerMessage]
OpenStore = Callable[..., MessageStore]
PAGE = mmap.PAGESIZE
SIZE = 64 * PAGE


@pytest.fixture
def mapped(tmp_path: Path) -> Iterator[MappedFile]:
    file = MappedFile(tmp_path / "00000000000000000000", 0, SIZE)
    yield file
    file.close()


class Calls:
    """Wraps ``MappedFile.populate``: records (thread, end) of each call, and can fail
    the calls made in the worker thread."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, fail_in_worker: bool = False):
        self.calls: list[tuple[bool, int]] = []
        real = MappedFile.populate
        main = threading.get_ident()

        def populate(file: MappedFile, end: int) -> None:
            in_worker = threading.get_ident() != main
            self.calls.append((in_worker, end))
            if in_worker and fail_in_worker:
                raise OSError(errno.ENOSPC, "No space left on device")
            real(file, end)

        monkeypatch.setattr(MappedFile, "populate", populate)

    def worker_calls(self) -> int:
        return sum(in_worker for in_worker, _ in self.calls)

    def inline_calls(self) -> int:
        return len(self.calls) - self.worker_calls()


def test_the_writer_populates_its_own_pages_and_the_worker_the_ones_ahead(
    mapped: MappedFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = Calls(monkeypatch)
    ahead = AheadPopulator(ahead=8 * PAGE, low_water=4 * PAGE)
    ahead.ensure(mapped, 100)
    assert mapped.populated >= PAGE  # before returning: the writer's own pages
    assert ahead.busy
    ahead.settle()
    assert mapped.populated == PAGE + 8 * PAGE
    assert calls.calls == [(False, 100), (True, 9 * PAGE)]
    ahead.close()


def test_a_writer_through_a_whole_file_mostly_leaves_it_to_the_worker(
    mapped: MappedFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = Calls(monkeypatch)
    ahead = AheadPopulator(ahead=8 * PAGE, low_water=4 * PAGE)
    step = 1000
    for pos in range(0, SIZE - step, step):
        ahead.ensure(mapped, pos + step)
        assert mapped.populated >= pos + step
        mapped.mm[pos : pos + step] = b"x" * step
        mapped.wrote = pos + step
    ahead.close()
    assert mapped.populated == SIZE  # never past the file's end
    assert calls.worker_calls() >= 1
    # In line only when the worker had not been started (the first page) or had not yet
    # got as far as the writer: always fewer calls than the worker's.
    assert calls.inline_calls() <= calls.worker_calls() + 1


def test_the_file_being_populated_is_not_closed_under_the_worker(mapped: MappedFile) -> None:
    ahead = AheadPopulator(ahead=8 * PAGE, low_water=4 * PAGE)
    ahead.ensure(mapped, 100)
    assert ahead.busy
    mapped.close()
    assert not mapped.closed  # pinned until the writer collects the run
    ahead.settle()
    assert mapped.closed
    assert not ahead.busy
    ahead.close()


def test_a_new_file_waits_for_the_run_on_the_old_one(
    tmp_path: Path, mapped: MappedFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = Calls(monkeypatch)
    ahead = AheadPopulator(ahead=8 * PAGE, low_water=4 * PAGE)
    ahead.ensure(mapped, 100)
    following = MappedFile(tmp_path / f"{SIZE:020d}", SIZE, SIZE)
    try:
        ahead.ensure(following, 100)
        assert mapped.populated == 9 * PAGE  # the old run was collected first
        assert following.populated >= PAGE
        ahead.close()
    finally:
        following.close()
    assert [in_worker for in_worker, _ in calls.calls] == [False, True, False, True]


def test_errors_in_the_worker_are_left_to_the_writer(
    mapped: MappedFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    Calls(monkeypatch, fail_in_worker=True)
    ahead = AheadPopulator(ahead=8 * PAGE, low_water=4 * PAGE)
    ahead.ensure(mapped, 100)
    ahead.settle()  # the worker's ENOSPC is not raised here...
    assert mapped.populated == PAGE
    ahead.ensure(mapped, 2 * PAGE)  # ...the writer's own call succeeds (not failing here)
    assert mapped.populated == 2 * PAGE
    ahead.close()


def test_the_writer_reports_a_full_disk(
    mapped: MappedFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(file: MappedFile, end: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(MappedFile, "populate", full)
    ahead = AheadPopulator()
    with pytest.raises(OSError, match="No space left") as caught:
        ahead.ensure(mapped, 100)
    assert caught.value.errno == errno.ENOSPC
    assert not ahead.busy
    ahead.close()


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="low_water"):
        AheadPopulator(ahead=PAGE, low_water=2 * PAGE)
    with pytest.raises(ValueError, match="low_water"):
        AheadPopulator(ahead=PAGE, low_water=0)


def _populate_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("rocketkube-populate")}


def test_a_store_appends_across_segments_and_closes_with_the_worker_stopped(
    open_store: OpenStore, config: StoreConfig, msg: MakeMessage
) -> None:
    before = _populate_threads()
    store = open_store()
    bodies = [bytes([65 + i % 26]) * (200 + i) for i in range(300)]
    offsets = []
    for body in bodies:
        result = store.put_message(msg(body))
        assert result.status is PutStatus.PUT_OK
        offsets.append(result.appended[0].physical_offset)
    assert offsets[-1] >= 2 * config.mapped_file_size_commit_log  # it rolled twice at least
    assert _populate_threads() - before  # the worker ran
    for offset, body in zip(offsets, bodies, strict=True):
        found = store.lookup_message_ext(offset)
        assert found is not None
        assert found.body == body
    store.close()
    assert not _populate_threads() - before
