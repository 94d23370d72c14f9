"""The real Node.js client ali-ons 3.12.0 (npm, pure JavaScript), unmodified, against our name
server and broker: 1,000 messages with keys, tags and a property sent and consumed back.

ali-ons never falls back to ``TBW102`` for an unknown topic: its route lookup throws on
TOPIC_NOT_EXIST (17) before the fallback, against Apache RocketMQ too. Its users create
topics first, so the test does, as ``mqadmin updateTopic`` would.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from rocketkube.namesrv.app import NamesrvApp

pytestmark = pytest.mark.interop

NODE_DIR = Path(__file__).with_name("node")
SCRIPT = NODE_DIR / "alions_roundtrip.js"
COUNT = 1_000
QUEUES = 8
#: The script gives up consuming at this point (seconds after it starts) ...
SCRIPT_DEADLINE_SECONDS = 60
#: ... and is killed at this one, so a hung client still fails the test well within 120 s.
KILL_AFTER_SECONDS = 90


@pytest.mark.usefixtures("broker")
async def test_alions_sends_and_consumes_1000_messages(
    node: str,
    namesrv: NamesrvApp,
    names: tuple[str, str],
    create_topic: Callable[..., Awaitable[Any]],
    run_client: Callable[..., Awaitable[Any]],
    broker_queued_total: Callable[[str], int],
) -> None:
    topic, group = names
    await create_topic(topic, QUEUES)
    argv = [node, SCRIPT.name, namesrv.address, topic, group, str(COUNT)]
    argv += ["both", str(SCRIPT_DEADLINE_SECONDS * 1000)]
    run = await run_client(argv, timeout=KILL_AFTER_SECONDS, cwd=NODE_DIR)
    sent, received = run.result["sent"], run.result["received"]

    # The script throws unless every send answered SEND_OK.
    assert len(sent) == COUNT
    assert len(set(sent)) == COUNT, "message ids are not unique"
    assert broker_queued_total(topic) == COUNT

    by_body = {r["body"]: r for r in received}
    assert set(by_body) == {f"alions-{i}" for i in range(COUNT)}
    for i in range(COUNT):
        got = by_body[f"alions-{i}"]
        expected = {"tags": ("TagA", "TagB")[i % 2], "keys": f"key-{i}", "custom": f"c{i}"}
        assert {k: got[k] for k in expected} == expected, f"alions-{i}"
