"""A small file system of its own for tests that fill a disk: a tmpfs mounted on a
directory (root on Linux), and a filler file that takes the rest of its space.

``mount(2)`` is called directly, so no ``mount`` binary is needed; where mounting is not
permitted (not root, a container without CAP_SYS_ADMIN) the test is skipped, saying so.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["fill", "tmpfs"]

_MNT_DETACH = 2
_libc = ctypes.CDLL(None, use_errno=True)


@contextlib.contextmanager
def tmpfs(target: Path, size: int) -> Iterator[Path]:
    """A tmpfs of ``size`` bytes mounted on ``target`` (created) while the block runs."""
    target.mkdir(parents=True, exist_ok=True)
    options = f"size={size},mode=0755".encode()
    if _libc.mount(b"tmpfs", bytes(target), b"tmpfs", 0, options) != 0:
        code = ctypes.get_errno()
        if code in (errno.EPERM, errno.EACCES):
            pytest.skip(f"mounting a tmpfs is not permitted here: {os.strerror(code)}")
        raise OSError(code, f"mount tmpfs on {target}: {os.strerror(code)}")
    try:
        yield target
    finally:
        if _libc.umount2(bytes(target), _MNT_DETACH) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"umount {target}: {os.strerror(code)}")


def fill(path: Path, chunk: int = 1 << 16) -> int:
    """Write ``path`` until its file system is full (down to its last block); the bytes
    written."""
    written = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        while chunk >= 512:
            try:
                written += os.write(fd, bytes(chunk))
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                chunk //= 2
    finally:
        os.close(fd)
    return written
