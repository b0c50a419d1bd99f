"""The ``kafkalog`` sink: the columns a DataFrame must have (checked on the driver) and one task's
write of its rows to Kafka (in a Spark task), as Spark's Kafka sink does.

Columns: ``value`` (required), ``key``, string or binary (a string as its UTF-8 bytes; null keys
allowed); ``topic`` string, required unless the ``topic`` option is set (the option wins);
``partition`` int (null or absent: the key's murmur2 hash, as Kafka's Java producer; no key: a
sticky partition with a leader that moves on every 16 KiB); ``headers``
``array<struct<key:string,value:binary>>``; with the ``includeTimestamp`` option (an addition to
Spark's sink), ``timestamp`` timestamp: each record's timestamp, in whole milliseconds (null, or
without the option: the time the task sends it). Other columns are ignored.

A task reads its rows as Arrow batches and hands them to one ``Batcher`` per topic (the client's:
one pending batch per partition, sent when full and all at the task's end), through one idempotent
producer (acks=all) per task, so the client's retries within a task never store a batch twice.

Delivery is **at least once**, as Spark's sink: a task that fails (a broker gone for longer than
its retries, a refused record) has stored the batches acknowledged before; Spark runs it again
from its first row with a new producer, whose batches the broker cannot recognise, so those
records are stored twice. A refused record (too large for the topic's ``max.message.bytes``, a
null header key) fails the task with a line naming its row within the task and its topic-partition.
"""

import dataclasses
import logging
from collections.abc import Iterable

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType, TimestampType

from broker.client import Batcher, KafkaError, UnknownTopicOrPartitionError

from .sink_options import SinkOptions

log = logging.getLogger(__name__)

BYTES_TYPES = (StringType, BinaryType)


class SinkError(ValueError):
    """A DataFrame the sink cannot write, or a row it could not store; the message names the column
    or the row."""


@dataclasses.dataclass
class SinkCommitMessage(WriterCommitMessage):
    """What one task stored: its rows (every one acknowledged, unless acks=0) and the topics they went to."""

    records: int
    topics: list


def check_columns(schema: StructType, options: SinkOptions) -> None:
    """Refuse, on the driver, a DataFrame whose columns the sink cannot write (Spark's rules)."""
    columns = {field.name.lower(): field.dataType for field in schema.fields}
    example = 'for example df.selectExpr("CAST(id AS STRING) AS key", "to_json(struct(*)) AS value")'
    if "value" not in columns:
        raise SinkError(
            f"the DataFrame has no value column, which the kafkalog sink requires "
            f"(its columns: {', '.join(schema.fieldNames())}); {example}"
        )
    for name in ("key", "value"):
        if name in columns and not isinstance(columns[name], BYTES_TYPES):
            raise SinkError(
                f"column {name} is {columns[name].simpleString()}; the kafkalog sink writes a string "
                f"or binary {name}; {example}"
            )
    if options.topic is None and "topic" in columns and not isinstance(columns["topic"], StringType):
        raise SinkError(
            f"column topic is {columns['topic'].simpleString()}; it must be a string (or set the topic "
            f"option, which wins over the column: the column is then ignored, as by Spark)"
        )
    if options.topic is None and "topic" not in columns:
        raise SinkError(
            'the DataFrame has no topic column and the topic option is not set; for example .option("topic", "events")'
        )
    if "partition" in columns and not isinstance(columns["partition"], IntegerType):
        raise SinkError(
            f"column partition is {columns['partition'].simpleString()}; it must be an int (for example "
            f"CAST(p AS INT) AS partition)"
        )
    if options.include_timestamp and not isinstance(columns.get("timestamp"), TimestampType):
        found = f"is {columns['timestamp'].simpleString()}" if "timestamp" in columns else "is missing"
        raise SinkError(
            f"column timestamp {found}; with includeTimestamp the kafkalog sink takes each record's "
            f"timestamp from a timestamp column (for example CAST(ts AS TIMESTAMP) AS timestamp)"
        )
    if "headers" in columns and not _is_headers(columns["headers"]):
        raise SinkError(
            f"column headers is {columns['headers'].simpleString()}; it must be array<struct<key:string,value:binary>>"
        )


def _is_headers(data_type) -> bool:
    if not isinstance(data_type, ArrayType) or not isinstance(data_type.elementType, StructType):
        return False
    fields = data_type.elementType.fields
    return (
        [f.name for f in fields] == ["key", "value"]
        and isinstance(fields[0].dataType, StringType)
        and isinstance(fields[1].dataType, BinaryType)
    )


def write_task(batches: Iterable[pa.RecordBatch], options: SinkOptions) -> SinkCommitMessage:
    """Write one task's Arrow ``batches`` to Kafka; returns what was stored."""
    where = _task_name()
    with options.client.client(options.bootstrap_servers) as client:
        writer = _TaskWriter(client, options, where)
        for batch in batches:
            writer.add_batch(batch)
        writer.flush()
    return SinkCommitMessage(writer.rows, sorted(writer.batchers))


class _TaskWriter:
    """The rows of one task, numbered from 0, into one ``Batcher`` per topic."""

    def __init__(self, client, options: SinkOptions, where: str) -> None:
        self.client, self.options, self.where = client, options, where
        self.sequences = None  # the task's idempotent producer, asked for with its first row
        self.batchers: dict[str, Batcher] = {}
        self.rows = 0

    def add_batch(self, batch: pa.RecordBatch) -> None:
        columns = {name.lower(): batch.column(i) for i, name in enumerate(batch.schema.names)}
        count = batch.num_rows
        keys = _bytes_column(columns.get("key"), count)
        values = _bytes_column(columns["value"], count)
        topics = [self.options.topic] * count if self.options.topic else columns["topic"].to_pylist()
        partitions = columns["partition"].to_pylist() if "partition" in columns else [None] * count
        headers = columns["headers"].to_pylist() if "headers" in columns else [None] * count
        timestamps = _milliseconds(columns["timestamp"]) if self.options.include_timestamp else [None] * count
        for key, value, topic, partition, header, timestamp in zip(
            keys, values, topics, partitions, headers, timestamps, strict=True
        ):
            row = self.rows
            batcher = self.batchers.get(topic) or self._batcher(topic, row)
            if partition is not None and not 0 <= partition < len(batcher.partitions):
                raise SinkError(
                    f"row {row} of {self.where}: partition {partition} of topic {topic!r} does not exist "
                    f"(it has {len(batcher.partitions)} partitions)"
                )
            batcher.add(row, (key, value, timestamp, _headers(header, row, self.where)), partition)
            self._raise_for_failure(batcher)
            self.rows += 1

    def flush(self) -> None:
        for batcher in self.batchers.values():
            batcher.flush()
            self._raise_for_failure(batcher)

    def _batcher(self, topic: str | None, row: int) -> Batcher:
        if topic is None:
            raise SinkError(
                f"row {row} of {self.where}: the topic column is null; give every row a topic, or set "
                f'the topic option, for example .option("topic", "events")'
            )
        try:
            partitions = self.client.partitions_of(topic, create=True)
        except UnknownTopicOrPartitionError:
            raise SinkError(
                f"topic {topic!r} does not exist (row {row} of {self.where}), and the broker does not "
                f"create topics on first use; create it first (kafkalog topics create {topic} "
                f"--partitions N)"
            ) from None
        options = self.options
        if options.idempotent and self.sequences is None:
            self.sequences = self.client.init_producer_id()
        self.batchers[topic] = Batcher(
            self.client,
            topic,
            partitions,
            None,
            options.codec,
            options.acks,
            self._refused,
            batch_bytes=options.batch_bytes,
            sequences=self.sequences,
        )
        return self.batchers[topic]

    def _refused(self, row: int, reason: str) -> None:
        raise SinkError(f"row {row} of {self.where} was refused: {reason}")

    def _raise_for_failure(self, batcher: Batcher) -> None:
        if batcher.failure is not None:
            raise KafkaError(
                f"writing to topic {batcher.topic!r} failed ({self.where}): {batcher.failure}",
                getattr(batcher.failure, "code", -1),
            )


def _bytes_column(column, count: int) -> list:
    """A key or value column as bytes (strings as UTF-8), None for nulls; all None when absent."""
    if column is None:
        return [None] * count
    if pa.types.is_string(column.type):
        return column.cast(pa.binary()).to_pylist()
    if pa.types.is_large_string(column.type):  # Spark's Arrow with spark.sql.execution.arrow.useLargeVarTypes
        return column.cast(pa.large_binary()).to_pylist()
    return column.to_pylist()


def _milliseconds(column) -> list:
    """A timestamp column (Spark's Arrow: microseconds) as epoch milliseconds, rounded down; None for nulls."""
    per_ms = {"ms": 1, "us": 1000, "ns": 1_000_000}[column.type.unit]
    return [None if t is None else t // per_ms for t in column.cast(pa.int64()).to_pylist()]


def _headers(entries, row: int, where: str) -> tuple:
    if not entries:
        return ()
    if any(entry["key"] is None for entry in entries):
        raise SinkError(f"row {row} of {where}: a header has a null key; Kafka header keys are strings")
    return tuple((entry["key"], entry["value"]) for entry in entries)


def _task_name() -> str:
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        return "this task"
    return f"the task writing the DataFrame's partition {context.partitionId()} (attempt {context.attemptNumber()})"


def log_commit(messages: list, what: str) -> None:
    """Log what the tasks of a committed write (or micro-batch) stored."""
    records = sum(message.records for message in messages if message is not None)
    topics = sorted({topic for message in messages if message is not None for topic in message.topics})
    log.info("%s: %d records stored in %s", what, records, ", ".join(topics) or "no topic")


def log_abort(messages: list, what: str) -> None:
    """Log, on the driver, what a failed write leaves behind: at-least-once, nothing is taken back."""
    stored = sum(message.records for message in messages if message is not None)
    log.warning(
        "%s failed: the %d records its finished tasks stored stay in Kafka (the sink is at least once; "
        "a rerun stores them again), and so may some of the failed tasks' records",
        what,
        stored,
    )
