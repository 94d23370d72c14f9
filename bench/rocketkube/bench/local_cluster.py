"""A name server and brokers as child processes on 127.0.0.1, for a benchmark to measure.

Each server is ``python -m rocketkube.launcher namesrv|broker ...`` (so the bench never
imports the broker), its output in a log file under the given directory, started on a free
port and waited for until it serves (a broker: until the name server routes the
auto-create template to it, so a producer started then finds a route), and terminated when
the block ends. They listen on 127.0.0.1 only: nothing outside the machine reaches them,
and on a busy machine a port :func:`free_port` found free on 127.0.0.1 may still be taken
for 0.0.0.0 (a socket bound to the same port on another local address).
``rocketkube bench`` starts its own cluster with these when no ``-n`` or ``--broker`` is
given; test tools use them too.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from rocketkube.common import acl, errors, runtime
from rocketkube.common.protocol import route
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand

__all__ = ["child_process", "free_port", "local_broker", "local_namesrv", "local_namesrv_process"]

START_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0


def free_port() -> int:
    """A port free on 127.0.0.1 now (another process could take it before we bind it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@contextlib.asynccontextmanager
async def child_process(args: list[str], log: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """``python -m rocketkube.launcher ARGS`` with output to ``log``; terminated on exit."""
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "rocketkube.launcher", *args,
            stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out, env=runtime.child_env(),
        )  # fmt: skip
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), STOP_TIMEOUT)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def _wait_until(
    proc: asyncio.subprocess.Process, log: Path, what: str, ready: Callable[[], Any]
) -> None:
    """Poll ``ready`` (a coroutine function returning truth) until it is, or fail."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc.returncode is not None:
            raise errors.RemotingConnectError(
                f"{what} exited with code {proc.returncode}:\n{_tail(log)}"
            )
        try:
            if await ready():
                return
        except (errors.RemotingError, OSError):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready after {START_TIMEOUT:.0f}s:\n{_tail(log)}")
        await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def local_namesrv(root: Path, extra: Sequence[str] = ()) -> AsyncIterator[str]:
    """A name server child process (``extra``: more arguments); yields its address."""
    async with local_namesrv_process(root, extra) as (address, _):
        yield address


@contextlib.asynccontextmanager
async def local_namesrv_process(
    root: Path, extra: Sequence[str] = ()
) -> AsyncIterator[tuple[str, int]]:
    """A name server child process (``extra``: more arguments); yields (address, pid)."""
    port = free_port()
    args = [
        "namesrv", "--port", str(port), "--bind", "127.0.0.1", "--http-port", "0",
        "--log-level", "WARNING",
        "--kv-config-path", str(root / "namesrv" / "kvConfig.json"), *extra,
    ]  # fmt: skip
    log = root / "namesrv.log"
    async with child_process(args, log) as proc:

        async def accepting() -> bool:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            await writer.wait_closed()
            return True

        await _wait_until(proc, log, "name server", accepting)
        yield f"127.0.0.1:{port}", proc.pid


@contextlib.asynccontextmanager
async def local_broker(
    root: Path,
    namesrv: str,
    flush: str,
    extra: Sequence[str] = (),
    credentials: acl.Credentials | None = None,
) -> AsyncIterator[tuple[str, int]]:
    """A broker child process with ``flushDiskType=flush`` (``extra``: more arguments, such
    as ``--set aclEnable=true``; ``credentials``: an admin account of its ACL, to ask
    whether it serves); yields (address, pid)."""
    port = free_port()
    name = flush.split("_")[0].lower()
    args = [
        "broker", "--port", str(port), "--http-port", "0", "--broker-ip", "127.0.0.1",
        "--broker-name", f"bench-{name}", "--store", str(root / f"store-{name}"),
        "--flush-disk-type", flush, "-n", namesrv, "--log-level", "WARNING",
        "--set", "haListenPort=0",  # no slaves; port+1 may be anyone's
        "--set", "bindAddress=127.0.0.1", *extra,
    ]  # fmt: skip
    log = root / f"broker-{name}.log"
    address = f"127.0.0.1:{port}"
    async with child_process(args, log) as proc:
        client = RemotingClient(connect_timeout=1.0, timeout=2.0, credentials=credentials)

        async def serving() -> bool:
            """Answering, and registered: the name server routes the auto-create template
            to it, so a producer started now finds a route (not "no route to send to")."""
            reply = await client.invoke(
                address, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO)
            )
            if reply.code != ResponseCode.SUCCESS:
                return False
            routed = await client.invoke(
                namesrv,
                RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}),
            )
            if routed.code != ResponseCode.SUCCESS:
                return False
            brokers = route.TopicRouteData.decode(routed.body).broker_datas
            return any(address in b.broker_addrs.values() for b in brokers)

        try:
            await _wait_until(proc, log, f"broker ({flush})", serving)
        finally:
            await client.close()
        yield address, proc.pid
