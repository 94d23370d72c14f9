"""Bounded zlib inflation of bytes a peer sent (register bodies, message bodies).

A zlib stream is small on the wire and can be anything once inflated: 1 MiB inflates to
1 GiB (deflate's ratio tops out near 1032:1), so a plain ``zlib.decompress`` of peer data
lets any peer make this process allocate a thousand times what it sent. :func:`inflate`
stops producing output one byte past the cap its caller gives and refuses the body, so
what it holds never exceeds the cap by more than that byte (zlib grows its output buffer
as it goes, never to ``max_length`` at once).
"""

from __future__ import annotations

import zlib

from rocketkube.common import errors

__all__ = ["inflate"]


def inflate(data: bytes | bytearray | memoryview, limit: int) -> bytes:
    """``data``, a whole zlib stream, inflated, if that comes to at most ``limit`` bytes.

    Raises :class:`~rocketkube.common.errors.InflateLimitError` when it inflates past
    ``limit``, and ``zlib.error`` on a corrupt or truncated stream, as ``zlib.decompress``
    does; bytes after the end of the stream are ignored, as there.
    """
    if limit < 0:
        raise ValueError(f"inflate limit must not be negative, got {limit}")
    inflater = zlib.decompressobj()
    out = inflater.decompress(data, limit + 1)
    if len(out) > limit:
        raise errors.InflateLimitError(limit)
    if not inflater.eof:
        raise zlib.error("incomplete or truncated stream")
    return out
