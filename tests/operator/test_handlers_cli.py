"""``rocketkube operator`` through the real command: its flags documented in ``--help``,
``--print-crds`` piped into the real kubectl, and the operator process itself serving
its metrics and liveness probe against the emulated API server until SIGTERM."""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
import yaml
from kube_api import KubeApiServer, running_kube_api
from operator_harness import Kubectl
from ports import free_port
from waiting import wait_for_value

from rocketkube.operator import cli
from rocketkube.operator.api import crds, names
from rocketkube.operator.handlers.context import overridden_address

ROCKETKUBE = [sys.executable, "-m", "rocketkube.launcher"]
FLAGS = (
    "--namespace", "--all-namespaces", "--standalone", "--peering", "--priority",
    "--liveness-port", "--metrics-port", "--kubeconfig", "--timer-interval", "--log-level",
    "--print-crds", "--namesrv-override",
)  # fmt: skip


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiServer]:
    with running_kube_api(tmp_path_factory.mktemp("kube") / "kubeconfig") as server:
        yield server


def rocketkube(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ROCKETKUBE, *args], capture_output=True, text=True, timeout=60, check=False
    )


async def fetch(url: str) -> tuple[int, str] | None:
    """An HTTP GET's status and text; None while nothing listens."""
    try:
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return response.status, await response.text()
    except aiohttp.ClientConnectionError:
        return None


def test_help_documents_every_flag() -> None:
    shown = rocketkube("operator", "--help")
    assert shown.returncode == 0, shown.stderr
    for flag in FLAGS:
        assert flag in shown.stdout, flag
    assert "-n NS" in shown.stdout
    assert "-A" in shown.stdout


def test_namesrv_overrides_replace_only_the_clusters_they_name() -> None:
    address_of = overridden_address({"demo": "127.0.0.1:9876;127.0.0.1:9976"})
    assert address_of("demo", "rocketmq", 2) == "127.0.0.1:9876;127.0.0.1:9976"
    assert address_of("other", "rocketmq", 2) == names.namesrv_address("other", "rocketmq", 2)


@pytest.mark.parametrize("value", ["demo", "=127.0.0.1:9876", "demo=", " = "])
def test_a_namesrv_override_without_cluster_and_address_is_refused(value: str) -> None:
    refused = rocketkube("operator", "--namesrv-override", value)
    assert refused.returncode == 2
    assert "is not CLUSTER=ADDR" in refused.stderr


def test_a_random_priority_differs_per_replica_and_others_are_integers() -> None:
    drawn = {cli.priority("random") for _ in range(20)}
    assert len(drawn) > 1
    assert all(1 <= value < 2**31 for value in drawn)
    assert cli.priority("-5") == -5
    refused = rocketkube("operator", "--priority", "high")
    assert refused.returncode == 2
    assert "neither an integer nor random" in refused.stderr


def test_print_crds_is_what_kubectl_applies(kube: KubeApiServer, tmp_path: Path) -> None:
    printed = rocketkube("operator", "--print-crds")
    assert printed.returncode == 0, printed.stderr
    documents = list(yaml.safe_load_all(printed.stdout))
    assert documents == [crds.crd(kind) for kind in crds.KINDS]
    if shutil.which("kubectl") is None:
        pytest.skip("no kubectl")
    kubectl = Kubectl(kube, tmp_path)
    applied = kubectl("apply", "-f", "-", stdin=printed.stdout)
    assert applied.returncode == 0, applied.stderr
    listed = kubectl("get", "crd", "-o", "name")
    for kind in crds.KINDS:
        assert f"customresourcedefinition.apiextensions.k8s.io/{kind.name}" in listed.stdout


async def test_the_operator_serves_metrics_and_liveness_until_terminated(
    kube: KubeApiServer, tmp_path: Path
) -> None:
    for kind in crds.KINDS:
        if kube.cluster.find_object("customresourcedefinitions", kind.name) is None:
            kube.cluster.create_object(crds.crd(kind))
    metrics, liveness = free_port(), free_port()
    with (tmp_path / "operator.log").open("w") as log:
        process = await asyncio.create_subprocess_exec(
            *ROCKETKUBE, "operator", "--kubeconfig", str(kube.kubeconfig), "-n", "default",
            "--metrics-port", str(metrics), "--liveness-port", str(liveness),
            "--timer-interval", "1", "--log-level", "WARNING",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=log,
        )  # fmt: skip
        try:
            healthz = await wait_for_value(
                lambda: fetch(f"http://127.0.0.1:{liveness}/healthz"), "the liveness probe"
            )
            assert healthz[0] == 200
            answer = await fetch(f"http://127.0.0.1:{metrics}/metrics")
            assert answer is not None
            assert answer[0] == 200
            assert "rocketkube_operator_reconcile_seconds" in answer[1]
        finally:
            process.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(process.wait(), 60)
    assert code == 0, (tmp_path / "operator.log").read_text()
