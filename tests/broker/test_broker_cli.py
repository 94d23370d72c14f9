"""``rocketkube broker`` refuses bad configuration with one clear line and exit code 2;
``--identity-from-pod`` takes brokerId, role and address from the StatefulSet pod."""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ports import free_port

from rocketkube.broker import cli
from rocketkube.broker.settings import BrokerRole, BrokerSettings
from rocketkube.common import errors
from rocketkube.common.properties_file import parse_properties
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.settings import SettingsError


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--set", "no-equals-sign"], "--set expects KEY=VALUE"),
        (["--flush-disk-type", "SOMETIMES"], "flushDiskType"),
        (["--port", "99999"], "listenPort"),
    ],
)
def test_bad_broker_config_exits_2(args: list[str], needle: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rocketkube.launcher", "broker", "--store", str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert proc.stderr.startswith("rocketkube broker: ")


# -- --identity-from-pod: brokerId, role and address from the StatefulSet pod -------------

POD_IP = "10.1.2.3"


def settings_for(tmp_path: Path, environ: dict[str, str], *args: str) -> BrokerSettings:
    parser = argparse.ArgumentParser()
    cli.configure(parser)
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=demo-broker-0\nbrokerRole=SYNC_MASTER\nbrokerId=7\n")
    return cli.broker_settings(
        parser.parse_args(["-c", str(conf), "--store", str(tmp_path), *args]), environ
    )


@pytest.mark.parametrize(
    ("pod", "identity"),
    [
        ("demo-broker-0-0", {"brokerId": "0", "brokerIP1": POD_IP}),
        ("demo-broker-3-1", {"brokerId": "1", "brokerIP1": POD_IP, "brokerRole": "SLAVE"}),
        ("a-12", {"brokerId": "12", "brokerIP1": POD_IP, "brokerRole": "SLAVE"}),
    ],
)
def test_the_pod_ordinal_is_the_broker_id(pod: str, identity: dict[str, str]) -> None:
    assert cli.pod_identity({"POD_NAME": pod, "POD_IP": POD_IP}) == identity


@pytest.mark.parametrize(
    ("environ", "needle"),
    [
        ({"POD_IP": POD_IP}, "POD_NAME '' does not end in a pod ordinal"),
        ({"POD_NAME": "broker-a", "POD_IP": POD_IP}, "does not end in a pod ordinal"),
        ({"POD_NAME": "broker", "POD_IP": POD_IP}, "POD_NAME 'broker' does not end"),
        ({"POD_NAME": "demo-broker-0-01", "POD_IP": POD_IP}, "does not end in a pod ordinal"),
        ({"POD_NAME": "demo-broker-0-1"}, "POD_IP is not set"),
    ],
)
def test_a_pod_without_an_identity_is_refused(environ: dict[str, str], needle: str) -> None:
    with pytest.raises(SettingsError, match=needle):
        cli.pod_identity(environ)


def test_ordinal_0_keeps_the_configured_master_role(tmp_path: Path) -> None:
    environ = {"POD_NAME": "demo-broker-0-0", "POD_IP": POD_IP}
    settings = settings_for(tmp_path, environ, "--identity-from-pod", "--broker-id", "3")
    assert (settings.broker_id, settings.broker_role, settings.broker_ip1) == (
        0,
        BrokerRole.SYNC_MASTER,
        POD_IP,
    )
    assert settings.broker_name == "demo-broker-0"


def test_a_higher_ordinal_is_a_slave_whatever_the_file_says(tmp_path: Path) -> None:
    settings = settings_for(
        tmp_path, {"POD_NAME": "demo-broker-0-2", "POD_IP": POD_IP}, "--identity-from-pod"
    )
    assert (settings.broker_id, settings.broker_role, settings.broker_ip1) == (
        2,
        BrokerRole.SLAVE,
        POD_IP,
    )


def test_without_the_flag_the_pod_is_ignored(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, {"POD_NAME": "demo-broker-0-2", "POD_IP": POD_IP})
    assert (settings.broker_id, settings.broker_role) == (7, BrokerRole.SYNC_MASTER)


def test_a_slave_role_at_ordinal_0_is_refused(tmp_path: Path) -> None:
    environ = {"POD_NAME": "demo-broker-0-0", "POD_IP": POD_IP}
    with pytest.raises(SettingsError, match="pod ordinal 0 is the master, but brokerRole is"):
        settings_for(tmp_path, environ, "--identity-from-pod", "--role", "SLAVE")


def test_a_pod_without_an_ordinal_exits_2(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rocketkube.launcher", "broker", "--store", str(tmp_path),
         "--identity-from-pod"],
        env={**os.environ, "POD_NAME": "broker-a", "POD_IP": POD_IP},
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        "rocketkube broker: --identity-from-pod: POD_NAME 'broker-a' does not end in a pod"
    )


async def broker_config(addr: str, proc: asyncio.subprocess.Process) -> dict[str, str]:
    """The running broker's settings (GET_BROKER_CONFIG), once it answers."""
    client = RemotingClient(timeout=5)
    try:
        while proc.returncode is None:
            try:
                resp = await client.invoke(
                    addr, RemotingCommand.request(RequestCode.GET_BROKER_CONFIG)
                )
            except errors.RemotingError:
                await asyncio.sleep(0.1)
                continue
            assert resp.code == ResponseCode.SUCCESS
            return parse_properties(bytes(resp.body or b"").decode())
    finally:
        await client.close()
    pytest.fail(f"broker exited with {proc.returncode}")


async def test_a_broker_process_runs_as_its_pod(tmp_path: Path) -> None:
    """A real broker started as pod 1 of its group serves as that group's slave 1 on the
    pod's address, though its broker.conf (shared by the group) names the master."""
    port = free_port()
    conf = tmp_path / "broker.conf"
    conf.write_text(
        f"brokerClusterName=demo\nbrokerName=demo-broker-0\nbrokerRole=ASYNC_MASTER\n"
        f"listenPort={port}\nhttpPort=0\nbindAddress=127.0.0.1\n"
        f"storePathRootDir={tmp_path / 'store'}\nmappedFileSizeCommitLog=65536\n"
        "mappedFileSizeConsumeQueue=6000\nmaxHashSlotNum=100\nmaxIndexNum=400\n"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketkube.launcher", "broker", "-c", str(conf),
        "--identity-from-pod", "--log-level", "WARNING",
        env={**os.environ, "NAMESRV_ADDR": "", "POD_NAME": "demo-broker-0-1",
             "POD_IP": "127.0.0.1"},
    )  # fmt: skip
    try:
        config = await asyncio.wait_for(broker_config(f"127.0.0.1:{port}", proc), 180)
    finally:
        proc.terminate()
        await proc.wait()
    assert {k: config[k] for k in ("brokerName", "brokerId", "brokerRole", "brokerIP1")} == {
        "brokerName": "demo-broker-0",
        "brokerId": "1",
        "brokerRole": "SLAVE",
        "brokerIP1": "127.0.0.1",
    }


def test_the_acl_file_is_beside_the_config_file_unless_named(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, {}, "--set", "aclEnable=true")
    assert settings.acl_file() == tmp_path / "plain_acl.yml"
    named = settings_for(tmp_path, {}, "--set", "aclEnable=true",
                         "--set", "rocketmq.acl.plain.file=/etc/rocketmq/acl.yml")  # fmt: skip
    assert named.acl_file() == Path("/etc/rocketmq/acl.yml")
    assert settings_for(tmp_path, {}).acl_file() is None  # aclEnable is off by default
    with pytest.raises(ValueError, match=r"rocketmq\.acl\.plain\.file"):
        BrokerSettings(acl_enable=True).acl_file()
