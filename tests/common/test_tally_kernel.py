"""The compiled count of a run's replies (``_tally.pyx``) is ``dispatch.count_replies``'s:
the same tallies by (request code, response code) and the same replies left over."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Reply
from rocketkube.common.remoting.deferred import DeferredReply
from rocketkube.common.remoting.dispatch import (
    TallyReplies,
    compiled_tally_replies,
    count_replies,
)
from rocketkube.common.remoting.frame import ResponseTemplate

COMPILED = compiled_tally_replies()
pytestmark = pytest.mark.skipif(COMPILED is None, reason="accelerators not built")
TEMPLATE = ResponseTemplate(0, {}, ("v",))


Counted = tuple[dict[tuple[int, int | None], int], list[int]]


def counted(count: TallyReplies, codes: list[int], kinds: list[str]) -> Counted:
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
    rest = count(run, replies, tally)
    return tally, rest


@given(
    st.lists(
        st.tuples(
            st.sampled_from([310, 10, 34]),
            st.sampled_from(["none", "ok", "error", "templated", "deferred"]),
        ),
        max_size=40,
    )
)
def test_any_run_is_counted_alike(pairs: list[tuple[int, str]]) -> None:
    assert COMPILED is not None
    codes = [code for code, _ in pairs]
    kinds = [kind for _, kind in pairs]
    assert counted(COMPILED, codes, kinds) == counted(count_replies, codes, kinds)


def test_a_run_of_sends_is_one_key() -> None:
    assert COMPILED is not None
    kinds = ["templated"] * 3 + ["deferred", "none"]
    tally, rest = counted(COMPILED, [310] * 4 + [10], kinds)
    assert tally == {(310, 0): 8, (10, None): 1}
    assert rest == [3]
