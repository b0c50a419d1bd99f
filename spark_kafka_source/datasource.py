"""The ``kafkalog`` data source for ``spark.read.format("kafkalog")`` and
``spark.readStream.format("kafkalog")`` (PySpark's Python data source API).

Schema: exactly Spark's Kafka source schema, plus ``headers`` with ``includeHeaders``; a schema
given by the user is refused, as Spark does. Planning runs on the driver and resolves every offset
once; each input partition carries its range and settings, and its task yields Arrow batches (see
``planning``, ``input_partitions`` and ``reading``; a stream plans each micro-batch the same way,
see ``streaming``).

Writes (batch or streaming) are refused with one line saying so (``UnsupportedModeError``); a
batch write without ``.mode("append")`` meets Spark's own save-mode check first. Errors whose
message says all a user needs are reported without a traceback (``explained``).
"""

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType,
                               TimestampType)

from . import options as source_options
from .explained import UnsupportedModeError, explained
from .input_partitions import input_partitions, read_partition
from .planning import client_for, resolve_ranges
from .streaming import KafkaLogStreamReader

__all__ = ["KafkaLogDataSource", "UnsupportedModeError", "explained", "source_schema"]

WRITE_REFUSED = ('writing to Kafka (df.write, df.writeStream) is not supported yet; the kafkalog source reads: '
                 'spark.read.format("kafkalog")...load() or spark.readStream.format("kafkalog")...load()')

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
BASE_SCHEMA = StructType([
    StructField("key", BinaryType()), StructField("value", BinaryType()), StructField("topic", StringType()),
    StructField("partition", IntegerType()), StructField("offset", LongType()),
    StructField("timestamp", TimestampType()), StructField("timestampType", IntegerType()),
])


def source_schema(include_headers: bool) -> StructType:
    return StructType(BASE_SCHEMA.fields + [StructField("headers", HEADERS)]) if include_headers else BASE_SCHEMA


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafkalog")`` (a bounded batch read of Kafka-protocol topics) and
    ``spark.readStream.format("kafkalog")``.

    ``schema()`` checks the options as far as both kinds of query need (Spark pickles the source
    for ``reader()`` or ``streamReader()``, in another worker); those check them for their kind of
    query, so each warning about them is logged once per read."""

    @classmethod
    def name(cls) -> str:
        return "kafkalog"

    def schema(self) -> StructType:
        with explained():
            self.checked = source_options.parse(self.options, source_options.EITHER)
        return source_schema(self.checked.include_headers)

    def _parsed(self, query: str) -> source_options.SourceOptions:
        with explained():
            if not hasattr(self, "checked"):  # Spark asks schema() only when the user gave no schema of their own
                raise source_options.OptionError("the kafkalog source has a fixed schema and cannot be set with a "
                                                 "custom one; remove the .schema(...) call")
            return source_options.parse(self.options, query)

    def reader(self, schema: StructType) -> "KafkaLogReader":
        return KafkaLogReader(self._parsed(source_options.BATCH))

    def streamReader(self, schema: StructType) -> KafkaLogStreamReader:
        return KafkaLogStreamReader(self._parsed(source_options.STREAM))

    def writer(self, schema: StructType, overwrite: bool):
        with explained():
            raise UnsupportedModeError(WRITE_REFUSED)

    def streamWriter(self, schema: StructType, overwrite: bool):
        with explained():
            raise UnsupportedModeError(WRITE_REFUSED)


class KafkaLogReader(DataSourceReader):
    def __init__(self, parsed: source_options.SourceOptions):
        self.parsed = parsed

    def partitions(self) -> list:
        with explained(), client_for(self.parsed) as client:
            return input_partitions(client, self.parsed, resolve_ranges(client, self.parsed))

    def read(self, partition: InputPartition):
        return read_partition(partition)
