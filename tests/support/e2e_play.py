"""What every step of the operator's end-to-end scenario (``tests/e2e``) shares: the names of
what it applies, the :class:`Play` each step is handed, and the probes steps wait on.

- The cast: the namespace, the ``demo`` cluster, its Topic and ConsumerGroup (the README's
  examples), the light store properties the test applies them with, the pods in the order
  a roll must take them.
- :class:`Play`: kubectl in the scenario's namespace, objects' statuses and conditions (now
  and as reported on the way), waits for Ready and for Events, and admin clients of the
  name servers as they are now (their DNS names resolved through the harness).
- Probes over the admin API and the pods: routes and write permission of the topic,
  whether a group's master and slave hold the same commit log, whether a slave can serve
  what its master held, whether every pod rolled to the new image, and a killed broker's
  store lock held so its restarts fail (:func:`killed_and_held`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e2e_cluster import Scene, pod_ready, resolve
from operator_harness import Kubectl, events_of

from rocketkube.client.admin.client import AdminClient
from rocketkube.client.errors import TopicNotExistError
from rocketkube.common.protocol import permission
from rocketkube.operator.api import names

__all__ = [
    "CLUSTER",
    "GROUP",
    "GROUP_KINDS",
    "GROUP_OBJECT",
    "LIGHT",
    "NAMESPACE",
    "NAMESRV_PODS",
    "NEW_IMAGE",
    "ROLL_ORDER",
    "TOPIC",
    "TOPIC_OBJECT",
    "Play",
    "broker",
    "caught_up",
    "group_pods",
    "killed_and_held",
    "master_of",
    "queues_shown",
    "rolled",
    "routes",
    "run",
    "slave_ready_to_serve",
    "topic_gone",
    "writable",
]

NAMESPACE = "e2e"
CLUSTER = "demo"
TOPIC_OBJECT, TOPIC = "orders", "Orders"
GROUP_OBJECT, GROUP = "order-processor", "OrderProcessor"
LIGHT = {
    "mappedFileSizeCommitLog": str(4 << 20),
    "mappedFileSizeConsumeQueue": str(20 * 10_000),
    "maxHashSlotNum": "5000",
    "maxIndexNum": "20000",
    "registerNameServerPeriod": "2000",
    "haReconnectInterval": "1000",
}
"""Small store files; brokers register every 2 s (a name server back from a roll knows
them soon) and a slave reconnects to its master within a second."""
NEW_IMAGE = "rocketkube/rocketkube:0.1.1"
GROUP_KINDS = ("statefulsets", "services", "configmaps", "poddisruptionbudgets")
NAMESRV_PODS = [names.namesrv_pod(CLUSTER, i) for i in range(2)]
ROLL_ORDER = [names.broker_pod(CLUSTER, g, o) for g in range(3) for o in (1, 0)]
"""Group by group, in each the slave before its master."""


def broker(group: int) -> str:
    return names.broker_name(CLUSTER, group)


def group_pods(group: int) -> list[str]:
    return [names.broker_pod(CLUSTER, group, o) for o in range(2)]


def run(kubectl: Kubectl, *args: str, stdin: str | None = None) -> str:
    done = kubectl(*args, stdin=stdin)
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout


@dataclass
class Play:
    """What every step uses."""

    scene: Scene
    kubectl: Kubectl
    offsets: Path

    def kubectl_ok(self, *args: str, stdin: str | None = None) -> str:
        return run(self.kubectl, *args, "-n", NAMESPACE, stdin=stdin)

    def patch(self, kind: str, name: str, spec: dict[str, Any]) -> None:
        self.kubectl_ok("patch", kind, name, "--type", "merge", "-p", json.dumps({"spec": spec}))

    def namesrv(self) -> str:
        """The name servers as a client reaches them now (their DNS names resolved)."""
        return resolve(
            self.scene.cluster, self.status("brokerclusters", CLUSTER)["nameServerAddress"]
        )

    def admin(self) -> AdminClient:
        """An admin client of the name servers as they are now (use ``async with``)."""
        return AdminClient(self.namesrv())

    def status(self, kind: str, name: str) -> dict[str, Any]:
        found = self.scene.get(kind, name)
        assert found is not None, f"{kind}/{name} is gone"
        return dict(found.get("status") or {})

    def cluster(self, type_: str) -> tuple[str, str]:
        """The cluster's condition ``type_``: (status, reason)."""
        status, reason, _ = self.scene.condition("brokerclusters", CLUSTER, type_)
        return status, reason

    def seen(self, mark: int, type_: str, kind: str = "brokerclusters",
             name: str = CLUSTER) -> list[tuple[str, str]]:  # fmt: skip
        """What one condition reported since ``mark``: (status, reason), in order."""
        return [(t.status, t.reason) for t in self.scene.log.since(mark, kind, name, type_)]

    async def settled(self, kind: str, name: str, timeout: float = 60) -> None:
        """Wait until the object is Ready for its generation."""
        await self.scene.until(
            lambda: self.scene.settled(kind, name), f"{kind}/{name} Ready", timeout
        )

    async def event(self, kind: str, name: str, reason: str, count: int = 1) -> None:
        """Wait for ``count`` Events of ``reason`` about an object (kopf posts them in the
        background)."""

        def posted() -> int:
            found = events_of(self.scene.cluster, kind, name, NAMESPACE)
            return sum(1 for _, why, _ in found if why == reason)

        await self.scene.until(lambda: posted() >= count, f"{count} {reason} Events on {name}")


def queues_shown(play: Play) -> dict[str, tuple[int, int]]:
    """The Topic's status: (read, write) queues per broker group."""
    groups = play.status("topics", TOPIC_OBJECT).get("groups") or ()
    return {g["brokerName"]: (g["readQueues"], g["writeQueues"]) for g in groups}


async def routes(play: Play) -> dict[str, tuple[int, int]]:
    """The name servers' route of the topic: (read, write) queues per broker group."""
    async with play.admin() as admin:
        route = await admin.topic_route(TOPIC)
    return {q.broker_name: (q.read_queue_nums, q.write_queue_nums) for q in route.queue_datas}


async def master_of(admin: AdminClient, group: int) -> str:
    info = await admin.cluster_info()
    return info.broker_addr_table[broker(group)].broker_addrs[0]


async def caught_up(play: Play, group: int) -> bool | None:
    """True once the group's master and slave are registered and hold the same commit log
    (the operator's replication lag 0); None until then."""
    async with play.admin() as admin:
        info = await admin.cluster_info()
        data = info.broker_addr_table.get(broker(group))
        if data is None or sorted(data.broker_addrs) != [0, 1]:
            return None
        ends = [
            int((await admin.broker_runtime_info(data.broker_addrs[i]))["commitLogMaxOffset"])
            for i in (0, 1)
        ]
    return True if ends[0] == ends[1] else None


async def slave_ready_to_serve(play: Play, group: int) -> bool | None:
    """True once the group's slave has every message, the topic's 16 queues and the
    consumer group (a slave copies its master's tables every 10 s)."""
    if await caught_up(play, group) is None:
        return None
    async with play.admin() as admin:
        info = await admin.cluster_info()
        slave = info.broker_addr_table[broker(group)].broker_addrs[1]
        topic = (await admin.topic_configs(slave)).get(TOPIC)
        groups = await admin.subscription_groups(slave)
    return True if topic is not None and topic.read_queue_nums == 16 and GROUP in groups else None


@contextlib.asynccontextmanager
async def killed_and_held(play: Play, pod: str) -> AsyncIterator[None]:
    """SIGKILL ``pod``'s broker and hold its store's lock from the moment it dies until the
    block ends: every restart in between fails (the store is in use). A restarted broker
    needs most of a second to reach its store: the lock is ours long before."""
    claim = play.scene.harness.claim_dir(f"{names.STORE_VOLUME}-{pod}", NAMESPACE)
    fd = os.open(claim / "store" / "lock", os.O_RDWR)
    try:
        play.scene.harness.kill(pod, NAMESPACE)
        await play.scene.until(lambda: locked(fd), f"{pod}'s store lock taken as it died", 10)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def locked(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def rolled(play: Play) -> bool:
    """Every pod of the cluster Ready on the new image, the cluster settled on it with
    nothing in progress."""
    pods = play.scene.pods()
    if sorted(pods) != sorted([*ROLL_ORDER, *NAMESRV_PODS]):
        return False
    for pod in pods.values():
        image = pod["spec"]["containers"][0]["image"]
        if image != NEW_IMAGE or pod["metadata"].get("deletionTimestamp") or not pod_ready(pod):
            return False
    return (
        play.scene.settled("brokerclusters", CLUSTER)
        and play.status("brokerclusters", CLUSTER).get("image") == NEW_IMAGE
        and play.cluster("Progressing") == ("False", "Idle")
    )


async def writable(admin: AdminClient, group: int) -> bool:
    route = await admin.topic_route(broker(group))
    return all(queue.perm & permission.PERM_WRITE for queue in route.queue_datas)


async def topic_gone(play: Play) -> bool | None:
    async with play.admin() as admin:
        try:
            await admin.topic_route(TOPIC)
        except TopicNotExistError:
            return True
    return None
