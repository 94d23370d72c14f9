"""A TCP proxy on 127.0.0.1 that holds each chunk a client sends for a while before passing
it on: a slow network path to a server, for tests of what must not be answered before the
server behind it has heard something (a broker registering a topic it just created)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

__all__ = ["slow_proxy"]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, lag: float) -> None:
    try:
        while chunk := await reader.read(65536):
            await asyncio.sleep(lag)
            writer.write(chunk)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


@contextlib.asynccontextmanager
async def slow_proxy(target: str, lag: float) -> AsyncIterator[str]:
    """Yield the address of a proxy to ``target`` (``host:port``) delaying requests by
    ``lag`` seconds (answers pass at once); closed on exit."""
    host, port = target.rsplit(":", 1)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        await asyncio.gather(_pipe(reader, up_writer, lag), _pipe(up_reader, writer, 0))

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()
