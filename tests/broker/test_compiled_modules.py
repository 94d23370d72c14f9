"""The broker names the compiled modules it uses (its start-up log line)."""

from __future__ import annotations

import pytest

from rocketkube.broker import compiled_modules
from rocketkube.common import compiled

pytestmark = pytest.mark.compiled

ALL = [
    "frame scan",
    "answer frames",
    "store records",
]


def test_every_compiled_module_is_named_when_built() -> None:
    if not compiled.enabled():
        pytest.skip("ROCKETKUBE_NO_EXTENSIONS is set")
    assert compiled_modules.in_use() == ALL


def test_none_is_named_when_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCKETKUBE_NO_EXTENSIONS", "1")
    assert compiled_modules.in_use() == []
