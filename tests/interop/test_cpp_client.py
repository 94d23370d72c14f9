"""The real C++ RocketMQ client 1.0.1 (PyPI ``rocketmq==0.4.4``), unmodified, against our
name server and broker: 1,000 messages with keys, tags and a property sent and consumed back.

The client runs ``cpp_roundtrip.py`` in a subprocess (its threads, logs and destructors stay
out of pytest) while our servers serve from this test's event loop.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from rocketkube.namesrv.app import NamesrvApp

pytestmark = pytest.mark.interop

SCRIPT = Path(__file__).with_name("cpp_roundtrip.py")
COUNT = 1_000
#: The script gives up consuming at this point (seconds after it starts) ...
SCRIPT_DEADLINE_SECONDS = 60
#: ... and is killed at this one, so a hung client still fails the test well within 120 s.
KILL_AFTER_SECONDS = 90


@pytest.mark.usefixtures("cpp_client", "broker")
async def test_cpp_client_sends_and_consumes_1000_messages(
    namesrv: NamesrvApp,
    names: tuple[str, str],
    run_client: Callable[..., Awaitable[Any]],
    broker_queued_total: Callable[[str], int],
) -> None:
    topic, group = names
    argv = [sys.executable, str(SCRIPT), namesrv.address, topic, group, str(COUNT)]
    argv += ["both", str(SCRIPT_DEADLINE_SECONDS)]
    run = await run_client(argv, timeout=KILL_AFTER_SECONDS)
    sent, received = run.result["sent"], run.result["received"]

    assert len(sent) == COUNT
    assert {s["status"] for s in sent} == {"OK"}
    assert len({s["msg_id"] for s in sent}) == COUNT, "message ids are not unique"
    assert broker_queued_total(topic) == COUNT

    by_body = {r["body"]: r for r in received}
    assert set(by_body) == {f"cpp-{i}" for i in range(COUNT)}
    for i in range(COUNT):
        got = by_body[f"cpp-{i}"]
        expected = {"tags": ("TagA", "TagB")[i % 2], "keys": f"key-{i}", "custom": f"c{i}"}
        assert {k: got[k] for k in expected} == expected, f"cpp-{i}"
    # The C++ client reports its UNIQ_KEY property as the id, when sending and consuming.
    assert {r["id"] for r in received} == {s["msg_id"] for s in sent}
