"""The ``kafkalog`` data source for ``spark.read.format("kafkalog")`` (PySpark's Python data source API).

Schema: exactly Spark's Kafka source schema, plus ``headers`` with ``includeHeaders``; a schema
given by the user is refused, as Spark does. Planning (``partitions()``) runs on the driver and
resolves every offset once; each input partition carries its range and settings, and ``read()``
yields Arrow batches (see ``planning`` and ``reading``).
"""

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType,
                               TimestampType)

from . import options as source_options
from .planning import client_for, resolve_ranges, split
from .reading import TaskSettings, read_range

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
BASE_SCHEMA = StructType([
    StructField("key", BinaryType()), StructField("value", BinaryType()), StructField("topic", StringType()),
    StructField("partition", IntegerType()), StructField("offset", LongType()),
    StructField("timestamp", TimestampType()), StructField("timestampType", IntegerType()),
])


def source_schema(include_headers: bool) -> StructType:
    return StructType(BASE_SCHEMA.fields + [StructField("headers", HEADERS)]) if include_headers else BASE_SCHEMA


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
    """``spark.read.format("kafkalog")``: a bounded batch read of Kafka-protocol topics."""

    @classmethod
    def name(cls) -> str:
        return "kafkalog"

    def schema(self) -> StructType:
        self._schema_asked = True  # Spark asks only when the user gave no schema of their own
        return source_schema(source_options.parse(self.options).include_headers)

    def reader(self, schema: StructType) -> "KafkaLogReader":
        parsed = source_options.parse(self.options)
        if not getattr(self, "_schema_asked", False):
            raise source_options.OptionError("the kafkalog source has a fixed schema and cannot be set with a "
                                             "custom one; remove the .schema(...) call")
        return KafkaLogReader(parsed)


class KafkaLogReader(DataSourceReader):
    def __init__(self, parsed: source_options.SourceOptions):
        self.parsed = parsed

    def partitions(self) -> list:
        options = self.parsed
        settings = TaskSettings(options.bootstrap_servers, options.client, options.fail_on_data_loss,
                                options.include_headers, options.poll_timeout_ms, options.task_checkpoint_location)
        with client_for(options) as client:
            ranges = resolve_ranges(client, options)
            leaders = {(r.topic, r.partition): client.leader_of(r.topic, r.partition) for r in ranges}
        return [KafkaInputPartition(r.topic, r.partition, r.start, r.end,
                                    f"{leaders[r[:2]].host}:{leaders[r[:2]].port}", settings)
                for r in split(ranges, options.min_partitions, options.max_records_per_partition)]

    def read(self, partition: InputPartition):
        if not isinstance(partition, KafkaInputPartition):
            return iter(())  # nothing to read: Spark turns an empty plan into one InputPartition(None)
        return read_range(partition.topic, partition.partition, partition.start, partition.end, partition.settings,
                          partition.leader)
