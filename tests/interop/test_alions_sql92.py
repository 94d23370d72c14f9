"""The real Node.js client ali-ons 3.12.0 with a SQL92 subscription
(``{expressionType: 'SQL92', subString}``) against a broker with ``enablePropertyFilter``:
its heartbeats and pulls carry the expression, and it receives exactly the matching
messages. (The PyPI ``rocketmq`` C++ client subscribes by tag only: it has no SQL92.)"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from rocketkube.broker.app import BrokerApp
from rocketkube.namesrv.app import NamesrvApp

pytestmark = pytest.mark.interop

NODE_DIR = Path(__file__).with_name("node")
SCRIPT = NODE_DIR / "alions_sql92.js"
SQL = "a BETWEEN 3 AND 5 AND b = 'x'"
COUNT = 100
SCRIPT_DEADLINE_SECONDS = 60
KILL_AFTER_SECONDS = 90


@pytest.fixture
async def broker(start_broker: Callable[..., Awaitable[BrokerApp]]) -> BrokerApp:
    """The one broker, serving SQL92 subscriptions."""
    return await start_broker(enable_property_filter=True)


@pytest.mark.usefixtures("broker")
async def test_alions_sql92_subscription_receives_exactly_the_matching_messages(
    node: str,
    namesrv: NamesrvApp,
    names: tuple[str, str],
    create_topic: Callable[..., Awaitable[Any]],
    run_client: Callable[..., Awaitable[Any]],
) -> None:
    """One queue, so the matching ``end`` the script sends last comes after every other
    match: the script stops there."""
    topic, group = names
    await create_topic(topic, 1)
    argv = [node, SCRIPT.name, namesrv.address, topic, group, SQL, str(COUNT)]
    argv += [str(SCRIPT_DEADLINE_SECONDS * 1000)]
    run = await run_client(argv, timeout=KILL_AFTER_SECONDS, cwd=NODE_DIR)
    matching = [f"m{i}" for i in range(COUNT) if 3 <= i % 10 <= 5 and i % 4]
    assert sorted(run.result["received"]) == sorted([*matching, "end"])
