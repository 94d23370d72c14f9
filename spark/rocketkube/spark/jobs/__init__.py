"""The pipeline jobs on the ``rocketmq`` data source, as ``rocketkube spark JOB`` or
``spark-submit .../rocketkube/spark/jobs/__main__.py JOB``:

- :mod:`.archive`: Structured Streaming from topics to Parquet, partitioned by topic and date,
  exactly once through its checkpoint.
- :mod:`.replay`: a Parquet archive (or a time range of it) back into a topic.
- :mod:`.stats`: per-topic and per-queue counts, bytes, key cardinality and end-to-end
  latency percentiles over a time range, as Parquet and a printed table.
- :mod:`.cli`: the arguments, and the SparkSession each job runs in. It imports pyspark only
  once a job runs, so the ``rocketkube`` command lists and parses without it.

Each job is a function of a SparkSession and a frozen settings dataclass, so tests run it in
their own session.
"""
