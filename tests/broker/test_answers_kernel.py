"""The compiled answers of a stored run (``_answers.pyx``) are ``stored_answers``'s.

Both answer the same runs (single messages, batches, several topics): the same replies
(code, frame), the same latencies and the same tallies."""

from __future__ import annotations

import pytest

from rocketkube.broker.processors.send_answers import (
    Reply,
    StoredAnswers,
    WaitedAnswers,
    compiled_stored_answers,
    compiled_waited_answers,
    stored_answers,
    waited_answers,
)
from rocketkube.broker.processors.send_state import Ready
from rocketkube.broker.store import AppendResult, InnerMessage
from rocketkube.common.remoting.frame import ResponseTemplate, TemplatedResponse

COMPILED = compiled_stored_answers()
pytestmark = pytest.mark.skipif(COMPILED is None, reason="accelerators not built")
TEMPLATE = ResponseTemplate(0, {"MSG_REGION": "r", "TRACE_ON": "true"}, ("msgId", "queueId", "o"))


def ready(topic: str, queue_id: int, count: int, started: float) -> Ready:
    messages = tuple(InnerMessage(topic, queue_id, b"x" * 3) for _ in range(count))
    return Ready(messages, topic, queue_id, 3 * count, False, started)


def answer(run: StoredAnswers, sends: list[Ready]) -> tuple[object, ...]:
    appended = [
        AppendResult(100 * n, 50, n, f"ID{n:04X}", 1_700_000_000_000)
        for n in range(sum(len(s.messages) for s in sends))
    ]
    replies: list[Reply | None] = [None] * (len(sends) + 1)
    placed = [(n + 1, send) for n, send in enumerate(sends)]
    latencies: list[float] = []
    tally: dict[str, list[int]] = {}
    run(appended, placed, replies, TEMPLATE, 10.0, latencies, tally)
    frames = []
    for reply in replies[1:]:
        assert type(reply) is TemplatedResponse
        frames.append((reply.code, reply.json_frame(7), reply.ext_fields))
    return replies[0], frames, latencies, tally


def test_runs_are_answered_alike() -> None:
    assert COMPILED is not None
    sends = [
        ready("A", 0, 1, 9.5),
        ready("A", 1, 3, 9.25),  # a batch: its ids joined
        ready("B", 2, 1, 9.0),
        ready("A", 0, 2, 8.0),
    ]
    compiled = answer(COMPILED, sends)
    assert compiled == answer(stored_answers, sends)
    _, frames, latencies, tally = compiled
    assert latencies == [0.5, 0.75, 1.0, 2.0]
    assert tally == {"A": [6, 18], "B": [1, 3]}
    assert frames[1][2]["msgId"] == "ID0001,ID0002,ID0003"  # type: ignore[index]
    assert frames[1][2]["o"] == "1"  # type: ignore[index]


def test_the_answers_after_a_flush_are_made_alike() -> None:
    waited = compiled_waited_answers()
    assert waited is not None
    appended = [AppendResult(100 * n, 50, n, f"ID{n:04X}", 1) for n in range(6)]
    lists = ([0, 1, 4], [1, 4, 6], [3, 0, 7], [9.5, 9.0, 8.0])  # firsts, ends, queues, started

    def made(run: WaitedAnswers) -> tuple[list[object], list[float]]:
        latencies: list[float] = []
        answers = run(appended, *lists, TEMPLATE, 10.0, latencies)
        templated = [a for a in answers if isinstance(a, TemplatedResponse)]
        assert len(templated) == len(answers)
        return [(a.code, a.json_frame(3)) for a in templated], latencies

    compiled = made(waited)
    assert compiled == made(waited_answers)
    frames, latencies = compiled
    assert latencies == [0.5, 1.0, 2.0]
    assert b'"msgId":"ID0001,ID0002,ID0003"' in frames[1][1]  # type: ignore[index]
