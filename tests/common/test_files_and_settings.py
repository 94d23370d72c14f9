"""Properties files, crash-safe files and settings built from RocketMQ names."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketkube.common import atomic_file, settings
from rocketkube.common.properties_file import format_properties, parse_properties
from rocketkube.namesrv.settings import NamesrvSettings


def test_parse_properties_like_java() -> None:
    text = "# comment\n! also\nlistenPort = 9999\nname:value\nlong=a\\\n  b\nflag\n\n"
    assert parse_properties(text) == {"listenPort": "9999", "name": "value", "long": "ab",
                                      "flag": ""}  # fmt: skip


def test_format_properties_uses_java_booleans() -> None:
    assert format_properties({"a": True, "b": 3}) == "a=true\nb=3\n"


def test_atomic_write_keeps_backup_and_reader_falls_back(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "topics.json"
    atomic_file.write_atomic(path, b'{"v":1}')
    atomic_file.write_atomic(path, b'{"v":2}')
    assert path.with_name("topics.json.bak").read_bytes() == b'{"v":1}'
    path.write_bytes(b"{torn")
    import json

    assert atomic_file.read_with_backup(path, json.loads) == {"v": 1}
    assert atomic_file.read_with_backup(tmp_path / "missing.json", json.loads) is None


def test_settings_from_rocketmq_names_and_field_names() -> None:
    built = settings.build(
        NamesrvSettings,
        {"listenPort": "9999", "orderMessageEnable": "true", "unknownKey": "x"},
        {"listen_port": None, "httpPort": 19877},
    )
    assert (built.listen_port, built.order_message_enable, built.http_port) == (9999, True, 19877)
    assert "listenPort=9999\n" in settings.to_properties(built)


def test_settings_error_names_the_property() -> None:
    with pytest.raises(settings.SettingsError, match="listenPort"):
        settings.build(NamesrvSettings, {"listenPort": "70000"})
