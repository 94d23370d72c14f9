"""ConsumerSettings: what both consumers share as one frozen value, and the two ways each
consumer is built (``settings=`` or keywords), which give the same consumer."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from rocketkube.client import ConsumerSettings, LitePullConsumer, PushConsumer, sync
from rocketkube.common.acl import Credentials
from rocketkube.common.remoting.tls import TlsConfig

SETTINGS = ConsumerSettings(
    group="SettingsConsumers",
    namesrv_addr="10.0.0.1:9876;10.0.0.2:9876",
    consume_from="timestamp",
    consume_timestamp_ms=1_700_000_000_000,
    pull_batch_size=8,
    request_timeout=4.5,
    client_ip="10.1.2.3",
    max_inflated_body_size=1 << 20,
    tls=TlsConfig(verify=False),
    credentials=("ak", "sk"),
)
FIELDS = {field.name for field in dataclasses.fields(ConsumerSettings)}
LITE_PULL_KEYWORD = {"consume_from": "consume_from_where"}
"""The lite pull consumer's keyword for a field, where it spells it otherwise."""


def _keywords(settings: ConsumerSettings, renamed: dict[str, str]) -> dict[str, object]:
    return {renamed.get(name, name): getattr(settings, name) for name in FIELDS}


def test_every_shared_option_is_a_keyword_of_both_consumers() -> None:
    push = set(inspect.signature(PushConsumer).parameters)
    lite = set(inspect.signature(LitePullConsumer).parameters)
    assert push >= FIELDS
    assert {LITE_PULL_KEYWORD.get(name, name) for name in FIELDS} <= lite
    assert "settings" in push & lite


def test_the_keyword_forms_build_the_settings() -> None:
    assert PushConsumer(**_keywords(SETTINGS, {})).settings == SETTINGS  # type: ignore[arg-type]
    lite = LitePullConsumer(**_keywords(SETTINGS, LITE_PULL_KEYWORD))  # type: ignore[arg-type]
    assert lite.settings == SETTINGS
    assert PushConsumer("g").settings == ConsumerSettings(group="g")
    assert LitePullConsumer("g").settings == ConsumerSettings(group="g")


def test_a_push_consumer_built_from_settings_runs_with_them() -> None:
    consumer = PushConsumer(settings=SETTINGS, consume_concurrency=4, rebalance_interval=2.0)
    assert consumer.settings is SETTINGS
    assert consumer.group == "SettingsConsumers"
    assert consumer.namesrv_addrs == ["10.0.0.1:9876", "10.0.0.2:9876"]
    assert (consumer.consume_from, consumer.consume_timestamp_ms) == (
        "timestamp",
        1_700_000_000_000,
    )
    assert (consumer.pull_batch_size, consumer.request_timeout) == (8, 4.5)
    assert consumer.max_inflated_body_size == 1 << 20
    assert (consumer.consume_concurrency, consumer.rebalance_interval) == (4, 2.0)
    assert consumer.client_id.startswith("10.1.2.3@")
    assert consumer.offset_file.parts[-3:] == (
        "10.1.2.3@DEFAULT",
        "SettingsConsumers",
        "offsets.json",
    )
    assert consumer.tls == TlsConfig(verify=False)
    assert consumer.credentials == Credentials("ak", "sk")


def test_a_lite_pull_consumer_built_from_settings_runs_with_them() -> None:
    consumer = LitePullConsumer(settings=SETTINGS, auto_commit=False, poll_timeout=0.5)
    assert consumer.settings is SETTINGS
    assert (consumer.group, consumer.consume_from_where) == ("SettingsConsumers", "timestamp")
    assert (consumer.pull_batch_size, consumer.request_timeout) == (8, 4.5)
    assert (consumer.auto_commit, consumer.poll_timeout) == (False, 0.5)
    assert consumer.client_id.startswith("10.1.2.3@")
    assert consumer.credentials == Credentials("ak", "sk")


def test_settings_and_shared_keywords_do_not_mix() -> None:
    with pytest.raises(TypeError, match="not both"):
        PushConsumer(settings=SETTINGS, pull_batch_size=1)
    with pytest.raises(TypeError, match="not both"):
        LitePullConsumer(settings=SETTINGS, consume_from_where="first")
    with pytest.raises(TypeError, match="not both"):
        PushConsumer("other", settings=SETTINGS)
    with pytest.raises(TypeError, match="needs a group"):
        LitePullConsumer()


def test_settings_are_frozen_and_checked() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SETTINGS.pull_batch_size = 1  # type: ignore[misc]
    with pytest.raises(ValueError, match="one of"):
        ConsumerSettings(group="g", consume_from="middle")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="consume_timestamp_ms"):
        ConsumerSettings(group="g", consume_from="timestamp")
    with pytest.raises(ValueError, match="pull_batch_size"):
        ConsumerSettings(group="g", pull_batch_size=0)
    with pytest.raises(ValueError, match="max_inflated_body_size"):
        ConsumerSettings(group="g", max_inflated_body_size=0)
    with pytest.raises(ValueError, match="consume_concurrency"):
        PushConsumer(settings=SETTINGS, consume_concurrency=0)


def test_the_blocking_facades_take_settings() -> None:
    for facade in (
        sync.PushConsumer(settings=SETTINGS, consume_concurrency=2),
        sync.LitePullConsumer(settings=SETTINGS),
    ):
        try:
            assert facade.run(_settings_of) is SETTINGS
        finally:
            facade.close()


async def _settings_of(consumer: PushConsumer | LitePullConsumer) -> ConsumerSettings:
    return consumer.settings
