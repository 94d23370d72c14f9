"""``rocketkube local`` (what ``make run`` starts) as a user runs it: a real name server and
broker as child processes, every port listening on 127.0.0.1 only, stopped by SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from ports import free_ports
from waiting import WAIT_SECONDS, wait_for_value

from rocketkube.client.admin.client import AdminClient
from rocketkube.common.errors import RocketKubeError

LOOPBACK = "0100007F"  # 127.0.0.1 as /proc/net/tcp writes it
LISTEN = "0A"


def listening(port: int) -> list[str]:
    """The local addresses (hex, as /proc/net/tcp{,6} write them) listening on ``port``."""
    found = []
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if fields[3] == LISTEN and int(hex_port, 16) == port:
                found.append(address)
    return found


async def test_the_local_cluster_listens_on_this_machine_only(tmp_path: Path) -> None:
    namesrv_port = free_ports((0, 1))
    broker_port = free_ports((0, 1, 3))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketkube.launcher", "local", "--data-dir", str(tmp_path),
        "--namesrv-port", str(namesrv_port), "--broker-port", str(broker_port),
    )  # fmt: skip
    try:
        async with AdminClient(f"127.0.0.1:{namesrv_port}") as admin:

            async def registered() -> bool | None:
                try:
                    return bool((await admin.cluster_info()).broker_addr_table) or None
                except (RocketKubeError, OSError):
                    return None  # not up yet

            await wait_for_value(registered, "the local broker registered")
        ports = (namesrv_port, namesrv_port + 1, broker_port, broker_port + 1, broker_port + 3)
        assert {port: listening(port) for port in ports} == {port: [LOOPBACK] for port in ports}
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), WAIT_SECONDS * 4)
    assert code == 0
