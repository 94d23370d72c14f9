"""The source on ``local-cluster[2,1,1024]``: two executors in JVMs and Python workers of
their own, so partitions, offsets and options must travel as plain picklable data and each
task must open its own connections. A process of its own runs it: a process holds one
SparkContext, and the suite's is ``local[2]``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from spark_cluster import Cluster, CreateTopic, fill

pytestmark = [pytest.mark.xdist_group("spark"), pytest.mark.slow]

PROGRAM = """
import sys
from pyspark.sql import SparkSession

namesrv, topic = sys.argv[1:]
spark = (
    SparkSession.builder.master("local-cluster[2,1,1024]")
    .config("spark.ui.enabled", "false")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .getOrCreate()
)
try:
    frame = spark.read.format("rocketmq").option("namesrvAddr", namesrv).option("topic", topic)
    for row in frame.load().repartition(2).collect():
        print(bytes(row.body).decode())
finally:
    spark.stop()
"""


def test_a_read_on_separate_executor_processes(cluster: Cluster, create_topic: CreateTopic) -> None:
    topic = create_topic(2)
    sent = fill(cluster, topic, range(2), 20, "lc")
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, cluster.namesrv, topic],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(done.stdout.split()) == sorted(body.decode() for body in sent)
