"""Fixtures shared by every suite: a name server on 127.0.0.1 with a clock tests can move."""

from __future__ import annotations

import operator
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import settings

from rocketkube.namesrv.app import NamesrvApp
from rocketkube.namesrv.settings import NamesrvSettings

# Shared CI machines stall now and then: property tests judge behaviour, never speed.
settings.register_profile("rocketkube", deadline=None)
settings.load_profile("rocketkube")


class FakeClock:
    """Milliseconds that only move when a test says so."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def namesrv_settings(tmp_path: Path) -> NamesrvSettings:
    return NamesrvSettings(
        listen_port=0,
        http_port=0,
        bind_address="127.0.0.1",
        kv_config_path=str(tmp_path / "kv.json"),
    )


@pytest.fixture
async def namesrv(namesrv_settings: NamesrvSettings, clock: FakeClock) -> AsyncIterator[NamesrvApp]:
    app = NamesrvApp(namesrv_settings, clock)
    await app.start()
    yield app
    await app.stop()


def test_operator_is_the_standard_library() -> None:
    """Guard: no source root or tests/ package may shadow the stdlib ``operator``."""
    assert operator.__file__ is not None
    assert "site-packages" not in operator.__file__
    assert Path(operator.__file__).parent.name.startswith("python3")
