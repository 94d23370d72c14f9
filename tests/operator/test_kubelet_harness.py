"""The kubelet harness runs a rendered BrokerCluster's StatefulSets as real processes.

A small cluster (one name server, one group of master and slave, tiny store files),
rendered by the operator's specs builders and created in the emulated API server, runs
as real ``rocketkube`` processes, each pod in a network namespace of its own on the
harness's bridge. The tests talk to it from the host through the pods' IPs, as a client
outside the cluster would through a routable pod network. Needs root and ``ip``: skipped
(with the reason) where network namespaces cannot be made.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubelet_net as net
import pytest
from consuming import consume_until_all
from kube_api import KubeApiServer, running_kube_api
from kube_api_cluster import Cluster
from kubelet import KubeletOptions, RunningKubelet, Unavailable, running_kubelet
from kubelet_container import Backoff
from kubelet_net import NETNS_ETC
from rendering import render
from routes import wait_until_routed
from waiting import wait_for_value, wait_until

from rocketkube.client import AdminClient, Message, Producer
from rocketkube.operator.api import names

pytestmark = pytest.mark.slow

NAMESPACE = "kubelet"
CLUSTER = "demo"
SPEC: dict[str, Any] = {
    "nameServers": {"replicas": 1},
    "brokers": {
        "groups": 1,
        "replicasPerGroup": 2,
        "properties": {
            "mappedFileSizeCommitLog": str(4 << 20),
            "mappedFileSizeConsumeQueue": str(20 * 10_000),
            "maxHashSlotNum": "1000",
            "maxIndexNum": "4000",
            "haReconnectInterval": "1000",
        },
    },
}
NAMESRV_POD = names.namesrv_pod(CLUSTER, 0)
MASTER_POD = names.broker_pod(CLUSTER, 0, 0)
SLAVE_POD = names.broker_pod(CLUSTER, 0, 1)
PODS = (NAMESRV_POD, MASTER_POD, SLAVE_POD)


def options(workdir: Path) -> KubeletOptions:
    """Probes every half second at most and short back-offs: scenarios of seconds."""
    return KubeletOptions(
        workdir=workdir, probe_period_cap=0.5, backoff=Backoff(base=0.5, limit=2.0),
        teardown_grace=5.0,
    )  # fmt: skip


@contextlib.contextmanager
def kubelet_or_skip(cluster: Cluster, workdir: Path) -> Iterator[RunningKubelet]:
    with contextlib.ExitStack() as stack:
        try:
            harness = stack.enter_context(running_kubelet(cluster, options(workdir)))
        except Unavailable as error:
            pytest.skip(str(error))
        yield harness


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiServer]:
    with running_kube_api(tmp_path_factory.mktemp("kube") / "kubeconfig") as server:
        server.cluster.create_object({"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": NAMESPACE}})  # fmt: skip
        yield server


@pytest.fixture(scope="module")
def harness(
    kube: KubeApiServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningKubelet]:
    """The harness running the demo cluster's objects, as the operator would create them."""
    with kubelet_or_skip(kube.cluster, tmp_path_factory.mktemp("kubelet")) as running:
        for obj in render(SPEC, CLUSTER, NAMESPACE):
            kube.cluster.create_object(obj)
        yield running


def pod(cluster: Cluster, name: str) -> dict[str, Any]:
    return cluster.get_object("pods", name, NAMESPACE)


def ready(cluster: Cluster, name: str, namespace: str = NAMESPACE) -> bool:
    """Whether pod ``name`` exists, is not being deleted, and is Ready."""
    found = cluster.find_object("pods", name, namespace)
    if found is None or found["metadata"].get("deletionTimestamp"):
        return False
    conditions = (found.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


async def all_ready(cluster: Cluster) -> None:
    await wait_until(lambda: all(ready(cluster, p) for p in PODS), f"{PODS} Ready")


def addr(cluster: Cluster, name: str, port: int) -> str:
    return f"{pod(cluster, name)['status']['podIP']}:{port}"


async def registered(namesrv: str) -> dict[int, str] | None:
    """The demo group's brokers as the name server lists them (None until both are)."""
    async with AdminClient(namesrv) as admin:
        info = await admin.cluster_info()
    group = info.broker_addr_table.get(names.broker_name(CLUSTER, 0))
    if group is None or len(group.broker_addrs) < 2:
        return None
    return dict(group.broker_addrs)


async def registered_as(namesrv: str, broker_id: int, address: str) -> dict[int, str] | None:
    """The group's brokers once ``broker_id`` is registered at ``address``."""
    brokers = await registered(namesrv)
    return brokers if brokers is not None and brokers.get(broker_id) == address else None


async def test_pods_run_ready_each_with_an_ip_of_its_own(
    kube: KubeApiServer, harness: RunningKubelet
) -> None:
    cluster = kube.cluster
    await all_ready(cluster)
    ips = {name: pod(cluster, name)["status"]["podIP"] for name in PODS}
    assert len(set(ips.values())) == 3
    assert all(ipaddress.ip_address(ip) in harness.subnet for ip in ips.values())
    master = pod(cluster, MASTER_POD)
    sts = cluster.get_object("statefulsets", names.broker_group(CLUSTER, 0), NAMESPACE)
    (owner,) = master["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (
        "StatefulSet", sts["metadata"]["uid"], True
    )  # fmt: skip
    template = sts["spec"]["template"]["metadata"]
    assert template["labels"].items() <= master["metadata"]["labels"].items()
    assert master["metadata"]["annotations"] == template["annotations"]
    (status,) = master["status"]["containerStatuses"]
    assert (status["ready"], status["restartCount"]) == (True, 0)
    assert master["status"]["phase"] == "Running"
    await wait_until(
        lambda: (cluster.get_object("statefulsets", sts["metadata"]["name"], NAMESPACE)
                 .get("status", {}).get("readyReplicas")) == 2,
        "the StatefulSet's readyReplicas",
    )  # fmt: skip
    claim = cluster.get_object("persistentvolumeclaims", f"store-{MASTER_POD}", NAMESPACE)
    assert claim["status"]["phase"] == "Bound"
    # Nothing leaves the subnet: one connected route, no default route.
    routes = harness.routes(MASTER_POD, NAMESPACE)
    assert routes == [f"{harness.subnet} dev eth0 proto kernel scope link src {ips[MASTER_POD]} "]


async def test_brokers_register_through_the_name_servers_dns_name(
    kube: KubeApiServer, harness: RunningKubelet
) -> None:
    cluster = kube.cluster
    await all_ready(cluster)
    dns_name = f"{NAMESRV_POD}.{names.namesrv(CLUSTER)}.{NAMESPACE}.svc"
    netns = harness.netns(MASTER_POD, NAMESPACE)
    resolved = (await net.run("ip", "netns", "exec", netns, "getent", "hosts", dns_name)).split()
    assert resolved[0] == pod(cluster, NAMESRV_POD)["status"]["podIP"]
    namesrv = addr(cluster, NAMESRV_POD, names.NAMESRV_PORT)
    brokers = await wait_for_value(lambda: registered(namesrv), "both brokers registered")
    assert brokers == {
        0: addr(cluster, MASTER_POD, names.BROKER_PORT),
        1: addr(cluster, SLAVE_POD, names.BROKER_PORT),
    }


async def test_a_producer_and_a_consumer_on_the_host_reach_the_pods(
    kube: KubeApiServer, harness: RunningKubelet, tmp_path: Path
) -> None:
    cluster = kube.cluster
    await all_ready(cluster)
    namesrv = addr(cluster, NAMESRV_POD, names.NAMESRV_PORT)
    topic, group = f"Kubelet_{uuid.uuid4().hex[:8]}", f"KubeletGroup_{uuid.uuid4().hex[:8]}"
    async with Producer(f"P_{group}", namesrv) as producer:
        results = [await producer.send(Message(topic, b"body %d" % i)) for i in range(20)]
    assert {r.queue.broker_name for r in results} == {names.broker_name(CLUSTER, 0)}
    # auto-created by the sends: routed once the master registers it again
    await wait_until_routed(namesrv, topic, {0, 1})
    bodies = await consume_until_all(namesrv, group, topic, [r.msg_id for r in results], tmp_path)
    assert bodies == sorted(b"body %d" % i for i in range(20))


async def test_a_deleted_slave_pod_comes_back_on_the_same_claim(
    kube: KubeApiServer, harness: RunningKubelet
) -> None:
    cluster = kube.cluster
    await all_ready(cluster)
    old = pod(cluster, SLAVE_POD)
    claim = harness.claim_dir(f"store-{SLAVE_POD}", NAMESPACE)
    marker = claim / "marker"
    marker.write_text(old["metadata"]["uid"], encoding="utf-8")
    cluster.delete_object("pods", SLAVE_POD, NAMESPACE)
    await wait_until(
        lambda: (found := cluster.find_object("pods", SLAVE_POD, NAMESPACE)) is not None
        and found["metadata"]["uid"] != old["metadata"]["uid"] and ready(cluster, SLAVE_POD),
        "the slave recreated and Ready",
    )  # fmt: skip
    new = pod(cluster, SLAVE_POD)
    assert new["status"]["containerStatuses"][0]["restartCount"] == 0
    # the new process sees the claim's directory (and the file left there) at its mount path
    seen = Path(f"/proc/{harness.pid(SLAVE_POD, NAMESPACE)}/root/var/lib/rocketkube")
    assert (seen / "marker").read_text(encoding="utf-8") == old["metadata"]["uid"]
    assert (seen / "store" / "checkpoint").stat().st_ino == (
        claim / "store" / "checkpoint"
    ).stat().st_ino
    namesrv = addr(cluster, NAMESRV_POD, names.NAMESRV_PORT)
    slave = addr(cluster, SLAVE_POD, names.BROKER_PORT)
    await wait_for_value(lambda: registered_as(namesrv, 1, slave), "the new slave registered")


async def test_a_killed_master_is_restarted_in_its_pod(
    kube: KubeApiServer, harness: RunningKubelet
) -> None:
    cluster = kube.cluster
    await all_ready(cluster)
    before = pod(cluster, MASTER_POD)
    killed = harness.kill(MASTER_POD, NAMESPACE)

    def restarted() -> bool:
        status = pod(cluster, MASTER_POD)["status"]["containerStatuses"][0]
        return status["restartCount"] == 1 and status["ready"] is True

    await wait_until(restarted, "the master restarted and Ready")
    after = pod(cluster, MASTER_POD)
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["status"]["podIP"] == before["status"]["podIP"]
    last = after["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert last["exitCode"] == 137
    assert harness.pid(MASTER_POD, NAMESPACE) not in (None, killed)
    namesrv = addr(cluster, NAMESRV_POD, names.NAMESRV_PORT)
    master = addr(cluster, MASTER_POD, names.BROKER_PORT)
    await wait_for_value(lambda: registered_as(namesrv, 0, master), "the master registered again")


def test_teardown_leaves_nothing_behind(tmp_path: Path) -> None:
    """A pod of a plain command, then the harness stopped: no process, namespace, link
    or hosts file of its run remains."""
    cluster = Cluster()
    cluster.create_object(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "sleeper", "namespace": "default"},
            "spec": {"containers": [{"name": "main", "image": "busybox",
                                     "command": ["sleep", "300"]}]},
        }
    )  # fmt: skip
    with kubelet_or_skip(cluster, tmp_path) as running:
        asyncio.run(wait_until(lambda: ready(cluster, "sleeper", "default"), "the sleeper Ready"))
        pid = running.pid("sleeper")
        netns = running.netns("sleeper")
        bridge = running.bridge
    assert pid is not None
    assert not Path(f"/proc/{pid}").exists()
    assert netns not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                       text=True, check=True).stdout  # fmt: skip
    assert subprocess.run(["ip", "link", "show", bridge], capture_output=True).returncode != 0
    assert not (NETNS_ETC / netns).exists()


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, RunningKubelet]]:
    """The harness over an in-process cluster, for pods of plain commands."""
    cluster = Cluster()
    with kubelet_or_skip(cluster, tmp_path_factory.mktemp("plain")) as running:
        yield cluster, running


def bare_pod(name: str, container: dict[str, Any], **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", **container}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": 1, **spec},
    }


def container_status(cluster: Cluster, name: str) -> dict[str, Any]:
    statuses = (cluster.get_object("pods", name).get("status") or {}).get("containerStatuses")
    return dict(statuses[0]) if statuses else {}


async def test_volumes_and_the_downward_api_reach_a_plain_pod(
    plain: tuple[Cluster, RunningKubelet],
) -> None:
    cluster, running = plain
    config = {"greeting": "hello\n"}
    cluster.create_object({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "cfg"}, "data": config})  # fmt: skip
    cluster.create_object({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                           "metadata": {"name": "data-claim"},
                           "spec": {"resources": {"requests": {"storage": "1Gi"}}}})  # fmt: skip
    script = (
        'cat /etc/cfg/greeting > /data/out; echo "$POD_NAME $POD_IP $(hostname)" >> /data/out;'
        " touch /scratch/x; exec sleep 300"
    )
    env = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]
    mounts = [
        {"name": "cfg", "mountPath": "/etc/cfg", "readOnly": True},
        {"name": "scratch", "mountPath": "/scratch"},
        {"name": "data", "mountPath": "/data"},
    ]
    volumes = [
        {"name": "cfg", "configMap": {"name": "cfg"}},
        {"name": "scratch", "emptyDir": {}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-claim"}},
    ]
    cluster.create_object(bare_pod("files", {"command": ["sh", "-c", script], "env": env,
                                             "volumeMounts": mounts}, volumes=volumes))  # fmt: skip
    out = running.claim_dir("data-claim") / "out"
    await wait_until(lambda: out.exists() and len(out.read_text().splitlines()) == 2, "out")
    ip = cluster.get_object("pods", "files")["status"]["podIP"]
    assert out.read_text().splitlines() == ["hello", f"files {ip} files"]
    claim = cluster.get_object("persistentvolumeclaims", "data-claim")
    assert claim["status"]["phase"] == "Bound"

    cluster.delete_object("pods", "files")
    await wait_until(lambda: cluster.find_object("pods", "files") is None, "the pod gone")
    assert out.read_text().startswith("hello")  # the claim outlives its pod
    cluster.delete_object("persistentvolumeclaims", "data-claim")
    await wait_until(lambda: not out.parent.exists(), "the claim's directory removed")


async def test_a_failing_liveness_probe_restarts_the_container(
    plain: tuple[Cluster, RunningKubelet], tmp_path: Path
) -> None:
    """An HTTP server on files of the host's: healthy while ``alive`` is there."""
    cluster, _ = plain
    (tmp_path / "alive").write_text("yes", encoding="utf-8")
    container = {
        "command": [sys.executable, "-m", "http.server", "8080", "--directory", str(tmp_path)],
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": {"httpGet": {"path": "/", "port": "http"}},
        "livenessProbe": {"httpGet": {"path": "/alive", "port": 8080}, "failureThreshold": 2},
    }
    cluster.create_object(bare_pod("lively", container))
    await wait_until(lambda: ready(cluster, "lively", "default"), "Ready by its readiness probe")
    assert container_status(cluster, "lively")["restartCount"] == 0
    (tmp_path / "alive").unlink()
    await wait_until(lambda: container_status(cluster, "lively")["restartCount"] == 1,
                     "restarted by its liveness probe")  # fmt: skip
    (tmp_path / "alive").write_text("yes", encoding="utf-8")
    await wait_until(lambda: ready(cluster, "lively", "default"), "Ready again")
    status = container_status(cluster, "lively")
    assert status["lastState"]["terminated"]["exitCode"] in (143, 137)  # SIGTERM, or SIGKILL
    assert status["restartCount"] == 1


async def test_a_container_that_keeps_exiting_backs_off(
    plain: tuple[Cluster, RunningKubelet],
) -> None:
    cluster, _ = plain
    cluster.create_object(bare_pod("crasher", {"command": ["sh", "-c", "exit 3"]}))
    await wait_until(
        lambda: container_status(cluster, "crasher").get("state", {}).get("waiting", {})
        .get("reason") == "CrashLoopBackOff",
        "CrashLoopBackOff",
    )  # fmt: skip
    status = container_status(cluster, "crasher")
    assert status["lastState"]["terminated"]["exitCode"] == 3
    assert status["restartCount"] >= 1
    assert not ready(cluster, "crasher", "default")


@contextlib.contextmanager
def sandbox_ready(workdir: Path) -> Iterator[tuple[subprocess.Popen[str], list[str], str]]:
    """``make sandbox SANDBOX_ARGS=--demo`` as a developer runs it (one broker), once its
    broker is Ready: the process, its output so far, and the bridge it made. Killed at the
    end if still running (and after 60 s in any case)."""
    checkout = Path(__file__).resolve().parents[2]
    script = checkout / "tools" / "sandbox.py"
    env = {**os.environ, "PYTHONPATH": str(checkout / "tests" / "support")}  # as make runs it
    sandbox = subprocess.Popen(
        [sys.executable, str(script), "--demo", "--replicas", "1", "--workdir", str(workdir),
         "--probe-period-cap", "0.5"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    deadline = threading.Timer(60, sandbox.kill)  # a hung sandbox fails the test, not CI
    deadline.start()
    try:
        assert sandbox.stdout is not None
        lines = []
        for line in sandbox.stdout:
            lines.append(line)
            if "cannot run pods here" in line:
                pytest.skip(line.strip())
            if f"default/{MASTER_POD}: Running  ready 1/1" in line:
                break
        (bridge_line,) = [line for line in lines if " on bridge " in line]
        yield sandbox, lines, bridge_line.split(" on bridge ")[1].split()[0]
    finally:
        deadline.cancel()
        if sandbox.poll() is None:
            sandbox.kill()
        sandbox.communicate()


def link_exists(name: str) -> bool:
    return subprocess.run(["ip", "link", "show", name], capture_output=True).returncode == 0


def test_the_sandbox_runs_a_demo_cluster_until_interrupted(tmp_path: Path) -> None:
    with sandbox_ready(tmp_path) as (sandbox, lines, bridge):
        assert f"export KUBECONFIG={tmp_path / 'kubeconfig'}\n" in lines, "".join(lines)
        assert link_exists(bridge)
        sandbox.send_signal(signal.SIGINT)
        rest = sandbox.communicate(timeout=60)[0]
        assert sandbox.returncode == 0, rest
    assert "stopping every pod..." in rest
    assert not link_exists(bridge)


def test_a_run_killed_before_its_teardown_is_swept_by_the_next(tmp_path: Path) -> None:
    with sandbox_ready(tmp_path / "dead") as (sandbox, _, bridge):
        sandbox.kill()
        sandbox.wait()
    prefix = bridge.removesuffix("br") + "-"
    left = [n.split()[0] for n in netns_list() if n.startswith(prefix)]
    assert left, "a killed run leaves its pods' namespaces"
    pids = [int(p) for n in left for p in ip_out("netns", "pids", n).split()]
    assert pids, "and their processes"
    with kubelet_or_skip(Cluster(), tmp_path / "next"):
        assert not [n for n in netns_list() if n.startswith(prefix)]
        assert not link_exists(bridge)
        assert not [p for p in pids if running_process(p)]
        assert not [n for n in left if (NETNS_ETC / n).exists()]


def running_process(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def ip_out(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True).stdout


def netns_list() -> list[str]:
    return ip_out("netns", "list").splitlines()
