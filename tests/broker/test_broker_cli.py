"""``rocketkube broker`` refuses bad configuration with one clear line and exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--set", "no-equals-sign"], "--set expects KEY=VALUE"),
        (["--flush-disk-type", "SOMETIMES"], "flushDiskType"),
        (["--port", "99999"], "listenPort"),
    ],
)
def test_bad_broker_config_exits_2(args: list[str], needle: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rocketkube.common", "broker", "--store", str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert proc.stderr.startswith("rocketkube broker: ")
