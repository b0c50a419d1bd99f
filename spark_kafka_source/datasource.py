"""The ``kafkalog`` data source for ``spark.read.format("kafkalog")`` (PySpark's Python data source API).

Schema: exactly Spark's Kafka source schema, plus ``headers`` with ``includeHeaders``; a schema
given by the user is refused, as Spark does. Planning (``partitions()``) runs on the driver and
resolves every offset once; each input partition carries its range and settings, and ``read()``
yields Arrow batches (see ``planning`` and ``reading``).

Only batch reads are supported: a streaming read and a write (batch or streaming) are refused with
one line saying so (``UnsupportedModeError``). Spark's Python data source API gives a source no say
before a streaming query's thread starts, so a ``readStream`` query is refused by its first step,
and a batch write without ``.mode("append")`` meets Spark's own save-mode check first.

An error whose message says all a user needs (a bad option, data loss, an unreachable broker,
refused credentials or an untrusted certificate, an unsupported mode) is reported by the Spark
Python worker without a traceback (``explained``).
"""

import os

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType,
                               TimestampType)

from broker.client import KafkaError
from broker.client.connection import AuthenticationError, BrokerConnectionError

from . import options as source_options
from .planning import DataLossError, client_for, resolve_ranges, split
from .reading import TaskSettings, read_range

BATCH_READS = 'the kafkalog source supports batch reads only: spark.read.format("kafkalog")...load()'
STREAMING_READ_REFUSED = (f"streaming reads (spark.readStream) are not supported yet; {BATCH_READS}, or load "
                          f"incrementally with kafkalog load")
WRITE_REFUSED = f"writing to Kafka (df.write, df.writeStream) is not supported yet; {BATCH_READS}"

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
BASE_SCHEMA = StructType([
    StructField("key", BinaryType()), StructField("value", BinaryType()), StructField("topic", StringType()),
    StructField("partition", IntegerType()), StructField("offset", LongType()),
    StructField("timestamp", TimestampType()), StructField("timestampType", IntegerType()),
])


def source_schema(include_headers: bool) -> StructType:
    return StructType(BASE_SCHEMA.fields + [StructField("headers", HEADERS)]) if include_headers else BASE_SCHEMA


class UnsupportedModeError(RuntimeError):
    """A streaming read or a write: the source does batch reads only, for now."""


EXPLAINED_ERRORS = (source_options.OptionError, DataLossError, KafkaError, BrokerConnectionError,
                    AuthenticationError, UnsupportedModeError)


class explained:
    """Around work Spark runs in a Python worker: an error of ``EXPLAINED_ERRORS`` is reported as its
    one line, without the traceback. Spark formats the error after our code returns, hiding the
    traceback when ``SPARK_HIDE_TRACEBACK`` is set (what ``spark.sql.pyspark.hideTraceback.enabled``
    sets); the worker exits after reporting an error, so the setting ends with it. Outside a Spark
    worker nothing is changed."""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        if isinstance(error, EXPLAINED_ERRORS) and os.environ.get("SPARK_PYTHON_RUNTIME") == "PYTHON_WORKER":
            os.environ["SPARK_HIDE_TRACEBACK"] = "1"
        return False


def explained_batches(batches):
    """``batches``, with an error raised while reading them reported as in ``explained``."""
    with explained():
        yield from batches


class KafkaInputPartition(InputPartition):
    """One task: a topic partition's ``[start, end)`` range, its leader at planning time, the settings."""

    def __init__(self, topic: str, partition: int, start: int, end: int, leader: str, settings: TaskSettings):
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end
        self.leader = leader
        self.settings = settings

    def __repr__(self) -> str:
        return f"KafkaInputPartition({self.topic}-{self.partition} [{self.start}, {self.end}) leader {self.leader})"


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafkalog")``: a bounded batch read of Kafka-protocol topics.

    The options are parsed once, by ``schema()`` (Spark pickles the source with them for
    ``reader()``, in another worker), so each warning about them is logged once."""

    @classmethod
    def name(cls) -> str:
        return "kafkalog"

    def schema(self) -> StructType:
        with explained():
            self.parsed = source_options.parse(self.options)
        return source_schema(self.parsed.include_headers)

    def reader(self, schema: StructType) -> "KafkaLogReader":
        with explained():
            if not hasattr(self, "parsed"):  # Spark asks schema() only when the user gave no schema of their own
                raise source_options.OptionError("the kafkalog source has a fixed schema and cannot be set with a "
                                                 "custom one; remove the .schema(...) call")
        return KafkaLogReader(self.parsed)

    def streamReader(self, schema: StructType) -> "RefusedStreamReader":
        return RefusedStreamReader()

    def writer(self, schema: StructType, overwrite: bool):
        with explained():
            raise UnsupportedModeError(WRITE_REFUSED)

    def streamWriter(self, schema: StructType, overwrite: bool):
        with explained():
            raise UnsupportedModeError(WRITE_REFUSED)


class RefusedStreamReader(DataSourceStreamReader):
    """A streaming read, refused by the first call Spark makes. Not by ``streamReader()`` itself:
    Spark's streaming runner then stops a reader it never got, and reports that ``UnboundLocalError``
    instead of the refusal."""

    def initialOffset(self) -> dict:
        with explained():
            raise UnsupportedModeError(STREAMING_READ_REFUSED)

    def latestOffset(self) -> dict:
        return self.initialOffset()

    def read(self, partition: InputPartition):
        return self.initialOffset()


class KafkaLogReader(DataSourceReader):
    def __init__(self, parsed: source_options.SourceOptions):
        self.parsed = parsed

    def partitions(self) -> list:
        options = self.parsed
        settings = TaskSettings(options.bootstrap_servers, options.client, options.fail_on_data_loss,
                                options.include_headers, options.poll_timeout_ms, options.task_checkpoint_location)
        with explained(), client_for(options) as client:
            ranges = resolve_ranges(client, options)
            leaders = {(r.topic, r.partition): client.leader_of(r.topic, r.partition) for r in ranges}
        return [KafkaInputPartition(r.topic, r.partition, r.start, r.end,
                                    f"{leaders[r[:2]].host}:{leaders[r[:2]].port}", settings)
                for r in split(ranges, options.min_partitions, options.max_records_per_partition)]

    def read(self, partition: InputPartition):
        if not isinstance(partition, KafkaInputPartition):
            return iter(())  # nothing to read: Spark turns an empty plan into one InputPartition(None)
        return explained_batches(read_range(partition.topic, partition.partition, partition.start, partition.end,
                                            partition.settings, partition.leader))
