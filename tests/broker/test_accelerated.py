"""The broker names the compiled accelerators it uses (its start-up log line)."""

from __future__ import annotations

import pytest

from rocketkube.broker.accelerated import accelerated
from rocketkube.common import accelerators

pytestmark = pytest.mark.compiled

ALL = [
    "frame scan",
    "answer frames",
    "store records",
]


def test_every_twin_is_named_when_built() -> None:
    if not accelerators.wanted():
        pytest.skip("ROCKETKUBE_NO_EXTENSIONS is set")
    assert accelerated() == ALL


def test_none_is_named_when_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCKETKUBE_NO_EXTENSIONS", "1")
    assert accelerated() == []
