"""Types of the compiled answers of a stored run (``_answers.pyx``)."""

from collections.abc import Sequence

from rocketkube.broker.processors.send_answers import Reply
from rocketkube.broker.processors.send_state import Ready
from rocketkube.broker.store import AppendResult
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.frame import ResponseTemplate

def stored_answers(
    appended: Sequence[AppendResult],
    ready: list[tuple[int, Ready]],
    replies: list[Reply | None],
    template: ResponseTemplate,
    now: float,
    latencies: list[float],
    tally: dict[str, list[int]],
) -> None: ...
def waited_answers(
    appended: Sequence[AppendResult],
    firsts: list[int],
    ends: list[int],
    queue_ids: list[int],
    started: list[float],
    template: ResponseTemplate,
    now: float,
    latencies: list[float],
) -> list[RemotingCommand | None]: ...
