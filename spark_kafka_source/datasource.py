"""The ``kafkalog`` data source for ``spark.read.format("kafkalog")`` and
``spark.readStream.format("kafkalog")``, and the sink for ``df.write`` / ``df.writeStream`` with
``format("kafkalog")`` (PySpark's Python data source API).

Schema: exactly Spark's Kafka source schema, plus ``headers`` with ``includeHeaders``; a schema
given by the user is refused, as Spark does. Planning runs on the driver and resolves every offset
once; each input partition carries its range and settings, and its task yields Arrow batches (see
``planning``, ``input_partitions`` and ``reading``; a stream plans each micro-batch the same way,
see ``streaming``).

Writes go through Arrow writers (see ``writing``): a batch write must be ``.mode("append")``
(Spark refuses ``errorifexists`` and ``ignore`` before asking the sink; the sink refuses
``overwrite``, as Spark's Kafka sink does). Errors whose message says all a user needs are
reported without a traceback (``explained``).
"""

from collections.abc import Iterator, Mapping
from typing import NoReturn

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from . import options as source_options
from .explained import UnsupportedModeError, explained
from .input_partitions import input_partitions, read_partition
from .planning import client_for, resolve_ranges
from .sink_options import SinkOptions, parse_sink
from .streaming import KafkaLogStreamReader
from .writing import SinkCommitMessage, check_columns, log_abort, log_commit, write_task

__all__ = ["KafkaLogDataSource", "UnsupportedModeError", "explained", "source_schema"]

OVERWRITE_REFUSED = (
    "save mode overwrite is not supported by the kafkalog sink: Kafka topics are append-only "
    '(as with Spark\'s Kafka sink); use .mode("append")'
)

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
BASE_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
)


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
                raise source_options.OptionError(
                    "the kafkalog source has a fixed schema and cannot be set with a "
                    "custom one; remove the .schema(...) call"
                )
            return source_options.parse(self.options, query)

    def reader(self, schema: StructType) -> "KafkaLogReader":
        return KafkaLogReader(self._parsed(source_options.BATCH))

    def streamReader(self, schema: StructType) -> KafkaLogStreamReader:
        try:
            return KafkaLogStreamReader(self._parsed(source_options.STREAM))
        except source_options.OptionError as error:
            return RefusedStreamReader(error)

    def writer(self, schema: StructType, overwrite: bool) -> "KafkaLogWriter":
        with explained():
            if overwrite:
                raise UnsupportedModeError(OVERWRITE_REFUSED)
            return KafkaLogWriter(checked_sink_options(self.options, schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> "KafkaLogStreamWriter":
        """Every output mode writes the micro-batch's rows (complete mode: all of them), as Spark's sink."""
        with explained():
            return KafkaLogStreamWriter(checked_sink_options(self.options, schema))


class RefusedStreamReader(KafkaLogStreamReader):
    """A stream whose options are refused: it raises the refusal at Spark's first call. PySpark's
    streaming runner cannot report an error raised by ``streamReader()`` itself (its clean-up then
    stops a reader it never got, and that ``UnboundLocalError`` is all the user would see)."""

    def __init__(self, error: source_options.OptionError) -> None:
        self.error = error

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        with explained():
            raise self.error

    initialOffset = latestOffset = prepareForTriggerAvailableNow = getDefaultReadLimit = partitions = commit = _refuse


def checked_sink_options(options: Mapping[str, str], schema: StructType) -> SinkOptions:
    """The sink's options, parsed, after checking the DataFrame's columns against them (on the driver)."""
    parsed = parse_sink(options)
    check_columns(schema, parsed)
    return parsed


class KafkaLogWriter(DataSourceArrowWriter):
    """``df.write.format("kafkalog").mode("append")``: each task writes its rows (at least once)."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommitMessage:
        with explained():
            return write_task(iterator, self.options)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log_commit(messages, "write")

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log_abort(messages, "write")


class KafkaLogStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("kafkalog")``: each micro-batch's tasks write its rows; Spark commits
    the batch once they all succeed, and runs a failed batch again after a restart (at least once)."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommitMessage:
        with explained():
            return write_task(iterator, self.options)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log_commit(messages, f"micro-batch {batchId}")

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log_abort(messages, f"micro-batch {batchId}")


class KafkaLogReader(DataSourceReader):
    def __init__(self, parsed: source_options.SourceOptions) -> None:
        self.parsed = parsed

    def partitions(self) -> list:
        with explained(), client_for(self.parsed) as client:
            return input_partitions(client, self.parsed, resolve_ranges(client, self.parsed))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition)
