"""The README's SDK examples, run as a user would run them, against a real cluster.

Each ``<!-- example: NAME -->`` marker in README.md is followed by a Python code block; the
blocks run in README order, each in a fresh interpreter with ``NAMESRV_ADDR`` pointing at
this test's name server (the servers keep serving from the test's event loop meanwhile).

The examples keep the SDK's defaults, such as RocketMQ's 3 s send timeout. On a starved CI
host a fresh interpreter can miss such a deadline with no fault in the example, so an
example that fails with a timeout runs once more; any other failure, or a second timeout,
fails the test.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest

from rocketkube.broker.app import BrokerApp
from rocketkube.namesrv.app import NamesrvApp

README = Path(__file__).resolve().parents[2] / "README.md"
EXAMPLE = re.compile(r"<!-- example: (?P<name>[\w-]+) -->\s*```python\n(?P<code>.*?)```", re.S)
RUN_SECONDS = 120.0

#: What each example must print (a user would see these lines).
EXPECTED = {
    "producer": ["sent SEND_OK", "async sends: 10"],
    "consumer": ["received TagA ['order-1'] b'hello rocketkube'"],
    "admin": ["broker broker-a", "queue 0 offsets 0"],
    "sync": [
        "stored [",
        "received [b'row 0', b'row 1', b'row 2', b'row 3', b'row 4']",
        "pushed [b'row ",
    ],
}


def examples() -> list[tuple[str, str]]:
    return [(m["name"], m["code"]) for m in EXAMPLE.finditer(README.read_text())]


def test_readme_has_every_example() -> None:
    assert [name for name, _ in examples()] == list(EXPECTED)


async def _run(code: str, namesrv: str, home: Path) -> tuple[int | None, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "NAMESRV_ADDR": namesrv, "HOME": str(home)},
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), RUN_SECONDS)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        pytest.fail(f"still running after {RUN_SECONDS:.0f} s")
    return proc.returncode, out.decode(), err.decode()


async def test_readme_examples_run(namesrv: NamesrvApp, broker: BrokerApp, tmp_path: Path) -> None:
    for name, code in examples():
        status, out, err = await _run(code, namesrv.address, tmp_path)
        if status != 0 and "TimeoutError" in err:  # RemotingTimeoutError too
            first = err
            status, out, err = await _run(code, namesrv.address, tmp_path)
            err = f"{err}\n(a first run had timed out too:)\n{first}"
        assert status == 0, f"example {name} failed:\n{out}\n{err}"
        for line in EXPECTED[name]:
            assert line in out, f"example {name} did not print {line!r}:\n{out}"
