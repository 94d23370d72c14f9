"""Running a server process: logging to stderr, uvloop when available, clean signals, a
garbage collector tuned for a long-running server, and no orphans: a server started by
``rocketkube local`` or a benchmark stops with it.

It lives in ``common`` because every process entry point needs it (the name server, the
broker, the client's tools, the operator and the launcher) and ``common`` is the one package
they all may import."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, Protocol

from rocketkube.common.settings import SettingsError


def configure_logging(level: str = "INFO") -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def run(main: Coroutine[Any, Any, int]) -> int:
    """Run ``main`` on uvloop if installed, else on the default loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


#: Collector thresholds for a server (CPython's default is 700, 10, 10).
SERVER_GC_THRESHOLDS = (10_000, 20, 20)


def settle_heap() -> None:
    """Freeze what start-up built and make young collections rarer.

    A broker handles messages in chunks of hundreds, and with CPython's default thresholds
    the objects of a chunk in flight make a young collection run for nearly every chunk,
    promoting them to the old generations; full collections then walk the whole start-up
    heap (modules, settings, store tables) several times a minute, stalling the loop each
    time (docs/performance.md, 2026-11-22). Frozen objects are still freed when
    no longer referenced, only never searched for cycles; this changes process-wide state,
    so it belongs in a server's entry point, once start-up is done.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVER_GC_THRESHOLDS)


@contextlib.contextmanager
def settled_heap() -> Iterator[None]:
    """:func:`settle_heap` for a while (a benchmark run inside a longer process, a test),
    then the collector as it was: thresholds restored, the frozen objects thawed."""
    thresholds = gc.get_threshold()
    settle_heap()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


async def serve_until_signalled(
    start: Callable[[], Awaitable[None]], stop: Callable[[], Awaitable[None]]
) -> int:
    """Start, settle the heap (:func:`settle_heap`), wait for SIGTERM or SIGINT, then
    stop cleanly. For a server process's entry point."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    await start()
    settle_heap()
    try:
        await stopping.wait()
    finally:
        logging.getLogger(__name__).info("shutting down")
        await stop()
    return 0


#: Set by a parent for the servers it starts: its pid, so they stop when it dies.
PARENT_PID_ENV = "ROCKETKUBE_PARENT_PID"
_PR_SET_PDEATHSIG = 1


def child_env() -> dict[str, str]:
    """The environment for a server child that must not outlive this process, even when
    this one is killed with SIGKILL and cannot terminate it."""
    return {**os.environ, PARENT_PID_ENV: str(os.getpid())}


def follow_parent() -> None:
    """In a child started with :func:`child_env`: get SIGTERM when the parent dies (Linux
    ``PR_SET_PDEATHSIG``), or stop now if it already has. Elsewhere, nothing."""
    parent = os.environ.pop(PARENT_PID_ENV, None)
    if parent is None or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        logging.getLogger(__name__).warning(
            "cannot follow parent %s: %s", parent, os.strerror(ctypes.get_errno())
        )
        return
    if str(os.getppid()) != parent:  # the parent died before the death signal was armed
        os.kill(os.getpid(), signal.SIGTERM)


class Server(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


def run_server(prog: str, build: Callable[[], Server]) -> int:
    """Build a server from its config and serve until signalled.

    Exit codes: 2 for a config that cannot be read or is invalid (one line on stderr),
    1 when the server cannot start (a port in use), 0 after a clean stop.
    """
    follow_parent()
    try:
        server = build()
    except (OSError, SettingsError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    try:
        return run(serve_until_signalled(server.start, server.stop))
    except OSError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
