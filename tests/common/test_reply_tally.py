"""The count of a run's replies for the request metrics (``dispatch.count_replies``):
replies that answer now are tallied by (request code, response code or None), the places
of the others (deferred, awaitable) are left over for their own observation."""

from __future__ import annotations

from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Reply
from rocketkube.common.remoting.deferred import DeferredReply
from rocketkube.common.remoting.dispatch import count_replies
from rocketkube.common.remoting.frame import ResponseTemplate

TEMPLATE = ResponseTemplate(0, {}, ("v",))


Counted = tuple[dict[tuple[int, int | None], int], list[int]]


def counted(codes: list[int], kinds: list[str]) -> Counted:
    run = [RemotingCommand(code) for code in codes]
    made: dict[str, Reply] = {
        "none": None,
        "ok": RemotingCommand.response(0),
        "error": RemotingCommand.response(1, "r"),
        "templated": TEMPLATE.response("x"),
        "deferred": DeferredReply(),
    }
    replies = [made[kind] for kind in kinds]
    tally: dict[tuple[int, int | None], int] = {(310, 0): 5}  # counts already there add up
    rest = count_replies(run, replies, tally)
    return tally, rest


def test_a_run_of_sends_is_one_key() -> None:
    kinds = ["templated"] * 3 + ["deferred", "none"]
    tally, rest = counted([310] * 4 + [10], kinds)
    assert tally == {(310, 0): 8, (10, None): 1}
    assert rest == [3]


def test_each_request_code_and_result_is_its_own_key() -> None:
    kinds = ["ok", "error", "deferred", "ok", "none", "error"]
    tally, rest = counted([310, 310, 310, 10, 34, 310], kinds)
    assert tally == {(310, 0): 6, (310, 1): 2, (10, 0): 1, (34, None): 1}
    assert rest == [2]


def test_a_run_answered_at_once_is_counted_whole() -> None:
    tally, rest = counted([310] * 4, ["templated"] * 4)
    assert (tally, rest) == ({(310, 0): 9}, [])
    tally, rest = counted([310, 310, 10, 310], ["templated", "error", "ok", "templated"])
    assert (tally, rest) == ({(310, 0): 7, (310, 1): 1, (10, 0): 1}, [])
