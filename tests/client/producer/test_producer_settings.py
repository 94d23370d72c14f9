"""ProducerSettings: the producer's options as one frozen value, and the two ways a
Producer is built (``settings=`` or keywords), which give the same producer."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from rocketkube.client import (
    LocalTransactionState,
    Message,
    Producer,
    ProducerSettings,
    TransactionProducer,
    sync,
)
from rocketkube.common.acl import Credentials
from rocketkube.common.message.model import MessageExt
from rocketkube.common.remoting.tls import TlsConfig

SETTINGS = ProducerSettings(
    group="SettingsGroup",
    namesrv_addr="10.0.0.1:9876;10.0.0.2:9876",
    send_timeout=7.5,
    retry_times_when_send_failed=5,
    compress_over=1024,
    send_latency_fault_enable=True,
    client_ip="10.1.2.3",
    auto_batch=True,
    batch_max_delay_ms=3,
    tls=TlsConfig(verify=False),
    credentials=("ak", "sk"),
)


class _Listener:
    async def execute_local_transaction(
        self, message: Message, arg: object
    ) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    async def check_local_transaction(self, message: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE


def test_every_option_is_both_a_field_and_a_keyword() -> None:
    fields = {field.name for field in dataclasses.fields(ProducerSettings)}
    keywords = set(inspect.signature(Producer).parameters) - {"settings"}
    assert fields == keywords


def test_the_keyword_form_builds_the_settings() -> None:
    options = {f.name: getattr(SETTINGS, f.name) for f in dataclasses.fields(SETTINGS)}
    group, namesrv_addr = options.pop("group"), options.pop("namesrv_addr")
    assert Producer(group, namesrv_addr, **options).settings == SETTINGS
    assert Producer("g").settings == ProducerSettings(group="g")


def test_a_producer_built_from_settings_runs_with_them() -> None:
    producer = Producer(settings=SETTINGS)
    assert producer.settings is SETTINGS
    assert producer.group == "SettingsGroup"
    assert producer.namesrv_addrs == ["10.0.0.1:9876", "10.0.0.2:9876"]
    assert (producer.send_timeout, producer.retry_times_when_send_failed) == (7.5, 5)
    assert (producer.compress_over, producer.auto_batch, producer.batch_max_delay_ms) == (
        1024,
        True,
        3,
    )
    assert producer.client_id.startswith("10.1.2.3@")
    assert producer.tls == TlsConfig(verify=False)
    assert producer.credentials == Credentials("ak", "sk")


def test_settings_and_keywords_do_not_mix() -> None:
    with pytest.raises(TypeError, match="not both"):
        Producer(settings=SETTINGS, send_timeout=1.0)
    with pytest.raises(TypeError, match="not both"):
        Producer("other", settings=SETTINGS)
    with pytest.raises(TypeError, match="needs a group"):
        Producer()


def test_settings_are_frozen_and_checked() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SETTINGS.send_timeout = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="batch_max_bytes"):
        ProducerSettings(group="g", auto_batch=True, batch_max_bytes=0)
    with pytest.raises(ValueError, match="batch_max_bytes"):
        Producer("g", auto_batch=True, max_message_size=10, batch_max_bytes=11)
    # without auto-batching the batch sizes are not used, so not checked
    assert ProducerSettings(group="g", batch_max_bytes=0).batch_max_bytes == 0


def test_a_transaction_producer_takes_settings_too() -> None:
    listener = _Listener()
    producer = TransactionProducer(None, listener, settings=SETTINGS)
    assert (producer.settings, producer.listener) == (SETTINGS, listener)
    keyword_form = TransactionProducer("SettingsGroup", listener, send_timeout=7.5)
    assert keyword_form.settings == ProducerSettings(group="SettingsGroup", send_timeout=7.5)


def test_the_blocking_facade_takes_settings() -> None:
    producer = sync.Producer(settings=SETTINGS)
    try:
        assert producer.run(_settings_of) is SETTINGS
    finally:
        producer.close()


async def _settings_of(producer: Producer) -> ProducerSettings:
    return producer.settings
