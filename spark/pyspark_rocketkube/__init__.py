"""The ``rocketmq`` data source under the name Spark looks for on its own.

When a session first needs a Python data source, PySpark imports every top-level module whose
name starts with ``pyspark_`` and registers the ``DefaultSource`` each one exposes, by its
``name()``: so ``spark.read.format("rocketmq")`` works with no ``spark.dataSource.register``.
"""

from rocketkube.spark.source import RocketMQDataSource as DefaultSource

__all__ = ["DefaultSource"]
