"""rocketkube's Spark data source: RocketMQ topics as DataFrames (batch and streaming).

Install with ``pip install 'rocketkube[spark]'``, then::

    from rocketkube.spark import RocketMQDataSource

    spark.dataSource.register(RocketMQDataSource)
    df = (spark.read.format("rocketmq")
          .option("namesrvAddr", "127.0.0.1:9876").option("topic", "Orders").load())

Modules (pure ones first):

- :mod:`.options`: the options, parsed and checked at planning.
- :mod:`.security`: the ACL account and TLS every client of the source connects with.
- :mod:`.schema`: the row schema and a message's row.
- :mod:`.offsets`: queue offset ranges planned and split into partitions.
- :mod:`.stream_offsets`: a stream's offsets as JSON, admission control, its batches' ranges.
- :mod:`.lookups`: what planning asks the cluster (topics, queue bounds, group offsets).
- :mod:`.pushdown`: the query's filters a batch read applies itself.
- :mod:`.pulling`: one offset range pulled from its broker, pulls kept in flight ahead.
- :mod:`.reader`: the batch reader (plans through the admin API, pulls in executors).
- :mod:`.stream_reader`: the streaming reader (micro-batches, AvailableNow, group commits).
- :mod:`.writer`: the batch writer (the SDK's producer, batched).
- :mod:`.source`: the data source Spark instantiates.

- :mod:`.jobs`: ``rocketkube spark archive|replay|stats``, also run by ``spark-submit``.

Spark also finds it without a register call through the top-level module
``pyspark_rocketkube`` (its ``DefaultSource``), as it looks for every module named
``pyspark_*``.

``RocketMQDataSource`` is imported on first use, so ``rocketkube spark`` can parse its
arguments (and ``rocketkube`` list its commands) without importing pyspark.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rocketkube.spark.source import RocketMQDataSource

__all__ = ["RocketMQDataSource"]


def __getattr__(name: str) -> Any:
    if name == "RocketMQDataSource":
        return importlib.import_module("rocketkube.spark.source").RocketMQDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
