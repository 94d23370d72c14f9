"""The kubelet harness's pure parts: the StatefulSet controller's plans, DNS, container
environment, probe verdicts, back-off, volumes and subnets, without a process or a
namespace."""

from __future__ import annotations

import ipaddress
import random
from pathlib import Path
from typing import Any

import kubelet_dns as dns
import kubelet_spec as spec
import kubelet_statefulsets as sts
import kubelet_volumes as volumes
import pytest
from kubelet_container import Backoff, exit_code
from kubelet_host import POOL, choose_subnet
from kubelet_pod import pod_status
from kubelet_probes import ProbeSpec, Verdict

NODE = "node-a"


def statefulset(
    replicas: int = 2, policy: str = "Parallel", strategy: str = "OnDelete", image: str = "v1"
) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "ns", "uid": "sts-uid", "generation": 3},
        "spec": {
            "replicas": replicas,
            "serviceName": "web",
            "podManagementPolicy": policy,
            "updateStrategy": {"type": strategy},
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {"a": "1"}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"x": 1}}],
        },
    }


def running(pod: dict[str, Any], ready: bool = True, terminating: bool = False) -> dict[str, Any]:
    pod["metadata"]["uid"] = f"uid-{pod['metadata']['name']}"
    if terminating:
        pod["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    status = "True" if ready else "False"
    pod["status"] = {"conditions": [{"type": "Ready", "status": status}], "podIP": "10.0.0.9"}
    return pod


def names_of(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_parallel_creates_every_missing_pod_with_its_claims() -> None:
    plan = sts.plan(statefulset(), [], [], [], NODE)
    assert names_of(plan.create) == ["web-0", "web-1"]
    assert names_of(plan.claims) == ["data-web-0", "data-web-1"]
    pod = plan.create[1]
    assert pod["metadata"]["labels"] == {
        "app": "web",
        "controller-revision-hash": sts.revision(statefulset()),
        "statefulset.kubernetes.io/pod-name": "web-1",
        "apps.kubernetes.io/pod-index": "1",
    }
    assert pod["metadata"]["annotations"] == {"a": "1"}
    assert pod["metadata"]["finalizers"] == [sts.POD_FINALIZER]
    assert pod["metadata"]["ownerReferences"][0]["uid"] == "sts-uid"
    assert pod["spec"]["hostname"] == "web-1"
    assert pod["spec"]["subdomain"] == "web"
    assert pod["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-1"}}
    ]
    assert plan.claims[0]["metadata"]["finalizers"] == [sts.PVC_PROTECTION]
    assert plan.claims[0]["metadata"]["labels"] == {"app": "web"}


def test_a_name_still_terminating_is_not_taken_and_claims_are_not_made_twice() -> None:
    old = running(sts.pod_for(statefulset(), 0, NODE), terminating=True)
    plan = sts.plan(statefulset(), [old], ["web-0"], ["data-web-0", "data-web-1"], NODE)
    assert names_of(plan.create) == ["web-1"]
    assert plan.claims == []
    assert plan.delete == []


def test_on_delete_keeps_old_pods_and_recreates_from_the_current_template() -> None:
    old = [running(sts.pod_for(statefulset(image="v1"), i, NODE)) for i in range(2)]
    updated = statefulset(image="v2")
    assert sts.plan(updated, old, names_of(old), [], NODE).create == []
    assert sts.plan(updated, old, names_of(old), [], NODE).delete == []
    plan = sts.plan(updated, old[1:], names_of(old[1:]), [], NODE)
    assert plan.create[0]["spec"]["containers"][0]["image"] == "v2"
    assert plan.create[0]["metadata"]["labels"]["controller-revision-hash"] == sts.revision(updated)


def test_rolling_update_replaces_the_highest_stale_pod_once_all_are_ready() -> None:
    old = [running(sts.pod_for(statefulset(image="v1"), i, NODE)) for i in range(3)]
    updated = statefulset(replicas=3, strategy="RollingUpdate", image="v2")
    assert sts.plan(updated, old, names_of(old), [], NODE).delete == ["web-2"]
    old[0] = running(old[0], ready=False)
    assert sts.plan(updated, old, names_of(old), [], NODE).delete == []


def test_ordered_ready_creates_one_pod_at_a_time() -> None:
    ordered = statefulset(replicas=3, policy="OrderedReady")
    assert names_of(sts.plan(ordered, [], [], [], NODE).create) == ["web-0"]
    first = running(sts.pod_for(ordered, 0, NODE), ready=False)
    assert sts.plan(ordered, [first], ["web-0"], [], NODE).create == []
    first = running(first)
    assert names_of(sts.plan(ordered, [first], ["web-0"], [], NODE).create) == ["web-1"]


def test_surplus_pods_go_all_at_once_in_parallel() -> None:
    pods = [running(sts.pod_for(statefulset(), i, NODE)) for i in range(4)]
    assert sts.plan(statefulset(), pods, names_of(pods), [], NODE).delete == ["web-3", "web-2"]


def test_status_counts_ready_and_updated_pods() -> None:
    old = running(sts.pod_for(statefulset(image="v1"), 0, NODE))
    new_sts = statefulset(image="v2")
    new = running(sts.pod_for(new_sts, 1, NODE), ready=False)
    new_sts["status"] = {"currentRevision": sts.revision(statefulset(image="v1"))}
    status = sts.status(new_sts, [old, new])
    assert status["observedGeneration"] == 3
    assert (status["replicas"], status["readyReplicas"], status["updatedReplicas"]) == (2, 1, 1)
    assert status["currentRevision"] == sts.revision(statefulset(image="v1"))
    assert status["updateRevision"] == sts.revision(new_sts)


def pod_entry(name: str, ip: str, ready: bool, namespace: str = "ns", **more: Any) -> dns.PodEntry:
    return dns.PodEntry(namespace, name, ip, name, "svc", {"app": "a"}, ready, **more)


def service(name: str = "svc", publish: bool = False, namespace: str = "ns") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "clusterIP": "None",
            "selector": {"app": "a"},
            "publishNotReadyAddresses": publish,
        },
    }


def test_hosts_files_name_ready_endpoints_and_the_pod_itself() -> None:
    pods = [pod_entry("p-0", "10.0.0.2", True), pod_entry("p-1", "10.0.0.3", False)]
    known = dns.records([service()], pods)
    text = dns.hosts_file(pods[1], known)
    assert "10.0.0.3\tp-1.svc.ns.svc.cluster.local p-1.svc.ns.svc p-1\n" in text
    assert (
        "10.0.0.2\tp-0.svc.ns.svc p-0.svc.ns.svc.cluster.local p-0.svc p-0.svc.ns "
        "svc.ns.svc svc.ns.svc.cluster.local svc svc.ns\n"
    ) in text
    assert "p-1.svc.ns.svc " not in text.split("\n", 3)[3]  # not ready: only its own line


def test_published_not_ready_addresses_and_other_namespaces() -> None:
    pods = [pod_entry("p-1", "10.0.0.3", False), pod_entry("p-0", "10.0.0.2", False)]
    known = dns.records([service(publish=True)], pods)
    assert [ip for ip, _ in known] == ["10.0.0.2", "10.0.0.3"]
    elsewhere = pod_entry("q", "10.0.0.9", True, namespace="other")
    text = dns.hosts_file(elsewhere, known)
    line = (
        "10.0.0.2\tp-0.svc.ns.svc p-0.svc.ns.svc.cluster.local svc.ns.svc svc.ns.svc.cluster.local"
    )
    assert f"{line}\n" in text
    assert " svc.ns " not in text


def test_terminating_pods_leave_dns() -> None:
    pods = [pod_entry("p-0", "10.0.0.2", True, terminating=True)]
    assert dns.records([service(publish=True)], pods) == []


def test_write_in_place_keeps_the_inode(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("a much longer first version\n", encoding="utf-8")
    inode = hosts.stat().st_ino
    dns.write_in_place(hosts, "short\n")
    assert (hosts.read_text(encoding="utf-8"), hosts.stat().st_ino) == ("short\n", inode)


POD: dict[str, Any] = {
    "metadata": {"name": "web-1", "namespace": "ns", "uid": "u1", "labels": {"app": "web"}},
    "spec": {"hostname": "web-1", "nodeName": NODE},
    "status": {"podIP": "10.0.0.7", "hostIP": "10.0.0.1"},
}


def lookup(kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    objects = {("configmaps", "ns", "cfg"): {"data": {"mode": "fast"}}}
    return objects.get((kind, namespace, name))


def test_environment_resolves_the_downward_api_and_config_maps() -> None:
    container = {
        "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}],
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode"}}},
            {"name": "URL", "value": "http://$(POD_IP):80/$$(POD_IP)"},
        ],
    }
    env = spec.environment(container, POD, {"PATH": "/bin"}, lookup)
    assert env == {
        "PATH": "/bin",
        "HOSTNAME": "web-1",
        "CFG_mode": "fast",
        "POD_NAME": "web-1",
        "POD_IP": "10.0.0.7",
        "APP": "web",
        "MODE": "fast",
        "URL": "http://10.0.0.7:80/$(POD_IP)",
    }


@pytest.mark.parametrize(
    "var",
    [
        {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k"}}},
        {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "absent"}}},
        {"name": "X", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}},
        {"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.unknown"}}},
    ],
)
def test_what_cannot_be_resolved_is_a_config_error(var: dict[str, Any]) -> None:
    with pytest.raises(spec.ConfigError):
        spec.environment({"env": [var]}, POD, {}, lookup)


def test_argv_maps_the_entrypoint_and_expands_arguments() -> None:
    entry = {"rocketkube": "/venv/bin/rocketkube"}
    env = {"POD_NAME": "web-1"}
    assert spec.argv({"args": ["broker", "$(POD_NAME)"]}, env, ["rocketkube"], entry) == [
        "/venv/bin/rocketkube", "broker", "web-1"
    ]  # fmt: skip
    assert spec.argv({"command": ["sleep", "1"]}, env, ["rocketkube"], entry) == ["sleep", "1"]
    assert spec.port_number({"ports": [{"name": "http", "containerPort": 8080}]}, "http") == 8080


def test_a_verdict_changes_only_after_enough_tries_in_a_row() -> None:
    probe = ProbeSpec({}, 0, 1, 1, success_threshold=2, failure_threshold=3)
    verdict = Verdict(probe, initial=False)
    assert [verdict.observe(ok) for ok in (True, False, True, True)] == [
        False, False, False, True
    ]  # fmt: skip
    assert [verdict.observe(ok) for ok in (False, False, True, False, False, False)] == [
        True, True, True, True, True, False
    ]  # fmt: skip


def test_back_off_doubles_from_the_second_restart_to_its_limit() -> None:
    backoff = Backoff(base=10, limit=300)
    assert [backoff.delay(n) for n in range(1, 9)] == [0, 10, 20, 40, 80, 160, 300, 300]
    assert (exit_code(-9), exit_code(-15), exit_code(3)) == (137, 143, 3)


def test_config_map_volumes_project_items_and_modes(tmp_path: Path) -> None:
    volume = {"name": "cfg", "items": [{"key": "a", "path": "sub/a.conf", "mode": 0o600}]}
    files = volumes.object_files(volume, {"data": {"a": "x=1\n", "b": "y"}})
    assert files == {"sub/a.conf": (b"x=1\n", 0o600)}
    (tmp_path / "stale").write_text("old", encoding="utf-8")
    volumes.write_files(tmp_path, files)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        "sub", "sub/a.conf"
    ]  # fmt: skip
    assert (tmp_path / "sub/a.conf").stat().st_mode & 0o777 == 0o600


def test_the_mount_script_binds_parents_first_then_execs(tmp_path: Path) -> None:
    container = {
        "volumeMounts": [
            {"name": "data", "mountPath": "/var/lib/app/cache"},
            {"name": "config", "mountPath": "/etc/app", "readOnly": True},
            {"name": "data", "mountPath": "/var/lib/app"},
        ]
    }
    sources = {"config": tmp_path / "config", "data": tmp_path / "data"}
    mounts = volumes.mounts(container, sources)
    assert [m.target for m in mounts] == ["/etc/app", "/var/lib/app", "/var/lib/app/cache"]
    assert [m.target for m in volumes.mount_points(mounts)] == ["/etc/app", "/var/lib/app"]
    stage = tmp_path / "stage"
    script = volumes.mount_script(mounts, "web-1", "/", stage)
    assert script.splitlines() == [
        "set -e",
        "hostname web-1",
        f"mkdir -p {stage}",
        f"mkdir -p {stage}/0",
        f"mount --bind {tmp_path}/config {stage}/0",
        f"mkdir -p {stage}/1",
        f"mount --bind {tmp_path}/data {stage}/1",
        f"mkdir -p {stage}/2",
        f"mount --bind {tmp_path}/data {stage}/2",
        f"exec 3< {stage}",
        "mkdir -p /etc/app",
        "mount --no-canonicalize --bind /proc/self/fd/3/0 /etc/app",
        "mount -o remount,bind,ro /etc/app",
        "mkdir -p /var/lib/app",
        "mount --no-canonicalize --bind /proc/self/fd/3/1 /var/lib/app",
        "mkdir -p /var/lib/app/cache",
        "mount --no-canonicalize --bind /proc/self/fd/3/2 /var/lib/app/cache",
        "exec 3<&-",
        "cd /",
        'exec "$@"',
    ]


def test_a_subnet_is_chosen_clear_of_those_taken() -> None:
    taken = [n for n in POOL.subnets(new_prefix=24) if n.network_address.packed[2] != 7]
    assert choose_subnet(taken, random.Random(1)) == ipaddress.IPv4Network("10.244.7.0/24")
    with pytest.raises(RuntimeError):
        choose_subnet([POOL])


def test_pod_status_keeps_transition_times_while_conditions_hold() -> None:
    ready = [{"name": "c", "ready": True}]

    def status(previous: dict[str, Any], containers: list[dict[str, Any]], now: str) -> Any:
        return pod_status(previous, phase="Running", host_ip="10.0.0.1", pod_ip="10.0.0.2",
                          start_time="t0", containers=containers, now=now)  # fmt: skip

    first = status({}, ready, "t1")
    assert {c["type"]: (c["status"], c["lastTransitionTime"]) for c in first["conditions"]} == {
        "PodScheduled": ("True", "t1"),
        "Initialized": ("True", "t1"),
        "ContainersReady": ("True", "t1"),
        "Ready": ("True", "t1"),
    }
    later = status(first, [{"name": "c", "ready": False}], "t2")
    assert {c["type"]: (c["status"], c["lastTransitionTime"]) for c in later["conditions"]} == {
        "PodScheduled": ("True", "t1"),
        "Initialized": ("True", "t1"),
        "ContainersReady": ("False", "t2"),
        "Ready": ("False", "t2"),
    }
    assert (later["podIP"], later["podIPs"], later["hostIP"]) == (
        "10.0.0.2", [{"ip": "10.0.0.2"}], "10.0.0.1"
    )  # fmt: skip
