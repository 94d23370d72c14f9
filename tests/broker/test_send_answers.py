"""The answers of stored sends (``send.answers``): a run that waits for nothing and the
sends that waited for a flush are answered from a template naming each send's message
ids (joined for a batch), queue and queue offset, with each one's latency and, for a
run, the messages and body bytes tallied per topic."""

from __future__ import annotations

from rocketkube.broker.processors.send.answers import Reply, stored_answers, waited_answers
from rocketkube.broker.store import AppendResult, InnerMessage, records
from rocketkube.common.remoting.frame import ResponseTemplate, TemplatedResponse

TEMPLATE = ResponseTemplate(0, {"MSG_REGION": "r", "TRACE_ON": "true"}, ("msgId", "queueId", "o"))


def ready(topic: str, queue_id: int, count: int, started: float) -> records.PreparedSend:
    messages = tuple(InnerMessage(topic, queue_id, b"x" * 3) for _ in range(count))
    return records.PreparedSend(messages, topic, queue_id, 3 * count, False, started)


def test_a_run_is_answered_in_order_with_its_latencies_and_tallies() -> None:
    sends = [
        ready("A", 0, 1, 9.5),
        ready("A", 1, 3, 9.25),  # a batch: its ids joined
        ready("B", 2, 1, 9.0),
        ready("A", 0, 2, 8.0),
    ]
    appended = [AppendResult(100 * n, 50, n, f"ID{n:04X}", 1_700_000_000_000) for n in range(7)]
    replies: list[Reply | None] = [None] * (len(sends) + 1)
    placed = [(n + 1, send) for n, send in enumerate(sends)]
    latencies: list[float] = []
    tally: dict[str, list[int]] = {}
    stored_answers(appended, placed, replies, TEMPLATE, 10.0, latencies, tally)
    assert replies[0] is None
    answers = [reply for reply in replies[1:] if isinstance(reply, TemplatedResponse)]
    assert len(answers) == len(sends)
    assert [a.code for a in answers] == [0, 0, 0, 0]
    assert [a.ext_fields["msgId"] for a in answers] == [
        "ID0000",
        "ID0001,ID0002,ID0003",
        "ID0004",
        "ID0005,ID0006",
    ]
    assert [a.ext_fields["queueId"] for a in answers] == ["0", "1", "2", "0"]
    assert [a.ext_fields["o"] for a in answers] == ["0", "1", "4", "5"]
    assert answers[0].ext_fields["MSG_REGION"] == "r"
    assert latencies == [0.5, 0.75, 1.0, 2.0]
    assert tally == {"A": [6, 18], "B": [1, 3]}


def test_the_answers_after_a_flush_name_each_sends_messages() -> None:
    appended = [AppendResult(100 * n, 50, n, f"ID{n:04X}", 1) for n in range(6)]
    latencies: list[float] = []
    answers = waited_answers(
        appended, [0, 1, 4], [1, 4, 6], [3, 0, 7], [9.5, 9.0, 8.0], TEMPLATE, 10.0, latencies
    )
    templated = [a for a in answers if isinstance(a, TemplatedResponse)]
    assert len(templated) == 3
    assert latencies == [0.5, 1.0, 2.0]
    assert b'"msgId":"ID0001,ID0002,ID0003"' in templated[1].json_frame(3)
    assert [a.ext_fields["queueId"] for a in templated] == ["3", "0", "7"]
    assert [a.ext_fields["o"] for a in templated] == ["0", "1", "4"]
