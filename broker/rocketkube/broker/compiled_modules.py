"""Which of the broker's compiled modules this process uses (logged at start-up).

Each serves in place of its Python sibling (see ``rocketkube.common.compiled``); a broker
built without them, or run with ``ROCKETKUBE_NO_EXTENSIONS=1``, runs the Python siblings."""

from __future__ import annotations

from collections.abc import Callable

from rocketkube.broker.store import records
from rocketkube.common.remoting import frame

__all__ = ["in_use"]

_MODULES: tuple[tuple[str, Callable[[], object]], ...] = (
    ("frame scan", frame.compiled_scan),
    ("answer frames", frame.compiled_templated_frames),
    ("store records", records.compiled_module),
)


def in_use() -> list[str]:
    """The names of the compiled modules in use."""
    return [name for name, loaded in _MODULES if loaded() is not None]
