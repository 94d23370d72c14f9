"""The request signature of RocketMQ 4.x plain ACL (``rocketkube.common.acl``): fixed
vectors computed by hand, the order of the fields, and the SDK's remoting client signing
every request it sends over a real socket."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac

import pytest

from rocketkube.common import acl
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply
from rocketkube.common.remoting.server import RemotingServer


def by_hand(data: bytes, secret: str) -> str:
    return base64.b64encode(hmac.new(secret.encode(), data, hashlib.sha1).digest()).decode()


def test_the_vector_of_the_protocol_document() -> None:
    fields = {"AccessKey": "RocketMQ", "queueId": "0", "topic": "T"}
    assert acl.content(fields, b"hi") == b"RocketMQ0Thi"
    assert acl.signature(b"RocketMQ0Thi", "12345678") == "dJue2dJSl/TBygHPbqrM4/as1Mk="


def test_values_are_joined_in_key_order_without_the_signature_then_the_body() -> None:
    fields = {"b": "TopicA", "a": "PG", "Signature": "old", "AccessKey": "ak1234", "d": "4"}
    # Java's String.compareTo: upper case before lower case.
    assert acl.content(fields, b"\x00body") == b"ak1234PGTopicA4\x00body"
    expected = by_hand(b"ak1234PGTopicA4\x00body", "secret99")
    assert acl.signature(acl.content(fields, b"\x00body"), "secret99") == expected


def test_keys_sort_as_java_strings_do() -> None:
    # U+1F600 sorts after U+FF5E by code point, before it by UTF-16 code unit (D83D).
    fields = {"\uff5e": "y", "\U0001f600": "x"}
    assert acl.content(fields) == b"xy"


def test_sign_adds_the_access_key_the_token_and_a_signature_over_both() -> None:
    shared = {"topic": "T", "queueId": "0"}
    request = RemotingCommand.request(RequestCode.PULL_MESSAGE, shared, b"hi")
    acl.sign(request, acl.Credentials("RocketMQ", "12345678", security_token="tok"))
    fields = request.ext_fields
    assert fields["AccessKey"] == "RocketMQ"
    assert fields["SecurityToken"] == "tok"
    assert fields["Signature"] == by_hand(b"RocketMQtok0Thi", "12345678")
    assert shared == {"topic": "T", "queueId": "0"}  # the caller's dict is left alone


def test_signing_again_replaces_the_signature() -> None:
    request = RemotingCommand.request(RequestCode.PULL_MESSAGE, {"topic": "T"})
    credentials = acl.Credentials("RocketMQ", "12345678")
    acl.sign(request, credentials)
    first = request.ext_fields["Signature"]
    acl.sign(request, credentials)
    assert request.ext_fields["Signature"] == first


@pytest.mark.parametrize(("version", "signed"), [(399, False), (401, True)])
def test_the_unique_key_flag_is_signed_by_clients_after_4_9_3(version: int, signed: bool) -> None:
    request = RemotingCommand.request(RequestCode.QUERY_MESSAGE, {"topic": "T"})
    request.ext_fields["_UNIQUE_KEY_QUERY"] = "true"
    request.version = version
    assert acl.request_content(request) == (b"trueT" if signed else b"T")


def test_credentials_need_both_keys_and_keep_the_secret_out_of_repr() -> None:
    with pytest.raises(ValueError, match="access key and a secret key"):
        acl.Credentials("ak", "")
    assert "s3cret" not in repr(acl.Credentials("access", "s3cret"))
    assert acl.credentials_of(("access", "s3cret")) == acl.Credentials("access", "s3cret")
    assert acl.credentials_of(None) is None


class Recorder:
    """A server that keeps every request it receives."""

    def __init__(self) -> None:
        self.requests: list[RemotingCommand] = []
        self.received = asyncio.Event()

    def handle(self, conn: Connection, request: RemotingCommand) -> Reply:
        self.requests.append(request)
        self.received.set()
        return RemotingCommand.response(ResponseCode.SUCCESS)


async def test_the_remoting_client_signs_every_request_it_sends() -> None:
    recorder = Recorder()
    server = RemotingServer(recorder, "127.0.0.1", 0)
    await server.start()
    client = RemotingClient(credentials=acl.Credentials("RocketMQ", "12345678"))
    try:
        address = f"127.0.0.1:{server.port}"
        request = RemotingCommand.request(RequestCode.QUERY_MESSAGE, {"topic": "T"}, b"hi")
        assert (await client.invoke(address, request)).code == ResponseCode.SUCCESS
        await client.invoke_oneway(
            address, RemotingCommand.request(RequestCode.HEART_BEAT, body=b"{}")
        )
        while len(recorder.requests) < 2:
            recorder.received.clear()
            await recorder.received.wait()
    finally:
        await client.close()
        await server.stop()
    for received in recorder.requests:
        fields = received.ext_fields
        assert fields["AccessKey"] == "RocketMQ"
        expected = by_hand(acl.content(fields, received.body), "12345678")
        assert fields["Signature"] == expected
    assert recorder.requests[0].ext_fields["Signature"] == by_hand(b"RocketMQThi", "12345678")
