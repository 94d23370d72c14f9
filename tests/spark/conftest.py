"""Fixtures of the Spark tests: ONE SparkSession (``local[2]``) and ONE name server and broker
(child processes on 127.0.0.1, ephemeral ports) for the whole test session, plus a fresh
topic per test so tests never see each other's messages.

Spark's Python workers run the interpreter running pytest (``PYSPARK_PYTHON``), so they import
this checkout's code. Every Spark test is in the ``spark`` xdist group, which the Makefile's
``--dist loadgroup`` keeps on one worker: one JVM per run.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession
from spark_cluster import Cluster, CreateTopic, child_cluster
from waiting import WAIT_SECONDS

from rocketkube.client import sync
from rocketkube.client.admin.client import AdminClient
from rocketkube.client.errors import MQClientError
from rocketkube.common.errors import RemotingError


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with child_cluster(tmp_path_factory.mktemp("spark-cluster")) as running:
        yield running


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The session's SparkSession: ``local[2]``, small shuffles, no UI."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYSPARK_PYTHON", sys.executable)
        patch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
        session = (
            SparkSession.builder.master("local[2]")
            .appName("rocketkube-tests")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.host", "127.0.0.1")
            # a Python worker started on a loaded CI machine may take longer than the 15 s
            # default to connect back ("Python worker failed to connect back")
            .config("spark.python.authenticate.socketTimeout", "120s")
            .getOrCreate()
        )
        try:
            yield session
        finally:
            session.stop()


@pytest.fixture(scope="session")
def admin(cluster: Cluster) -> Iterator[sync.AdminClient]:
    with sync.AdminClient(cluster.namesrv) as client:
        yield client


@pytest.fixture(scope="session")
def create_topic(admin: sync.AdminClient) -> CreateTopic:
    """Creates a fresh topic on every broker of DefaultCluster and waits until it is routed."""

    def create(queues: int = 4) -> str:
        topic = f"Spark_{uuid.uuid4().hex[:10]}"
        admin.run(
            lambda a: a.create_topic(
                topic, cluster="DefaultCluster", read_queue_nums=queues, write_queue_nums=queues
            )
        )
        admin.run(lambda a: _routed(a, topic), timeout=WAIT_SECONDS)
        return topic

    return create


async def _routed(admin: AdminClient, topic: str) -> None:
    while True:
        try:
            await admin.topic_route(topic)
            return
        except (MQClientError, RemotingError):
            await asyncio.sleep(0.05)
