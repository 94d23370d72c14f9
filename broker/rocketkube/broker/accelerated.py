"""Which of the broker's compiled accelerators this process uses (logged at start-up).

Each is a twin of a Python loop (see ``rocketkube.common.accelerators``); a broker built
without them, or run with ``ROCKETKUBE_NO_EXTENSIONS=1``, runs the Python loops."""

from __future__ import annotations

from rocketkube.broker.processors import send, send_answers
from rocketkube.broker.store import commitlog, dispatch, index
from rocketkube.common.remoting import dispatch as dispatcher
from rocketkube.common.remoting import frame

__all__ = ["accelerated"]


def accelerated() -> list[str]:
    """The names of the compiled accelerators in use."""
    names: list[str] = []
    if frame.compiled_scan() is not None:
        names.append("frame scan")
    if dispatcher.compiled_tally_replies() is not None:
        names.append("reply tally")
    if commitlog.compiled_encode_run() is not None:
        names.append("commit log append")
    if dispatch.compiled_dispatch_run() is not None:
        names.append("dispatch")
    if index.compiled_put_many() is not None:
        names.append("index append")
    if send.compiled_prepare_plain() is not None:
        names.append("plain send preparation")
    if send_answers.compiled_stored_answers() is not None:
        names.append("stored answers")
    return names
