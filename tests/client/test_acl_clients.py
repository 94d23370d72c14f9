"""The SDK, ``rocketkube admin`` and ``rocketkube bench`` signing their requests for a
broker with ``aclEnable=true``, end to end on 127.0.0.1: allowed where the account
allows, refused (NO_PERMISSION, with the broker's reason) where it does not."""

from __future__ import annotations

import io
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from waiting import wait_until

from rocketkube.bench import cli as bench_cli
from rocketkube.bench import runners as bench_runners
from rocketkube.broker.app import BrokerApp
from rocketkube.client import (
    AdminClient,
    ConsumeContext,
    ConsumeStatus,
    Credentials,
    LitePullConsumer,
    Message,
    MessageExt,
    NoPermissionError,
    Producer,
    PushConsumer,
)
from rocketkube.client.admin import cli as admin_cli
from rocketkube.namesrv.app import NamesrvApp

StartBroker = Callable[..., Awaitable[BrokerApp]]
CLUSTER = "DefaultCluster"

ACCOUNTS = """\
accounts:
  - accessKey: app-user
    secretKey: app-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: [AclTopic=PUB|SUB, ReadOnly=SUB]
    groupPerms: [AppGroup=SUB, AppGroupLite=SUB, AppProducers=SUB]
  - accessKey: admin-user
    secretKey: admin-secret
    admin: true
"""
APP = ("app-user", "app-secret")
ADMIN = Credentials("admin-user", "admin-secret")


@pytest.fixture
async def acl_broker(start_broker: StartBroker, tmp_path: Path) -> BrokerApp:
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACCOUNTS)
    return await start_broker(acl_enable=True, acl_plain_file=str(path))


async def create(namesrv: NamesrvApp, *topics: str) -> None:
    async with AdminClient(namesrv.address, credentials=ADMIN) as admin:
        for topic in topics:
            await admin.create_topic(topic, cluster=CLUSTER, read_queue_nums=2,
                                     write_queue_nums=2)  # fmt: skip


async def test_sdk_sends_and_consumes_under_an_account_that_allows_it(
    namesrv: NamesrvApp, acl_broker: BrokerApp
) -> None:
    await create(namesrv, "AclTopic")
    received: set[bytes] = set()

    async def on_messages(messages: list[MessageExt], context: ConsumeContext) -> ConsumeStatus:
        received.update(m.body for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer("AppGroup", namesrv.address, consume_from="first", credentials=APP,
                            rebalance_interval=1.0, suspend_timeout=1.0,
                            pull_error_delay=0.2)  # fmt: skip
    await consumer.subscribe("AclTopic")
    consumer.register_listener(on_messages)
    bodies = {b"signed %d" % i for i in range(20)}
    async with Producer("AppProducers", namesrv.address, credentials=APP) as producer:
        for body in sorted(bodies):
            await producer.send(Message("AclTopic", body))
    async with consumer:
        await wait_until(lambda: received >= bodies, "every message, pushed under ACL")
    async with LitePullConsumer("AppGroupLite", namesrv.address, credentials=APP,
                                consume_from_where="first") as puller:  # fmt: skip
        await puller.subscribe("AclTopic")
        pulled: set[bytes] = set()
        while not pulled >= bodies:
            pulled.update(m.body for m in await puller.poll(timeout=5.0))


async def test_sdk_is_refused_where_the_account_denies(
    namesrv: NamesrvApp, acl_broker: BrokerApp
) -> None:
    await create(namesrv, "ReadOnly")
    async with Producer("AppProducers", namesrv.address, credentials=APP,
                        retry_times_when_send_failed=0) as producer:  # fmt: skip
        with pytest.raises(NoPermissionError, match="topic:ReadOnly: PUB needed"):
            await producer.send(Message("ReadOnly", b"not mine to write"))
    async with Producer("AppProducers", namesrv.address,
                        retry_times_when_send_failed=0) as unsigned:  # fmt: skip
        with pytest.raises(NoPermissionError, match="No accessKey is configured"):
            await unsigned.send(Message("ReadOnly", b"no account"))
    async with AdminClient(namesrv.address, credentials=APP) as admin:
        with pytest.raises(NoPermissionError, match="Need admin permission"):
            await admin.create_topic("Mine", cluster=CLUSTER)


async def admin(namesrv: NamesrvApp, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await admin_cli.execute([*argv, "-n", namesrv.address], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


async def test_admin_cli_signs_with_flags_or_environment(
    namesrv: NamesrvApp,
    acl_broker: BrokerApp,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    update = ("updateTopic", "-c", CLUSTER, "-t", "CliTopic")
    code, out, err = await admin(namesrv, *update)
    assert (code, err) == (1, "error: NO_PERMISSION (16): No accessKey is configured\n")
    code, out, err = await admin(namesrv, *update, "--access-key", "admin-user",
                                 "--secret-key", "admin-secret")  # fmt: skip
    assert code == 0, err
    assert f"create topic to {acl_broker.address} success." in out
    # sendMessage's producer signs with the same flags.
    signed = ("--access-key", "admin-user", "--secret-key", "admin-secret")
    code, out, err = await admin(namesrv, "sendMessage", "-t", "CliTopic", "-p", "signed", *signed)
    assert code == 0, err
    assert "SEND_OK" in out
    monkeypatch.setenv("ROCKETKUBE_ACCESS_KEY", "app-user")
    monkeypatch.setenv("ROCKETKUBE_SECRET_KEY", "app-secret")
    code, out, err = await admin(namesrv, *update)
    assert code == 1
    assert "Need admin permission" in err
    monkeypatch.delenv("ROCKETKUBE_SECRET_KEY")
    code, out, err = await admin(namesrv, *update)
    assert code == 1
    assert "go together" in err


async def test_bench_producer_signs_its_sends(
    namesrv: NamesrvApp, acl_broker: BrokerApp, capsys: pytest.CaptureFixture[str]
) -> None:
    await create(namesrv, "AclTopic")
    argv = "producer -t AclTopic -g AppProducers -w 4 --messages 50 --interval 60 --json"
    argv += " --access-key app-user --secret-key app-secret"
    args = bench_cli.main_parser().parse_args([*argv.split(), "-n", namesrv.address])
    assert await bench_runners.run_client_bench(args) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (summary["messages"], summary["failed"]) == (50, 0)
    assert summary["settings"]["credentials"] == "app-user"  # never the secret
    assert "app-secret" not in json.dumps(summary)
