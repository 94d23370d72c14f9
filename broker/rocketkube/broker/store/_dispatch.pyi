"""Types of the compiled dispatch loop (``_dispatch.pyx``)."""

from collections.abc import Sequence

from rocketkube.broker.store import model
from rocketkube.broker.store.consume_queue import ConsumeQueue
from rocketkube.broker.store.dispatch import Arrived, Dispatcher

def dispatch_run(
    dispatcher: Dispatcher,
    messages: Sequence[model.InnerMessage],
    results: Sequence[model.AppendResult],
    keyed: list[tuple[int, int, int]] | None,
    arrived: Arrived,
) -> None: ...
def unready(
    messages: Sequence[model.InnerMessage],
    queues: dict[tuple[str, int], ConsumeQueue],
    queue_offsets: dict[tuple[str, int], int],
) -> list[tuple[str, int]]: ...
