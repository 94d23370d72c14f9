"""The ``rocketkube`` command line: version, help, and a real name server process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from ports import free_port

from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.launcher import cli, local

ROCKETKUBE = [sys.executable, "-m", "rocketkube.launcher"]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("rocketkube 0.")


@pytest.mark.parametrize("command", sorted(cli.discover()))
def test_every_subcommand_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--help"])
    assert exit_info.value.code == 0
    assert "usage: rocketkube " + command in capsys.readouterr().out


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert "namesrv" in capsys.readouterr().out


def test_local_plan_starts_a_name_server_and_brokers(tmp_path: Path) -> None:
    namesrv, broker_a, broker_b = local.plan(tmp_path, 9876, brokers=2)
    assert namesrv.args[:3] == ["namesrv", "--port", "9876"]
    assert str(tmp_path / "namesrv" / "kvConfig.json") in namesrv.args
    assert broker_a.name == "broker-a"
    assert broker_b.args[broker_b.args.index("--port") + 1] == "10921"
    assert broker_b.args[broker_b.args.index("--namesrv-addr") + 1] == "127.0.0.1:9876"
    assert str(tmp_path / "broker-b") in broker_b.args


def test_local_plan_listens_on_this_machine_only_unless_told(tmp_path: Path) -> None:
    """No ACL in a development cluster: no port reachable from the network by default."""
    namesrv, broker = local.plan(tmp_path, 9876)
    assert namesrv.args[namesrv.args.index("--bind") + 1] == "127.0.0.1"
    assert "bindAddress=127.0.0.1" in broker.args
    args = cli.build_parser(cli.discover()).parse_args(["local"])
    assert args.bind == "127.0.0.1"
    namesrv, broker = local.plan(tmp_path, 9876, bind="0.0.0.0")
    assert namesrv.args[namesrv.args.index("--bind") + 1] == "0.0.0.0"
    assert "bindAddress=0.0.0.0" in broker.args
    assert broker.args[broker.args.index("--broker-ip") + 1] == "127.0.0.1"
    _namesrv, broker = local.plan(tmp_path, 9876, bind="10.1.2.3")
    assert broker.args[broker.args.index("--broker-ip") + 1] == "10.1.2.3"
    assert broker.args[broker.args.index("--namesrv-addr") + 1] == "10.1.2.3:9876"


def test_local_plan_gives_each_master_its_slaves(tmp_path: Path) -> None:
    _namesrv, *brokers = local.plan(tmp_path, 9876, brokers=2, slaves=1)
    assert [b.name for b in brokers] == ["broker-a", "broker-a-s1", "broker-b", "broker-b-s1"]
    assert [b.args[b.args.index("--port") + 1] for b in brokers] == [
        "10911", "10921", "10931", "10941"
    ]  # fmt: skip
    slave = brokers[1]
    assert slave.args[slave.args.index("--broker-name") + 1] == "broker-a"
    assert slave.args[slave.args.index("--broker-id") + 1] == "1"
    assert slave.args[slave.args.index("--role") + 1] == "SLAVE"
    assert "--role" not in brokers[0].args
    assert str(tmp_path / "broker-a-s1") in slave.args


def test_local_plan_moves_the_brokers_to_another_port(tmp_path: Path) -> None:
    """A second local cluster on the same machine needs its own broker ports."""
    _namesrv, broker_a, broker_b = local.plan(tmp_path, 19876, brokers=2, broker_port=20911)
    assert broker_a.args[broker_a.args.index("--port") + 1] == "20911"
    assert broker_b.args[broker_b.args.index("--port") + 1] == "20921"
    args = cli.build_parser(cli.discover()).parse_args(["local", "--broker-port", "20911"])
    assert args.broker_port == 20911


def test_bad_config_is_a_clear_error(tmp_path: Path) -> None:
    conf = tmp_path / "namesrv.properties"
    conf.write_text("listenPort=notaport\n")
    proc = subprocess.run(
        [*ROCKETKUBE, "namesrv", "-c", str(conf)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert "listenPort" in proc.stderr


async def test_namesrv_process_serves_and_stops_on_sigterm(tmp_path: Path) -> None:
    port, http_port = free_port(), free_port()
    conf = tmp_path / "namesrv.properties"
    conf.write_text(
        f"# RocketMQ names\nlistenPort={port}\nkvConfigPath={tmp_path / 'kv.json'}\n"
        "orderMessageEnable=true\nsomethingUnknown=1\n"
    )
    proc = await asyncio.create_subprocess_exec(
        *ROCKETKUBE, "namesrv", "-c", str(conf), "--http-port", str(http_port),
        stderr=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        client = RemotingClient()
        for _ in range(1200):
            try:
                resp = await client.invoke(
                    f"127.0.0.1:{port}", RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG)
                )
                break
            except Exception:
                await asyncio.sleep(0.1)
        else:
            pytest.fail("name server did not start")
        assert f"listenPort={port}" in bytes(resp.body).decode()
        assert "orderMessageEnable=true" in bytes(resp.body).decode()
        await client.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0
    assert b"ignoring unknown property 'somethingUnknown'" in stderr
    assert b"shutting down" in stderr


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for its new parent to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
async def test_server_children_stop_when_their_parent_is_killed(tmp_path: Path) -> None:
    """`rocketkube local` and the benchmarks start servers with runtime.child_env(): a
    SIGKILL of the parent (which cannot clean up) must not leave them running."""
    port = free_port()
    conf = tmp_path / "namesrv.properties"
    conf.write_text(f"listenPort={port}\nkvConfigPath={tmp_path / 'kv.json'}\n")
    parent_code = (
        "import subprocess, sys, time\n"
        "from rocketkube.common import runtime\n"
        f"child = subprocess.Popen([*{ROCKETKUBE!r}, 'namesrv', '-c', {str(conf)!r},"
        " '--http-port', '0'], env=runtime.child_env(),"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(300)\n"
    )
    parent = await asyncio.create_subprocess_exec(
        sys.executable, "-c", parent_code, stdout=asyncio.subprocess.PIPE
    )
    assert parent.stdout is not None
    child_pid = int(await asyncio.wait_for(parent.stdout.readline(), 180))
    try:
        client = RemotingClient()
        request = RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG)
        for _ in range(1200):
            try:
                await client.invoke(f"127.0.0.1:{port}", request)
                break
            except Exception:
                await asyncio.sleep(0.1)
        else:
            pytest.fail("name server did not start")
        await client.close()
        parent.kill()
        await asyncio.wait_for(parent.wait(), 120)
        for _ in range(1200):
            if not _alive(child_pid):
                break
            await asyncio.sleep(0.1)
        assert not _alive(child_pid), "the name server outlived its killed parent"
    finally:
        if parent.returncode is None:
            parent.kill()
        with contextlib.suppress(ProcessLookupError):
            os.kill(child_pid, signal.SIGKILL)
