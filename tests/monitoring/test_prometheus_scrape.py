"""A real Prometheus scrapes a running name server, a master and a slave broker (processes
of their own) with messages flowing, and the operator (against the emulated API server,
reconciling a BrokerCluster); every dashboard panel's query and template variable, its
variables substituted, must then answer with data through Prometheus' HTTP API, and every
alert rule must evaluate without error.

Static target labels stand in for those Kubernetes' service discovery would give
(``docs/monitoring.md``): namespace ``shop``, cluster ``demo``, each pod's name and
component; the operator runs in ``rocketkube-system``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from broker_process import free_port, pull, send, start_broker, stop_broker
from kube_api import running_kube_api
from monitoring import (
    Prometheus,
    Query,
    Target,
    dashboard_files,
    dashboard_queries,
    need,
    running_prometheus,
    substitute,
)
from operator_harness import RunningOperator, running_operator

from rocketkube.common.http_endpoint import HttpEndpoint
from rocketkube.common.message import ids
from rocketkube.common.protocol.consumer_headers import ConsumerSendMsgBackRequestHeader
from rocketkube.common.protocol.pull_headers import UpdateConsumerOffsetRequestHeader
from rocketkube.common.remoting.client import RemotingClient
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.namesrv.app import NamesrvApp

pytestmark = pytest.mark.slow

TOPIC = "MonitoredTopic"
GROUP = "Verify"
"""The consumer group :func:`broker_process.pull` pulls as."""
NAMESPACE, CLUSTER, OPERATOR_NAMESPACE = "shop", "demo", "rocketkube-system"
TRAFFIC_ROUNDS = 3_000
"""Upper bound of the send-and-pull rounds of the traffic (one every 20 ms)."""
ANSWER_SECONDS = 60
"""How long the queries may take to all have data (scrapes every second)."""


def values(dashboard: str) -> dict[str, str]:
    """Grafana's variables as the test sets them for ``dashboard``."""
    namespace = OPERATOR_NAMESPACE if dashboard == "operator.json" else NAMESPACE
    return {"namespace": namespace, "cluster": CLUSTER, "topic": TOPIC, "group": GROUP,
            "__rate_interval": "15s", "datasource": "prometheus"}  # fmt: skip


def target(port: int, pod: str, component: str, namespace: str = NAMESPACE) -> Target:
    labels = {"namespace": namespace, "pod": pod, "component": component}
    return Target(port, labels | ({"cluster": CLUSTER} if component != "operator" else {}))


@contextlib.asynccontextmanager
async def brokers(namesrv: NamesrvApp, workdir: Path) -> AsyncIterator[tuple[list[Target], str]]:
    """A master and its slave, processes of their own registered with ``namesrv``: their
    targets, and the master's address."""
    started: list[asyncio.subprocess.Process] = []
    targets, addresses = [], []
    try:
        for broker_id, role in ((0, "ASYNC_MASTER"), (1, "SLAVE")):
            port, http_port = free_port(), free_port()
            started.append(await start_broker(
                workdir / f"store-{broker_id}", port, http_port,
                f"namesrvAddr={namesrv.address}", f"brokerClusterName={CLUSTER}",
                f"brokerName={CLUSTER}-broker-0", f"brokerId={broker_id}", f"brokerRole={role}",
            ))  # fmt: skip
            targets.append(target(http_port, f"{CLUSTER}-broker-0-{broker_id}", "broker"))
            addresses.append(f"127.0.0.1:{port}")
        yield targets, addresses[0]
    finally:
        for process in started:
            await stop_broker(process)


@contextlib.contextmanager
def operator(workdir: Path) -> Iterator[RunningOperator]:
    """The operator watching the emulated API server, with a BrokerCluster to reconcile
    (its brokers unreachable: conditions say so)."""
    with running_kube_api(workdir / "kubeconfig") as kube, running_operator(kube) as running:
        kube.cluster.create_object(_cluster())
        yield running


def _cluster() -> dict[str, object]:
    return {
        "apiVersion": "rocketkube.io/v1alpha1",
        "kind": "BrokerCluster",
        "metadata": {"name": CLUSTER, "namespace": "default"},
        "spec": {"nameServers": {"replicas": 1}, "brokers": {"groups": 1}},
    }


async def traffic(master: str) -> None:
    """Sends and pulls on ``master`` (bounded), commits the group halfway (so it lags) and
    sends one message back for retry and one to the dead letter queue."""
    client = RemotingClient(timeout=10)
    try:
        for round_ in range(TRAFFIC_ROUNDS):
            queue = round_ % 4
            sent = await _call(client, master, send(TOPIC, queue, b"m%d" % round_, f"U{round_}"))
            offset = int(sent.ext_fields["queueOffset"])
            await _call(client, master, pull(TOPIC, queue, offset))
            header = UpdateConsumerOffsetRequestHeader(GROUP, TOPIC, queue, offset // 2)
            await _call(client, master, RemotingCommand.request(
                RequestCode.UPDATE_CONSUMER_OFFSET, header.encode()
            ))  # fmt: skip
            if round_ < 2:
                await _send_back(client, master, sent, delay_level=-round_)
            await asyncio.sleep(0.02)
    finally:
        await client.close()


async def _send_back(
    client: RemotingClient, master: str, sent: RemotingCommand, delay_level: int
) -> None:
    header = ConsumerSendMsgBackRequestHeader(
        offset=ids.decode_offset_msg_id(sent.ext_fields["msgId"])[2], group=GROUP,
        delay_level=delay_level, origin_msg_id="", origin_topic=TOPIC, max_reconsume_times=16,
    )  # fmt: skip
    request = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header.encode())
    request.version = 409
    await _call(client, master, request)


async def _call(client: RemotingClient, address: str, request: RemotingCommand) -> RemotingCommand:
    response = await client.invoke(address, request)
    assert response.code == ResponseCode.SUCCESS, response.remark
    return response


async def empty_queries(prometheus: Prometheus, queries: list[tuple[Query, str]]) -> list[str]:
    """Where each query without data is, with its expression."""
    return [f"{q.where}: {expr}" for q, expr in queries if not await prometheus.query(expr)]


async def test_every_dashboard_query_answers_from_a_running_cluster(
    namesrv: NamesrvApp, tmp_path: Path
) -> None:
    need("prometheus")
    queries = [
        (query, substitute(query.expr, values(path.name)))
        for path in dashboard_files()
        for query in dashboard_queries(path)
    ]
    with operator(tmp_path) as running:
        endpoint = HttpEndpoint(running.metrics.registry, "127.0.0.1", 0, lambda: True)
        await endpoint.start()
        try:
            async with brokers(namesrv, tmp_path) as (broker_targets, master):
                targets = [
                    target(namesrv.http.port, f"{CLUSTER}-namesrv-0", "namesrv"),
                    *broker_targets,
                    target(endpoint.port, "rocketkube-operator-0", "operator", OPERATOR_NAMESPACE),
                ]
                flowing = asyncio.create_task(traffic(master))
                try:
                    async with running_prometheus(tmp_path, targets) as prometheus:
                        missing = await _until_answered(prometheus, queries)
                        rules = await prometheus.rules()
                finally:
                    flowing.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await flowing
        finally:
            await endpoint.stop()
    assert not missing, "queries without data:\n" + "\n".join(missing)
    evaluated = [rule for group in rules for rule in group["rules"]]
    assert len(evaluated) == 8
    assert all(rule["health"] == "ok" for rule in evaluated), evaluated


async def _until_answered(prometheus: Prometheus, queries: list[tuple[Query, str]]) -> list[str]:
    deadline = time.monotonic() + ANSWER_SECONDS
    missing = await empty_queries(prometheus, queries)
    while missing and time.monotonic() < deadline:
        await asyncio.sleep(1)
        missing = await empty_queries(prometheus, queries)
    return missing
