"""The kubelet harness's Deployment controller, pure: the pods it asks for, the ones it
deletes (scaling, replacing, rolling within ``maxSurge`` and ``maxUnavailable``,
recreating) and the status it reports, without a cluster or a process."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import kubelet_deployments as deployments
import pytest
from kubelet_statefulsets import POD_FINALIZER, is_ready

NODE = "node-a"
Obj = dict[str, Any]


def deployment(
    replicas: int = 2,
    image: str = "v1",
    strategy: Obj | None = None,
) -> Obj:
    return {
        "metadata": {"name": "web", "namespace": "ns", "uid": "dep-uid", "generation": 4},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": strategy or {"type": "RollingUpdate",
                                     "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {"a": "1"}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
    }  # fmt: skip


def pod(
    name: str,
    of: Obj,
    *,
    ready: bool = True,
    created: str = "2024-01-01T00:00:00Z",
    terminating: bool = False,
    phase: str = "Running",
) -> Obj:
    metadata: Obj = {
        "name": name,
        "labels": {deployments.HASH_LABEL: deployments.template_hash(of)},
        "creationTimestamp": created,
    }
    if terminating:
        metadata["deletionTimestamp"] = "2024-01-01T00:01:00Z"
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {"metadata": metadata, "status": {"phase": phase, "conditions": conditions}}


def test_a_deployment_asks_for_its_replicas_named_after_it_and_its_template() -> None:
    web = deployment(replicas=2)
    step = deployments.plan(web, [], NODE)
    assert step.delete == []
    assert len(step.create) == 2
    new = step.create[0]
    pod_hash = deployments.template_hash(web)
    assert new["metadata"]["generateName"] == f"web-{pod_hash}-"
    assert new["metadata"]["labels"] == {"app": "web", "pod-template-hash": pod_hash}
    assert new["metadata"]["annotations"] == {"a": "1"}
    assert new["metadata"]["finalizers"] == [POD_FINALIZER]
    (owner,) = new["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("Deployment", "dep-uid", True)
    assert new["spec"] == {"containers": [{"name": "c", "image": "v1"}], "nodeName": NODE}
    assert len(pod_hash) == 10
    assert pod_hash != deployments.template_hash(deployment(image="v2"))


def test_pods_going_or_finished_are_replaced_and_surplus_ones_go_unready_first() -> None:
    web = deployment(replicas=3)
    pods = [pod("a", web), pod("b", web, terminating=True), pod("c", web, phase="Failed")]
    step = deployments.plan(web, pods, NODE)
    assert (len(step.create), step.delete) == (2, [])
    web = deployment(replicas=1)
    pods = [
        pod("old", web, created="2024-01-01T00:00:00Z"),
        pod("new", web, created="2024-01-02T00:00:00Z"),
        pod("unready", web, ready=False, created="2023-01-01T00:00:00Z"),
    ]
    step = deployments.plan(web, pods, NODE)
    assert (step.create, step.delete) == ([], ["unready", "new"])


def roll(web: Obj, pods: list[Obj]) -> Iterator[tuple[int, int]]:
    """Run the controller to the end of a roll, each created pod becoming Ready a pass
    after it appears and each deleted one going at once; (pods, ready ones) at each
    pass."""
    names = (f"p{n}" for n in itertools.count())
    for _ in range(20):
        for existing in pods:  # the pods created last pass are Ready now
            existing["status"]["conditions"][0]["status"] = "True"
        step = deployments.plan(web, pods, NODE)
        if not step.create and not step.delete:
            return
        pods[:] = [p for p in pods if p["metadata"]["name"] not in step.delete]
        pods += [pod(next(names), web, ready=False) for _ in step.create]
        yield len(pods), sum(is_ready(p) for p in pods)
    raise AssertionError("the roll did not end")


@pytest.mark.parametrize(
    ("surge", "unavailable", "most", "fewest_ready"),
    [(1, 0, 4, 3), (0, 1, 3, 2), ("50%", "50%", 4, 2)],
)
def test_a_template_change_rolls_within_surge_and_unavailability(
    surge: int | str, unavailable: int | str, most: int, fewest_ready: int
) -> None:
    before = deployment(replicas=3)
    strategy = {"type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}  # fmt: skip
    after = deployment(replicas=3, image="v2", strategy=strategy)
    pods = [pod(name, before) for name in ("a", "b", "c")]
    counts = list(roll(after, pods))
    assert max(total for total, _ in counts) == most
    assert min(ready for _, ready in counts) == fewest_ready
    assert len(pods) == 3
    wanted = deployments.template_hash(after)
    assert {p["metadata"]["labels"][deployments.HASH_LABEL] for p in pods} == {wanted}


def test_recreate_deletes_every_old_pod_and_waits_for_them_to_go() -> None:
    before = deployment(replicas=2)
    after = deployment(replicas=2, image="v2", strategy={"type": "Recreate"})
    old = [pod("a", before), pod("b", before)]
    assert deployments.plan(after, old, NODE).delete == ["a", "b"]
    going = [pod("a", before, terminating=True)]
    step = deployments.plan(after, going, NODE)
    assert (step.create, step.delete) == ([], [])
    assert len(deployments.plan(after, [], NODE).create) == 2


def test_surge_and_unavailability_resolve_percentages_as_kubernetes() -> None:
    percent = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%",
                                                          "maxUnavailable": "25%"}}  # fmt: skip
    assert deployments.rolling_bounds(deployment(10, strategy=percent)) == (3, 2)
    assert deployments.rolling_bounds(deployment(10, strategy={"type": "Recreate"})) == (0, 0)
    zero = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}
    assert deployments.rolling_bounds(deployment(10, strategy=zero)) == (1, 0)


def test_status_counts_pods_and_says_when_the_deployment_is_available() -> None:
    before, web = deployment(replicas=2), deployment(replicas=2, image="v2")
    pods = [pod("a", web), pod("b", web, ready=False), pod("c", before),
            pod("d", web, terminating=True)]  # fmt: skip
    status = deployments.status(web, pods, "t1")
    assert {k: v for k, v in status.items() if k != "conditions"} == {
        "observedGeneration": 4,
        "replicas": 3,
        "updatedReplicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "unavailableReplicas": 0,
    }
    available, progressing = status["conditions"]
    assert (available["type"], available["status"], available["reason"]) == (
        "Available", "True", "MinimumReplicasAvailable"
    )  # fmt: skip
    assert progressing["reason"] == "ReplicaSetUpdated"
    web["status"] = status
    done = deployments.status(web, [pod("a", web), pod("b", web)], "t2")
    assert done["conditions"][0]["lastTransitionTime"] == "t1"  # unchanged: kept
    assert done["conditions"][1]["reason"] == "NewReplicaSetAvailable"
    assert done["conditions"][1]["lastTransitionTime"] == "t2"
    none_ready = deployments.status(web, [pod("a", web, ready=False)], "t3")
    assert none_ready["conditions"][0]["status"] == "False"
