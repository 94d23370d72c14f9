"""Atomic config files: replace with .bak kept, fall back to .bak when the file is bad;
kept current from a worker thread by BackgroundSaver."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from pathlib import Path

import pytest
from waiting import wait_until

from rocketkube.common import atomic_file
from rocketkube.common.atomic_file import (
    BackgroundSaver,
    json_bytes,
    load_json,
    load_text,
    save_bytes,
)


def test_save_and_load(tmp_path: Path) -> None:
    path = tmp_path / "config" / "topics.json"
    assert load_json(path) is None
    save_bytes(path, json_bytes({"topicConfigTable": {"T": {"readQueueNums": 4}}}))
    assert load_json(path) == {"topicConfigTable": {"T": {"readQueueNums": 4}}}
    assert not path.with_name("topics.json.bak").exists()
    save_bytes(path, json_bytes({"v": 2}))
    assert json.loads(path.with_name("topics.json.bak").read_text()) == {
        "topicConfigTable": {"T": {"readQueueNums": 4}}
    }
    assert load_json(path) == {"v": 2}
    assert not path.with_name("topics.json.tmp").exists()


def test_corrupt_or_missing_file_falls_back_to_bak(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    save_bytes(path, json_bytes({"v": 1}))
    save_bytes(path, json_bytes({"v": 2}))
    path.write_text('{"v": 3, "trunc')  # a torn write by something else
    assert load_json(path) == {"v": 1}
    path.write_text("")
    assert load_json(path) == {"v": 1}
    path.unlink()
    assert load_json(path) == {"v": 1}


def test_text_with_custom_parser(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    fastjson = '{"offsetTable":{"t@g":{0:12,1:5}}}'  # numeric keys: not strict JSON
    save_bytes(path, fastjson.encode())
    assert load_text(path, str.upper) == fastjson.upper()
    assert load_json(path) is None  # json.loads refuses, and there is no .bak yet


def test_saver_without_a_running_loop_saves_at_once(tmp_path: Path) -> None:
    value = {"v": 1}
    saver = BackgroundSaver(tmp_path / "t.json", lambda: json.dumps(value).encode())
    saver.changed()
    assert load_json(saver.path) == {"v": 1}
    assert not saver.pending


async def test_saver_writes_off_the_loop_and_folds_changes_made_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = {"v": 0}
    writes: list[bytes] = []
    release = threading.Event()
    loop_thread = threading.get_ident()

    def slow_save(path: Path, data: bytes) -> None:
        assert threading.get_ident() != loop_thread
        release.wait(30)
        writes.append(data)
        save_bytes(path, data)

    monkeypatch.setattr(atomic_file, "save_bytes", slow_save)
    saver = BackgroundSaver(tmp_path / "t.json", lambda: json.dumps(value).encode())
    saver.changed()
    await asyncio.sleep(0.05)  # the first write is stuck in its thread; the loop is not
    for v in (1, 2, 3):
        value["v"] = v
        saver.changed()
    assert saver.pending
    flushed = asyncio.ensure_future(saver.flush())
    await asyncio.sleep(0.05)
    assert not flushed.done()
    release.set()
    await flushed
    assert not saver.pending
    assert writes == [b'{"v": 0}', b'{"v": 3}']  # three changes, one more write
    assert load_json(saver.path) == {"v": 3}


async def test_saver_logs_a_failed_write_and_tries_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    saver = BackgroundSaver(blocker / "t.json", lambda: b"{}")
    with caplog.at_level(logging.ERROR):
        saver.changed()
        await wait_until(
            lambda: any("cannot save" in r.getMessage() for r in caplog.records),
            "the failed background write logged",
        )
    assert saver.pending
    with pytest.raises(FileExistsError):  # its folder is a file
        await saver.flush()  # the same write, tried again, fails again
    saver.path = tmp_path / "t.json"
    await saver.flush()
    assert load_json(saver.path) == {}
    assert not saver.pending
