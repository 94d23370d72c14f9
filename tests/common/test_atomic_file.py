"""Atomic config files: replace with .bak kept, fall back to .bak when the file is bad."""

from __future__ import annotations

import json
from pathlib import Path

from rocketkube.common.atomic_file import load_json, load_text, save_json, save_text


def test_save_and_load(tmp_path: Path) -> None:
    path = tmp_path / "config" / "topics.json"
    assert load_json(path) is None
    save_json(path, {"topicConfigTable": {"T": {"readQueueNums": 4}}})
    assert load_json(path) == {"topicConfigTable": {"T": {"readQueueNums": 4}}}
    assert not path.with_name("topics.json.bak").exists()
    save_json(path, {"v": 2})
    assert json.loads(path.with_name("topics.json.bak").read_text()) == {
        "topicConfigTable": {"T": {"readQueueNums": 4}}
    }
    assert load_json(path) == {"v": 2}
    assert not path.with_name("topics.json.tmp").exists()


def test_corrupt_or_missing_file_falls_back_to_bak(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    save_json(path, {"v": 1})
    save_json(path, {"v": 2})
    path.write_text('{"v": 3, "trunc')  # a torn write by something else
    assert load_json(path) == {"v": 1}
    path.write_text("")
    assert load_json(path) == {"v": 1}
    path.unlink()
    assert load_json(path) == {"v": 1}


def test_text_with_custom_parser(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    fastjson = '{"offsetTable":{"t@g":{0:12,1:5}}}'  # numeric keys: not strict JSON
    save_text(path, fastjson)
    assert load_text(path, str.upper) == fastjson.upper()
    assert load_json(path) is None  # json.loads refuses, and there is no .bak yet
