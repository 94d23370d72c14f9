"""Properties files, crash-safe files and settings built from RocketMQ names."""

from __future__ import annotations

import pytest

from rocketkube.common import settings
from rocketkube.common.properties_file import format_properties, parse_properties
from rocketkube.namesrv.settings import NamesrvSettings


def test_parse_properties_like_java() -> None:
    text = "# comment\n! also\nlistenPort = 9999\nname:value\nlong=a\\\n  b\nflag\n\n"
    assert parse_properties(text) == {"listenPort": "9999", "name": "value", "long": "ab",
                                      "flag": ""}  # fmt: skip


def test_format_properties_uses_java_booleans() -> None:
    assert format_properties({"a": True, "b": 3}) == "a=true\nb=3\n"


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
