"""The ``rocketmq`` data source: what Spark instantiates for ``format("rocketmq")``.

Spark builds it from the query's options wherever it plans the query; the options are
checked there (:mod:`.options`), so a bad one fails the query before any task runs. Reads are
planned and run by :mod:`.reader` (streaming reads by :mod:`.stream_reader`), writes by
:mod:`.writer`.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from rocketkube.spark import options, reader, schema, stream_reader
from rocketkube.spark import writer as writers

__all__ = ["RocketMQDataSource"]


class RocketMQDataSource(DataSource):
    """``spark.read.format("rocketmq")`` and ``df.write.format("rocketmq")``."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> StructType:
        return schema.SCHEMA

    def reader(self, schema: StructType) -> reader.BatchReader:
        parsed = options.parse_read_options(self.options)
        if parsed.filter_pushdown:
            return reader.FilteringReader(parsed)
        return reader.BatchReader(parsed)

    def streamReader(self, schema: StructType) -> stream_reader.StreamReader:
        return stream_reader.StreamReader(options.parse_read_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> writers.BatchWriter:
        if overwrite:
            raise writers.SchemaError(
                'rocketmq write: a topic cannot be overwritten, only appended to (mode("append"))'
            )
        return writers.BatchWriter(_write_options(self.options, schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> writers.StreamWriter:
        if overwrite:
            raise writers.SchemaError(
                'rocketmq write: a topic is only appended to (outputMode("append"))'
            )
        return writers.StreamWriter(_write_options(self.options, schema))


def _write_options(given: Mapping[str, str], schema: StructType) -> options.WriteOptions:
    parsed = options.parse_write_options(given)
    writers.check_schema(schema, parsed)
    return parsed
