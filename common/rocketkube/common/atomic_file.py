"""Crash-safe small files: write to a temp file, fsync, keep the old one as ``.bak``, rename.

A reader falls back to ``.bak`` when the main file is missing or unreadable, so a crash
at any point leaves either the old or the new content, never a torn file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def write_atomic(path: str | os.PathLike[str], data: bytes, *, keep_backup: bool = True) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    if keep_backup and target.exists():
        os.replace(target, target.with_name(target.name + ".bak"))
    os.replace(tmp, target)
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read_with_backup(path: str | os.PathLike[str], parse: Callable[[bytes], T]) -> T | None:
    """Parse the file, or its ``.bak`` if the file is missing or does not parse."""
    target = Path(path)
    for candidate in (target, target.with_name(target.name + ".bak")):
        with contextlib.suppress(FileNotFoundError):
            data = candidate.read_bytes()
            try:
                return parse(data)
            except ValueError:
                continue
    return None
