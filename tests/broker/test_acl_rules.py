"""The broker's plain ACL rules without a socket: ``plain_acl.yml`` as RocketMQ writes
it, the white address forms, the permission each request code needs, and the validator's
order (``rocketkube.broker.acl``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rocketkube.broker.acl import AclConfigError, Rules, addresses, config, permission
from rocketkube.broker.acl.permission import Perm
from rocketkube.common import acl
from rocketkube.common.protocol.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from rocketkube.common.remoting.codes import RequestCode
from rocketkube.common.remoting.command import RemotingCommand

#: RocketMQ 4.9's distributed conf/plain_acl.yml, as shipped.
ROCKETMQ_EXAMPLE = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      # the group should convert to retry topic
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    # if it is admin, it could access all resources
    admin: true
"""


def test_rocketmq_s_example_file_reads(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text(ROCKETMQ_EXAMPLE)
    loaded = config.load(path)
    assert loaded.global_white_remote_addresses == ("10.10.103.*", "192.168.0.*")
    first, second = loaded.accounts
    assert first.access_key == "RocketMQ"
    assert first.secret_key == "12345678"  # a YAML int, read as its text
    assert first.white_remote_address == ""
    assert not first.admin
    assert (first.default_topic_perm, first.default_group_perm) == ("DENY", "SUB")
    assert first.topic_perms == ("topicA=DENY", "topicB=PUB|SUB", "topicC=SUB")
    assert first.group_perms == ("groupA=DENY", "groupB=PUB|SUB", "groupC=SUB")
    assert second.admin
    assert second.white_remote_address == "192.168.1.*"
    assert second.default_topic_perm == "DENY"  # absent: DENY
    assert config.parse(yaml.safe_load(config.dump(loaded))) == loaded


@pytest.mark.parametrize(
    ("document", "fault"),
    [
        ("", "no data"),
        ("accounts: {a: 1}", "must be a list"),
        ("accounts:\n  - accessKey: short\n    secretKey: 12345678\n", "accessKey"),
        ("accounts:\n  - accessKey: abcdefg\n    secretKey: 123\n", "secretKey"),
        (
            "accounts:\n  - {accessKey: abcdefg, secretKey: 12345678}\n"
            "  - {accessKey: abcdefg, secretKey: 87654321}\n",
            "listed twice",
        ),
        (
            "accounts:\n  - {accessKey: abcdefg, secretKey: 12345678, topicPerms: [topicA]}\n",
            "Parse resource permission failed for topic:topicA",
        ),
        ("globalWhiteRemoteAddresses: [192.168.1.300-400]\n", "range"),
        ("globalWhiteRemoteAddresses: [not-an-address]\n", "range"),
        ("globalWhiteRemoteAddresses: [192.168.*.1]\n", "range"),
        ("globalWhiteRemoteAddresses:\n  - 192.168.0.{1,x}\n", "not an IP address"),
        ("accounts: [\n", "not YAML"),
    ],
)
def test_an_unusable_file_is_refused_with_its_fault(
    tmp_path: Path, document: str, fault: str
) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text(document)
    with pytest.raises(AclConfigError, match=fault.replace("|", r"\|")):
        config.load(path)


@pytest.mark.parametrize(
    ("pattern", "matched", "unmatched"),
    [
        ("*", ["1.2.3.4", "::1"], []),
        ("*.*.*.*", ["1.2.3.4"], []),
        ("", [], ["127.0.0.1"]),
        ("192.168.0.1", ["192.168.0.1"], ["192.168.0.10", "192.168.0.2"]),
        ("192.168.0.1,10.0.0.2", ["192.168.0.1", "10.0.0.2"], ["10.0.0.3"]),
        ("192.168.1.{1,2,30}", ["192.168.1.1", "192.168.1.30"], ["192.168.1.3", "192.168.2.1"]),
        ("192.168.0.*", ["192.168.0.0", "192.168.0.255"], ["192.168.1.1", "192.169.0.1"]),
        ("192.168.*", ["192.168.7.9"], ["192.169.7.9"]),
        ("192.168.*.*", ["192.168.7.9"], ["10.168.7.9"]),
        ("192.168.1.1-100", ["192.168.1.1", "192.168.1.100"], ["192.168.1.101", "192.168.1.0"]),
        ("192.168.1-10.*", ["192.168.1.5", "192.168.10.255"], ["192.168.11.1"]),
        ("::1", ["::1"], ["127.0.0.1"]),
    ],
)
def test_white_address_forms(pattern: str, matched: list[str], unmatched: list[str]) -> None:
    match = addresses.matcher(pattern)
    assert [host for host in matched if match(host)] == matched
    assert [host for host in unmatched if match(host)] == []


def test_perms_as_rocketmq_checks_them() -> None:
    assert permission.parse_perm("PUB|SUB") == permission.parse_perm("SUB|PUB") == Perm(12)
    assert permission.parse_perm("nonsense") is Perm.DENY
    assert permission.check_permission(Perm.PUB, Perm.PUB | Perm.SUB)
    assert not permission.check_permission(Perm.SUB, Perm.PUB)
    assert not permission.check_permission(Perm.PUB, Perm.PUB | Perm.DENY)
    assert permission.check_permission(Perm.ANY, Perm.SUB)


def request(code: int, body: bytes = b"", **fields: str) -> RemotingCommand:
    return RemotingCommand.request(code, dict(fields), body)


def heartbeat() -> bytes:
    subscriptions = [SubscriptionData(topic="TopicA"), SubscriptionData(topic="%RETRY%G1")]
    consumer = ConsumerData(group_name="G1", subscriptions=subscriptions)
    return HeartbeatData(client_id="c", consumers=[consumer], producer_groups=["P"]).encode()


@pytest.mark.parametrize(
    ("command", "needed"),
    [
        (request(RequestCode.SEND_MESSAGE, topic="T", producerGroup="P"), {"T": Perm.PUB}),
        (request(RequestCode.SEND_MESSAGE_V2, a="P", b="T"), {"T": Perm.PUB}),
        (request(RequestCode.SEND_BATCH_MESSAGE, a="P", b="T"), {"T": Perm.PUB}),
        (request(RequestCode.SEND_MESSAGE_V2, a="G", b="%RETRY%G"), {"%RETRY%G": Perm.SUB}),
        (request(RequestCode.SEND_MESSAGE_V2, a="P", b="RMQ_SYS_TRACE_TOPIC"), {}),
        (request(RequestCode.CONSUMER_SEND_MSG_BACK, group="G"), {"%RETRY%G": Perm.SUB}),
        (
            request(RequestCode.PULL_MESSAGE, topic="T", consumerGroup="G"),
            {"T": Perm.SUB, "%RETRY%G": Perm.SUB},
        ),
        (
            request(RequestCode.PULL_MESSAGE, topic="%RETRY%G", consumerGroup="G"),
            {"%RETRY%G": Perm.SUB},
        ),
        (request(RequestCode.QUERY_MESSAGE, topic="T"), {"T": Perm.SUB}),
        (
            request(RequestCode.HEART_BEAT, heartbeat()),
            {"%RETRY%G1": Perm.SUB, "TopicA": Perm.SUB},
        ),
        (request(RequestCode.UNREGISTER_CLIENT, consumerGroup="G"), {"%RETRY%G": Perm.SUB}),
        (request(RequestCode.UNREGISTER_CLIENT, producerGroup="P", consumerGroup=""), {}),
        (
            request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, consumerGroup="G"),
            {"%RETRY%G": Perm.SUB},
        ),
        (
            request(RequestCode.UPDATE_CONSUMER_OFFSET, topic="T", consumerGroup="G"),
            {"T": Perm.SUB, "%RETRY%G": Perm.SUB},
        ),
        (
            request(RequestCode.QUERY_CONSUMER_OFFSET, topic="T", consumerGroup="G"),
            {"T": Perm.SUB, "%RETRY%G": Perm.SUB},
        ),
        (request(RequestCode.END_TRANSACTION, producerGroup="P"), {}),
    ],
)
def test_what_each_request_needs(command: RemotingCommand, needed: dict[str, Perm]) -> None:
    assert permission.needs(command) == needed


ACCOUNTS = config.AclConfig(
    global_white_remote_addresses=("10.0.0.*",),
    accounts=(
        config.Account(
            "producer1",
            "secret-p",
            default_topic_perm="DENY",
            default_group_perm="SUB",
            topic_perms=("TopicA=PUB", "TopicB=PUB|SUB", "Hidden=DENY"),
            group_perms=("Locked=DENY",),
        ),
        config.Account("trusted1", "secret-t", white_remote_address="192.168.1.{1,2}"),
        config.Account("admin1", "secret-a", admin=True),
    ),
)


def signed(command: RemotingCommand, access_key: str, secret: str) -> RemotingCommand:
    acl.sign(command, acl.Credentials(access_key, secret))
    return command


def refusal(command: RemotingCommand, host: str = "127.0.0.1") -> str | None:
    return Rules(ACCOUNTS).refusal(host, command)


def send(topic: str) -> RemotingCommand:
    return request(RequestCode.SEND_MESSAGE_V2, b"body", a="P", b=topic)


def test_the_validator_order_and_its_remarks() -> None:
    assert refusal(send("TopicA")) == "No accessKey is configured"
    assert refusal(send("TopicA"), "10.0.0.7") is None  # globally white-listed
    assert refusal(signed(send("TopicA"), "nobody1", "x")) == "No acl config for nobody1"
    forged = signed(send("TopicA"), "producer1", "not-the-secret")
    assert refusal(forged) == "Check signature failed for accessKey=producer1"
    tampered = signed(send("TopicA"), "producer1", "secret-p")
    tampered.body = b"other"
    assert refusal(tampered) == "Check signature failed for accessKey=producer1"
    assert refusal(signed(send("TopicA"), "producer1", "secret-p")) is None
    assert refusal(signed(send("TopicB"), "producer1", "secret-p")) is None
    assert refusal(signed(send("Hidden"), "producer1", "secret-p")) == (
        "No permission for topic:Hidden: PUB needed, accessKey=producer1 has DENY"
    )
    assert refusal(signed(send("TopicC"), "producer1", "secret-p")) == (
        "No default permission for topic:TopicC: PUB needed, accessKey=producer1 has DENY"
    )
    pull = request(RequestCode.PULL_MESSAGE, topic="TopicB", consumerGroup="Locked")
    assert refusal(signed(pull, "producer1", "secret-p")) == (
        "No permission for group:Locked: SUB needed, accessKey=producer1 has DENY"
    )


def test_an_account_s_white_address_needs_no_signature() -> None:
    unsigned = send("Anything")
    unsigned.ext_fields["AccessKey"] = "trusted1"
    assert refusal(unsigned, "192.168.1.2") is None
    assert refusal(unsigned, "192.168.1.3") == "Check signature failed for accessKey=trusted1"


def test_admin_requests_need_an_admin_account() -> None:
    create = request(RequestCode.UPDATE_AND_CREATE_TOPIC, topic="T")
    assert refusal(signed(create, "producer1", "secret-p")) == (
        f"Need admin permission for request code={RequestCode.UPDATE_AND_CREATE_TOPIC}, "
        "but accessKey=producer1 is not"
    )
    admin = request(RequestCode.UPDATE_AND_CREATE_TOPIC, topic="T")
    assert refusal(signed(admin, "admin1", "secret-a")) is None
    # an admin without perms listed may do anything
    assert refusal(signed(send("Whatever"), "admin1", "secret-a")) is None
