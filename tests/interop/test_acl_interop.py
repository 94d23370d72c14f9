"""Real third-party clients signing their requests for a broker with ``aclEnable=true``:
the C++ client 1.0.1 (PyPI ``rocketmq==0.4.4``, ``set_session_credentials``) and ali-ons
(``accessKey``/``secretKey``). Each sends and consumes under an account that allows it,
and is refused where the account denies it: a send to a denied topic fails with the
broker's NO_PERMISSION, a consumer of a denied group receives nothing while the broker
refuses its requests."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from rocketkube.broker.app import BrokerApp
from rocketkube.client import AdminClient, Credentials
from rocketkube.namesrv.app import NamesrvApp

pytestmark = pytest.mark.interop

StartBroker = Callable[..., Awaitable[BrokerApp]]
HERE = Path(__file__).parent
COUNT = 100
KILL_AFTER_SECONDS = 110

ACCOUNTS = """\
accounts:
  - accessKey: interop-user
    secretKey: interop-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: [{topic}=PUB|SUB, {denied_topic}=SUB]
    groupPerms: [{group}=SUB, {group}_P=SUB]
  - accessKey: admin-user
    secretKey: admin-secret
    admin: true
"""


async def acl_cluster(
    start_broker: StartBroker, namesrv: NamesrvApp, tmp_path: Path, names: tuple[str, str]
) -> tuple[BrokerApp, dict[str, str]]:
    topic, group = names
    where = {"topic": topic, "denied_topic": f"{topic}_denied", "group": group,
             "denied_group": f"{group}_denied"}  # fmt: skip
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACCOUNTS.format(**where))
    broker = await start_broker(acl_enable=True, acl_plain_file=str(path))
    async with AdminClient(
        namesrv.address, credentials=Credentials("admin-user", "admin-secret")
    ) as admin:
        for name in (where["topic"], where["denied_topic"]):
            await admin.create_topic(name, cluster="DefaultCluster", read_queue_nums=2,
                                     write_queue_nums=2)  # fmt: skip
    return broker, where


def refused(broker: BrokerApp, *codes: str) -> float:
    """How many requests of these codes (names, as the broker's metrics label them) the
    broker answered NO_PERMISSION."""
    samples = (
        broker.registry.get_sample_value(
            "rocketkube_broker_requests_total", {"code": code, "result": "NO_PERMISSION"}
        )
        for code in codes
    )
    return sum(value or 0.0 for value in samples)


@pytest.mark.usefixtures("cpp_client")
async def test_cpp_client_signs_and_is_refused_where_denied(
    start_broker: StartBroker,
    namesrv: NamesrvApp,
    tmp_path: Path,
    names: tuple[str, str],
    run_client: Callable[..., Awaitable[Any]],
) -> None:
    broker, where = await acl_cluster(start_broker, namesrv, tmp_path, names)
    argv = [sys.executable, str(HERE / "cpp_acl.py"), namesrv.address, where["topic"],
            where["denied_topic"], where["group"], where["denied_group"], str(COUNT),
            "interop-user", "interop-secret"]  # fmt: skip
    run = await run_client(argv, timeout=KILL_AFTER_SECONDS)
    result = run.result
    assert result["sent"] == ["OK"] * COUNT
    assert result["received"] == COUNT
    assert result["denied_send"] is not None
    assert refused(broker, "SEND_MESSAGE", "SEND_MESSAGE_V2") >= 1, result["denied_send"]
    assert result["received_denied"] == 0
    assert refused(broker, "HEART_BEAT", "PULL_MESSAGE") >= 1


async def test_alions_signs_and_is_refused_where_denied(
    start_broker: StartBroker,
    namesrv: NamesrvApp,
    tmp_path: Path,
    names: tuple[str, str],
    node: str,
    run_client: Callable[..., Awaitable[Any]],
) -> None:
    broker, where = await acl_cluster(start_broker, namesrv, tmp_path, names)
    argv = [node, str(HERE / "node" / "alions_acl.js"), namesrv.address, where["topic"],
            where["denied_topic"], where["group"], where["denied_group"], str(COUNT),
            "interop-user", "interop-secret"]  # fmt: skip
    run = await run_client(argv, timeout=KILL_AFTER_SECONDS, cwd=HERE / "node")
    result = run.result
    assert result["sent"] == COUNT
    assert result["received"] == COUNT
    assert where["denied_topic"] in result["denied_send"]  # "Send [1] times, still failed"
    assert refused(broker, "SEND_MESSAGE", "SEND_MESSAGE_V2") >= 1
    assert result["received_denied"] == 0
    assert any(f"group:{where['denied_group']}" in error for error in result["denied_errors"])
