"""Types of the compiled dispatch loop (``_dispatch.pyx``)."""

from collections.abc import Sequence

from rocketkube.broker.store import model
from rocketkube.broker.store.dispatch import Arrived, Dispatcher

def dispatch_run(
    dispatcher: Dispatcher,
    messages: Sequence[model.InnerMessage],
    results: Sequence[model.AppendResult],
    keyed: list[tuple[int, int, int]] | None,
    arrived: Arrived,
) -> None: ...
