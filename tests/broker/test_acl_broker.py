"""A broker with ``aclEnable=true`` over real sockets on 127.0.0.1: every request family
allowed or refused by its account, refusals answered NO_PERMISSION on a connection that
stays open, pipelined sends checked one by one, white addresses, and the file reloaded
when it changes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, cast

import pytest
from waiting import wait_for_value

from rocketkube.broker.acl import AccessGuard, config
from rocketkube.broker.app import BrokerApp
from rocketkube.common import acl
from rocketkube.common.protocol.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply
from rocketkube.common.remoting.dispatch import BatchingProcessor, Dispatcher

StartBroker = Callable[..., Awaitable[BrokerApp]]

ACCOUNTS = """\
accounts:
  - accessKey: producer1
    secretKey: secret-p
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: [TopicA=PUB, TopicB=PUB|SUB, TopicD=DENY]
    groupPerms: [GroupB=SUB]
  - accessKey: admin-one
    secretKey: secret-a
    admin: true
"""
PRODUCER = acl.Credentials("producer1", "secret-p")
ADMIN = acl.Credentials("admin-one", "secret-a")


@pytest.fixture
def acl_file(tmp_path: Path) -> Path:
    path = tmp_path / "conf" / "plain_acl.yml"
    path.parent.mkdir()
    edit(path, ACCOUNTS)
    return path


def edit(path: Path, text: str) -> None:
    """Write the ACL file as an operator's edit would (a few hundred bytes)."""
    path.write_text(text)


@pytest.fixture
async def acl_broker(start_broker: StartBroker, acl_file: Path) -> BrokerApp:
    return await start_broker(acl_enable=True, acl_plain_file=str(acl_file))


@pytest.fixture
async def clients() -> AsyncIterator[Callable[[acl.Credentials | None], RemotingClient]]:
    made: list[RemotingClient] = []

    def make(credentials: acl.Credentials | None) -> RemotingClient:
        made.append(RemotingClient(credentials=credentials, timeout=10.0))
        return made[-1]

    yield make
    for client in made:
        await client.close()


def send_v2(topic: str, body: bytes = b"hello", group: str = "P") -> RemotingCommand:
    fields = {"a": group, "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0",
              "g": "1700000000000", "h": "0", "j": "0", "k": "false", "m": "false"}  # fmt: skip
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, fields, body)


def heartbeat(group: str, topic: str) -> RemotingCommand:
    consumer = ConsumerData(group_name=group, subscriptions=[SubscriptionData(topic=topic)])
    body = HeartbeatData(client_id="127.0.0.1@acl", consumers=[consumer]).encode()
    return RemotingCommand.request(RequestCode.HEART_BEAT, body=body)


def request(code: int, **fields: Any) -> RemotingCommand:
    return RemotingCommand.request(code, {k: str(v) for k, v in fields.items()})


async def test_sends_allowed_and_refused_by_the_account(
    acl_broker: BrokerApp, clients: Callable[[acl.Credentials | None], RemotingClient]
) -> None:
    producer = clients(PRODUCER)
    answer = await producer.invoke(acl_broker.address, send_v2("TopicA"))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    refused = await producer.invoke(acl_broker.address, send_v2("TopicC"))
    assert refused.code == ResponseCode.NO_PERMISSION
    assert refused.remark == (
        "No default permission for topic:TopicC: PUB needed, accessKey=producer1 has DENY"
    )
    denied = await producer.invoke(acl_broker.address, send_v2("TopicD"))
    assert (denied.code, denied.remark) == (
        ResponseCode.NO_PERMISSION,
        "No permission for topic:TopicD: PUB needed, accessKey=producer1 has DENY",
    )
    # the connection stays open: the next request is served on it
    again = await producer.invoke(acl_broker.address, send_v2("TopicA"))
    assert again.code == ResponseCode.SUCCESS


async def test_unsigned_and_forged_requests_are_refused(
    acl_broker: BrokerApp, clients: Callable[[acl.Credentials | None], RemotingClient]
) -> None:
    unsigned = await clients(None).invoke(acl_broker.address, send_v2("TopicA"))
    assert (unsigned.code, unsigned.remark) == (
        ResponseCode.NO_PERMISSION,
        "No accessKey is configured",
    )
    forged = await clients(acl.Credentials("producer1", "guessed")).invoke(
        acl_broker.address, send_v2("TopicA")
    )
    assert (forged.code, forged.remark) == (
        ResponseCode.NO_PERMISSION,
        "Check signature failed for accessKey=producer1",
    )
    stranger = await clients(acl.Credentials("stranger", "secret-s")).invoke(
        acl_broker.address, send_v2("TopicA")
    )
    assert (stranger.code, stranger.remark) == (
        ResponseCode.NO_PERMISSION,
        "No acl config for stranger",
    )


async def test_pipelined_sends_are_checked_one_by_one_and_answered_in_order(
    acl_broker: BrokerApp, clients: Callable[[acl.Credentials | None], RemotingClient]
) -> None:
    conn = await clients(PRODUCER).connection(acl_broker.address)
    topics = ["TopicA", "TopicC", "TopicA", "TopicA", "TopicD", "TopicB", "TopicC", "TopicA"]
    # issued in one loop step: written together, read by the broker as one run
    futures = [
        conn.invoke_future(send_v2(topic, b"pipelined %d" % at), 10.0)
        for at, topic in enumerate(topics)
    ]
    answers = await asyncio.gather(*futures)
    allowed = {"TopicA", "TopicB"}
    assert [a.code == ResponseCode.SUCCESS for a in answers] == [t in allowed for t in topics]
    for topic, answer in zip(topics, answers, strict=True):
        if topic not in allowed:
            assert answer.code == ResponseCode.NO_PERMISSION
            assert f"topic:{topic}" in (answer.remark or "")
    stored = [a for t, a in zip(topics, answers, strict=True) if t == "TopicA"]
    offsets = [(a.ext_fields["queueId"], int(a.ext_fields["queueOffset"])) for a in stored]
    assert offsets == sorted(offsets)  # stored in the order sent


class Peer:
    remote_address = "127.0.0.1:50000"


def test_a_run_reaches_the_batch_entry_point_without_its_refused_requests(
    acl_file: Path,
) -> None:
    runs: list[list[str]] = []

    def one(conn: Connection, req: RemotingCommand) -> Reply:
        raise AssertionError("a run goes to the batch entry point")

    def many(conn: Connection, requests: Sequence[RemotingCommand]) -> Sequence[Reply]:
        runs.append([r.ext_fields["b"] for r in requests])
        return [RemotingCommand.response(ResponseCode.SUCCESS) for _ in requests]

    batching = BatchingProcessor(one, many)
    guard = AccessGuard(acl_file)
    dispatcher = Dispatcher(
        guard.guard(
            {RequestCode.SEND_MESSAGE_V2: batching, RequestCode.SEND_BATCH_MESSAGE: batching}
        )
    )
    requests = [send_v2(t) for t in ("TopicA", "TopicC", "TopicB", "TopicD", "TopicA")]
    requests[2].code = RequestCode.SEND_BATCH_MESSAGE  # shares the entry point: one run
    for req in requests:
        acl.sign(req, PRODUCER)
    replies = dispatcher.handle_many(cast(Connection, Peer()), requests)
    assert runs == [["TopicA", "TopicB", "TopicA"]]
    codes = [r.code for r in replies if isinstance(r, RemotingCommand)]
    assert codes == [0, ResponseCode.NO_PERMISSION, 0, ResponseCode.NO_PERMISSION, 0]


@pytest.mark.parametrize(
    ("make", "allowed"),
    [
        (lambda: request(RequestCode.PULL_MESSAGE, topic="TopicB", consumerGroup="GroupB",
                         queueId=0, queueOffset=0, maxMsgNums=1, sysFlag=0,
                         commitOffset=0, suspendTimeoutMillis=0, subVersion=0), True),
        (lambda: request(RequestCode.PULL_MESSAGE, topic="TopicA", consumerGroup="GroupB",
                         queueId=0, queueOffset=0, maxMsgNums=1, sysFlag=0,
                         commitOffset=0, suspendTimeoutMillis=0, subVersion=0), False),
        (lambda: request(RequestCode.PULL_MESSAGE, topic="TopicB", consumerGroup="Other",
                         queueId=0, queueOffset=0, maxMsgNums=1, sysFlag=0,
                         commitOffset=0, suspendTimeoutMillis=0, subVersion=0), False),
        (lambda: heartbeat("GroupB", "TopicB"), True),
        (lambda: heartbeat("GroupB", "TopicA"), False),
        (lambda: heartbeat("Other", "TopicB"), False),
        (lambda: request(RequestCode.QUERY_CONSUMER_OFFSET, topic="TopicB",
                         consumerGroup="GroupB", queueId=0), True),
        (lambda: request(RequestCode.UPDATE_CONSUMER_OFFSET, topic="TopicB",
                         consumerGroup="Other", queueId=0, commitOffset=0), False),
        (lambda: request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, consumerGroup="GroupB"), True),
        (lambda: request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, consumerGroup="Other"), False),
        (lambda: request(RequestCode.UNREGISTER_CLIENT, clientID="c", consumerGroup="Other"),
         False),
        (lambda: request(RequestCode.QUERY_MESSAGE, topic="TopicA", key="k", maxNum=1,
                         beginTimestamp=0, endTimestamp=1), False),
        (lambda: request(RequestCode.UPDATE_AND_CREATE_TOPIC, topic="NewTopic",
                         defaultTopic="TBW102", readQueueNums=1, writeQueueNums=1, perm=6,
                         topicFilterType="SINGLE_TAG", topicSysFlag=0, order="false"), False),
        (lambda: request(RequestCode.DELETE_TOPIC_IN_BROKER, topic="TopicA"), False),
        (lambda: request(RequestCode.GET_BROKER_RUNTIME_INFO), True),
    ],
)  # fmt: skip
async def test_each_request_family_needs_its_permission(
    acl_broker: BrokerApp,
    clients: Callable[[acl.Credentials | None], RemotingClient],
    make: Callable[[], RemotingCommand],
    allowed: bool,
) -> None:
    answer = await clients(PRODUCER).invoke(acl_broker.address, make())
    assert (answer.code != ResponseCode.NO_PERMISSION) == allowed, answer.remark


async def test_an_admin_account_may_create_topics(
    acl_broker: BrokerApp, clients: Callable[[acl.Credentials | None], RemotingClient]
) -> None:
    create = request(RequestCode.UPDATE_AND_CREATE_TOPIC, topic="NewTopic",
                     defaultTopic="TBW102", readQueueNums=1, writeQueueNums=1, perm=6,
                     topicFilterType="SINGLE_TAG", topicSysFlag=0, order="false")  # fmt: skip
    refused = await clients(PRODUCER).invoke(acl_broker.address, create)
    assert refused.remark == (
        f"Need admin permission for request code={RequestCode.UPDATE_AND_CREATE_TOPIC}, "
        "but accessKey=producer1 is not"
    )
    create.ext_fields.pop("Signature")
    answer = await clients(ADMIN).invoke(acl_broker.address, create)
    assert answer.code == ResponseCode.SUCCESS, answer.remark


async def test_the_file_is_reloaded_when_it_changes(
    acl_broker: BrokerApp,
    acl_file: Path,
    clients: Callable[[acl.Credentials | None], RemotingClient],
) -> None:
    producer = clients(PRODUCER)

    async def code_of(topic: str, client: RemotingClient = producer) -> int:
        return (await client.invoke(acl_broker.address, send_v2(topic))).code

    assert await code_of("TopicC") == ResponseCode.NO_PERMISSION
    edit(acl_file, ACCOUNTS.replace("TopicD=DENY", "TopicC=PUB"))

    async def allowed() -> bool | None:
        return True if await code_of("TopicC") == ResponseCode.SUCCESS else None

    await wait_for_value(allowed, "TopicC allowed once the file says so")
    # a broken edit is refused: the rules in force stay
    edit(acl_file, "accounts: [\n")
    guard = acl_broker.acl
    assert guard is not None
    assert not guard.reload_if_changed()
    assert await code_of("TopicC") == ResponseCode.SUCCESS
    # the global white list lets this host in without a signature
    edit(acl_file, "globalWhiteRemoteAddresses: ['127.0.0.*']\n" + ACCOUNTS)

    async def white() -> bool | None:
        return True if await code_of("TopicZ", clients(None)) == ResponseCode.SUCCESS else None

    await wait_for_value(white, "an unsigned send from a white-listed host stored")


async def test_an_account_s_white_address_needs_no_signature(
    start_broker: StartBroker,
    acl_file: Path,
    clients: Callable[[acl.Credentials | None], RemotingClient],
) -> None:
    edit(acl_file, ACCOUNTS.replace("admin: true", "whiteRemoteAddress: 127.0.0.1"))
    broker = await start_broker(acl_enable=True, acl_plain_file=str(acl_file))
    answer = await clients(acl.Credentials("admin-one", "wrong-secret")).invoke(
        broker.address, send_v2("AnyTopic")
    )
    assert answer.code == ResponseCode.SUCCESS, answer.remark


async def test_a_broker_with_an_unusable_file_does_not_start(
    start_broker: StartBroker, acl_file: Path
) -> None:
    edit(acl_file, "accounts:\n  - {accessKey: short, secretKey: 12345678}\n")
    with pytest.raises(ValueError, match="accessKey"):
        await start_broker(acl_enable=True, acl_plain_file=str(acl_file))


async def test_the_acl_admin_requests_change_the_file_and_the_rules(
    acl_broker: BrokerApp,
    acl_file: Path,
    clients: Callable[[acl.Credentials | None], RemotingClient],
) -> None:
    admin, address = clients(ADMIN), acl_broker.address
    newcomer = acl.Credentials("newcomer", "new-secret")
    create = request(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, accessKey="newcomer",
                     secretKey="new-secret", defaultTopicPerm="DENY",
                     topicPerms="Fresh=PUB,Other=SUB", groupPerms="FreshGroup=SUB")  # fmt: skip
    refused = await clients(PRODUCER).invoke(address, create)
    assert "Need admin permission" in (refused.remark or "")
    create.ext_fields.pop("Signature")
    assert (await admin.invoke(address, create)).code == ResponseCode.SUCCESS
    assert (await clients(newcomer).invoke(address, send_v2("Fresh"))).code == 0
    guard = acl_broker.acl
    assert guard is not None
    assert config.load(acl_file) == guard.rules.config  # written, and in force
    # a change of one field keeps the others
    change = request(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, accessKey="newcomer",
                     topicPerms="Fresh=DENY")  # fmt: skip
    assert (await admin.invoke(address, change)).code == ResponseCode.SUCCESS
    assert (await clients(newcomer).invoke(address, send_v2("Fresh"))).code == 16
    bad = request(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, accessKey="newcomer",
                  topicPerms="Fresh")  # fmt: skip
    answer = await admin.invoke(address, bad)
    assert (answer.code, answer.remark) == (
        ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED,
        "Parse resource permission failed for topic:Fresh",
    )
    white = request(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, globalWhiteAddrs="127.0.0.1")
    assert (await admin.invoke(address, white)).code == ResponseCode.SUCCESS
    assert (await clients(None).invoke(address, send_v2("Unsigned"))).code == 0
    white.ext_fields = {"globalWhiteAddrs": ""}
    assert (await admin.invoke(address, white)).code == ResponseCode.SUCCESS
    delete = request(RequestCode.DELETE_ACL_CONFIG, accessKey="newcomer")
    assert (await admin.invoke(address, delete)).code == ResponseCode.SUCCESS
    gone = await clients(newcomer).invoke(address, send_v2("Fresh"))
    assert gone.remark == "No acl config for newcomer"
    again = await admin.invoke(
        address, request(RequestCode.DELETE_ACL_CONFIG, accessKey="newcomer")
    )
    assert again.code == ResponseCode.DELETE_ACL_CONFIG_FAILED
    info = await admin.invoke(address, request(RequestCode.GET_BROKER_CLUSTER_ACL_INFO))
    assert info.ext_fields["brokerAddr"] == address
    assert info.ext_fields["clusterName"] == "DefaultCluster"
    assert json.loads(info.ext_fields["version"])["counter"] == 6  # loaded, then 5 changes
    assert [a.access_key for a in config.load(acl_file).accounts] == ["producer1", "admin-one"]
