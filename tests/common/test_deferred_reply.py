"""DeferredReply: listeners are told in the resolving call, once; it can be awaited.
DeferredGroup: members given their replies together, its listeners told once after."""

from __future__ import annotations

import asyncio
import logging

import pytest

from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.deferred import DeferredGroup, DeferredReply


def test_listeners_are_told_in_the_resolving_call_and_once() -> None:
    reply = DeferredReply()
    told: list[tuple[str, RemotingCommand | None]] = []
    reply.add_listener(lambda given: told.append(("first", given)))
    reply.add_listener(lambda given: told.append(("second", given)))
    assert not reply.done()
    assert told == []
    answer = RemotingCommand.response(remark="stored")
    reply.resolve(answer)
    assert told == [("first", answer), ("second", answer)]
    reply.resolve(RemotingCommand.response(remark="again"))
    assert told == [("first", answer), ("second", answer)]
    assert reply.done()


def test_a_listener_added_after_resolve_is_told_at_once() -> None:
    reply = DeferredReply()
    reply.resolve(None)
    told: list[RemotingCommand | None] = [RemotingCommand.response()]
    reply.add_listener(lambda given: told.__setitem__(0, given))
    assert told == [None]


def test_a_failing_listener_is_logged_and_the_others_are_told(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reply = DeferredReply()
    told: list[RemotingCommand | None] = []

    def broken(_: RemotingCommand | None) -> None:
        raise RuntimeError("listener broke")

    reply.add_listener(broken)
    reply.add_listener(told.append)
    with caplog.at_level(logging.ERROR):
        reply.resolve(None)
    assert told == [None]
    assert "a reply listener failed" in caplog.text


async def test_it_can_be_awaited_before_and_after_it_is_resolved() -> None:
    reply = DeferredReply()
    answer = RemotingCommand.response(remark="later")
    asyncio.get_running_loop().call_later(0.01, reply.resolve, answer)
    assert await asyncio.wait_for(reply, 10) is answer
    assert await reply is answer


def test_a_group_gives_each_member_its_reply_then_tells_its_listeners_once() -> None:
    group = DeferredGroup()
    first, second = group.member(), group.member()
    assert (first.group, second.group) == (group, group)
    told: list[str] = []
    first.add_listener(lambda given: told.append(f"member {given and given.remark}"))
    group.add_listener(lambda: told.append(f"group {first.result()} {second.result()}"))
    with pytest.raises(asyncio.InvalidStateError):
        first.result()
    one, two = RemotingCommand.response(remark="one"), RemotingCommand.response(remark="two")
    group.resolve([second, first], [two, one])
    assert told == ["member one", f"group {one} {two}"]
    assert group.done()
    assert (first.result(), second.result()) == (one, two)
    group.resolve([first, second], [two, one])  # ignored
    assert first.result() is one
    late: list[bool] = []
    group.add_listener(lambda: late.append(True))
    assert late == [True]


def test_a_group_refuses_replies_that_do_not_match_its_members() -> None:
    group, other = DeferredGroup(), DeferredGroup()
    member, _, stranger = group.member(), group.member(), other.member()
    with pytest.raises(ValueError, match="1 members and 1 replies given to a group of 2"):
        group.resolve([member], [None])
    with pytest.raises(ValueError, match="another group"):
        other.resolve([member], [None])
    assert [r.done() for r in (member, stranger, group, other)] == [False] * 4


def test_a_failing_group_listener_is_logged_and_the_others_are_told(
    caplog: pytest.LogCaptureFixture,
) -> None:
    group = DeferredGroup()
    member = group.member()
    told: list[RemotingCommand | None] = []

    def broken() -> None:
        raise RuntimeError("listener broke")

    group.add_listener(broken)
    group.add_listener(lambda: told.append(member.result()))
    with caplog.at_level(logging.ERROR):
        group.resolve([member], [None])
    assert told == [None]
    assert "a reply listener failed" in caplog.text
