"""Crash-safe small files (topics.json, consumerOffset.json, kvConfig.json...).

Writing ``name`` (Java ``MixAll.string2File`` made atomic)::

    name.tmp   <- new content, fsync
    name.bak   <- hard link of the current ``name`` (the previous good version)
    name       <- rename(name.tmp)  (atomic), then fsync the directory

Reading takes ``name``, and falls back to ``name.bak`` when ``name`` is missing, empty or
fails to parse: a crash at any point leaves one of the two complete. A write that fails (a
full disk) leaves ``name`` as it was and removes its ``name.tmp``.

A server keeps such a file current with :class:`BackgroundSaver`, which writes from a worker
thread: on a busy disk one fsync can take seconds, and on the event loop it would hold up
every client meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

_log = logging.getLogger(__name__)

T = TypeVar("T")


def _sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (created, renamed, deleted files) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, keeping the previous version as ``.bak``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _sibling(path, ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError:
        tmp.unlink()  # a full disk: the old file stays, and no half-written copy beside it
        raise
    finally:
        os.close(fd)
    if path.exists():
        bak = _sibling(path, ".bak")
        bak_tmp = _sibling(path, ".bak.tmp")
        with contextlib.suppress(FileNotFoundError):
            bak_tmp.unlink()
        os.link(path, bak_tmp)
        os.replace(bak_tmp, bak)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def load_text(path: Path, parse: Callable[[str], T]) -> T | None:
    """``parse`` of ``path``'s text, else of ``.bak``'s; ``None`` when neither works."""
    for candidate in (path, _sibling(path, ".bak")):
        try:
            text = candidate.read_text("utf-8")
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            _log.warning("cannot read %s: %s", candidate, exc)
            continue
        if not text.strip():
            _log.warning("%s is empty", candidate)
            continue
        try:
            return parse(text)
        except Exception as exc:
            _log.warning("cannot parse %s: %s", candidate, exc)
    return None


def json_bytes(value: Any) -> bytes:
    """``value`` as the indented JSON that RocketMQ's config files hold."""
    return json.dumps(value, indent=2, ensure_ascii=False).encode("utf-8")


def load_json(path: Path) -> Any:
    """:func:`load_text` with ``json.loads``."""
    return load_text(path, json.loads)


class BackgroundSaver:
    """Keeps ``path`` holding the newest ``render()`` of a changing value.

    :meth:`changed` notes a change and returns at once; a task then renders the value on
    the event loop (a consistent snapshot) and :func:`save_bytes` it in a worker thread.
    Writes never overlap, and the changes noted while one runs are folded into the next.
    A failed write is logged and tried again at the next change or :meth:`flush`. Without
    a running event loop (tools, tests driving a table directly) a change is saved at once.
    """

    def __init__(self, path: Path, render: Callable[[], bytes]) -> None:
        self.path = path
        self._render = render
        self._noted = 0
        self._saved = 0
        self._lock = asyncio.Lock()
        self._writing = threading.Lock()
        """Held by the thread writing: a write whose awaiting was cancelled still runs, and
        the next one must not start on the same temporary file meanwhile."""
        self._writer: asyncio.Task[None] | None = None

    @property
    def pending(self) -> bool:
        """Whether a noted change is not known to be on disk yet."""
        return self._saved < self._noted

    def changed(self) -> None:
        self._noted += 1
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._save(self._render())
            self._saved = self._noted
            return
        if self._writer is None:
            self._writer = loop.create_task(self._write_in_background(), name=f"save {self.path}")

    async def flush(self) -> None:
        """Return once every change noted so far is on disk; raise what kept one off it."""
        await self._write_pending()

    async def _write_in_background(self) -> None:
        try:
            await self._write_pending()
        except Exception as exc:
            _log.error("cannot save %s (tried again at the next change): %s", self.path, exc)
        finally:
            self._writer = None

    async def _write_pending(self) -> None:
        async with self._lock:
            while self._saved < self._noted:
                noted = self._noted
                await asyncio.to_thread(self._save, self._render())
                self._saved = noted

    def _save(self, data: bytes) -> None:
        with self._writing:
            save_bytes(self.path, data)
