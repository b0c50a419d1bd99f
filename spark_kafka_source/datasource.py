"""The ``kafkalog`` data source for ``spark.read.format("kafkalog")`` and the sink for ``df.write`` /
``df.writeStream`` with ``format("kafkalog")`` (PySpark's Python data source API).

Schema: exactly Spark's Kafka source schema, plus ``headers`` with ``includeHeaders``; a schema
given by the user is refused, as Spark does. Planning (``partitions()``) runs on the driver and
resolves every offset once; each input partition carries its range and settings, and ``read()``
yields Arrow batches (see ``planning`` and ``reading``).

A streaming read is refused with one line saying so (``UnsupportedModeError``). Spark's Python data
source API gives a source no say before a streaming query's thread starts, so a ``readStream`` query
is refused by its first step. Writes go through Arrow writers (see ``writing``): a batch write must be
``.mode("append")`` (Spark refuses ``errorifexists`` and ``ignore`` before asking the sink; the
sink refuses ``overwrite``, as Spark's Kafka sink does).

An error whose message says all a user needs (a bad option, data loss, an unreachable broker,
refused credentials or an untrusted certificate, an unsupported mode) is reported by the Spark
Python worker without a traceback (``explained``).
"""

import os

from pyspark.sql.datasource import (DataSource, DataSourceArrowWriter, DataSourceReader, DataSourceStreamArrowWriter,
                                    DataSourceStreamReader, InputPartition)
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType,
                               TimestampType)

from broker.client import KafkaError
from broker.client.connection import AuthenticationError, BrokerConnectionError

from . import options as source_options
from .planning import DataLossError, client_for, resolve_ranges, split
from .reading import TaskSettings, read_range
from .sink_options import SinkOptions, parse_sink
from .writing import SinkError, check_columns, log_abort, log_commit, write_task

BATCH_READS = 'the kafkalog source supports batch reads only: spark.read.format("kafkalog")...load()'
STREAMING_READ_REFUSED = (f"streaming reads (spark.readStream) are not supported yet; {BATCH_READS}, or load "
                          f"incrementally with kafkalog load")
OVERWRITE_REFUSED = ('save mode overwrite is not supported by the kafkalog sink: Kafka topics are append-only '
                     '(as with Spark\'s Kafka sink); use .mode("append")')

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
                    AuthenticationError, UnsupportedModeError, SinkError)


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

    def writer(self, schema: StructType, overwrite: bool) -> "KafkaLogWriter":
        with explained():
            if overwrite:
                raise UnsupportedModeError(OVERWRITE_REFUSED)
            return KafkaLogWriter(checked_sink_options(self.options, schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> "KafkaLogStreamWriter":
        """Every output mode writes the micro-batch's rows (complete mode: all of them), as Spark's sink."""
        with explained():
            return KafkaLogStreamWriter(checked_sink_options(self.options, schema))


def checked_sink_options(options, schema: StructType) -> SinkOptions:
    """The sink's options, parsed, after checking the DataFrame's columns against them (on the driver)."""
    parsed = parse_sink(options)
    check_columns(schema, parsed)
    return parsed


class KafkaLogWriter(DataSourceArrowWriter):
    """``df.write.format("kafkalog").mode("append")``: each task writes its rows (at least once)."""

    def __init__(self, options: SinkOptions):
        self.options = options

    def write(self, iterator):
        with explained():
            return write_task(iterator, self.options)

    def commit(self, messages) -> None:
        log_commit(messages, "write")

    def abort(self, messages) -> None:
        log_abort(messages, "write")


class KafkaLogStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("kafkalog")``: each micro-batch's tasks write its rows; Spark commits
    the batch once they all succeed, and runs a failed batch again after a restart (at least once)."""

    def __init__(self, options: SinkOptions):
        self.options = options

    def write(self, iterator):
        with explained():
            return write_task(iterator, self.options)

    def commit(self, messages, batchId: int) -> None:
        log_commit(messages, f"micro-batch {batchId}")

    def abort(self, messages, batchId: int) -> None:
        log_abort(messages, f"micro-batch {batchId}")


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
