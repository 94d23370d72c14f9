"""Crash-safe small files (topics.json, consumerOffset.json, kvConfig.json...).

Writing ``name`` (Java ``MixAll.string2File`` made atomic)::

    name.tmp   <- new content, fsync
    name.bak   <- hard link of the current ``name`` (the previous good version)
    name       <- rename(name.tmp)  (atomic), then fsync the directory

Reading takes ``name``, and falls back to ``name.bak`` when ``name`` is missing, empty or
fails to parse: a crash at any point leaves one of the two complete.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
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


def save_text(path: Path, text: str) -> None:
    save_bytes(path, text.encode("utf-8"))


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


def save_json(path: Path, value: Any) -> None:
    """:func:`save_text` of ``value`` as indented JSON."""
    save_text(path, json.dumps(value, indent=2, ensure_ascii=False))


def load_json(path: Path) -> Any:
    """:func:`load_text` with ``json.loads``."""
    return load_text(path, json.loads)
