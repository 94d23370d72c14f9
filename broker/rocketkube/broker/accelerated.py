"""Which of the broker's compiled accelerators this process uses (logged at start-up).

Each is a twin of a Python loop (see ``rocketkube.common.accelerators``); a broker built
without them, or run with ``ROCKETKUBE_NO_EXTENSIONS=1``, runs the Python loops."""

from __future__ import annotations

from collections.abc import Callable

from rocketkube.broker.store import records
from rocketkube.common.remoting import frame

__all__ = ["accelerated"]

_TWINS: tuple[tuple[str, Callable[[], object]], ...] = (
    ("frame scan", frame.compiled_scan),
    ("answer frames", frame.compiled_templated_frames),
    ("store records", records.compiled),
)


def accelerated() -> list[str]:
    """The names of the compiled accelerators in use."""
    return [name for name, twin in _TWINS if twin() is not None]
