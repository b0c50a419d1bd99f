"""What a Spark task gets, built the same way for a batch read and for each micro-batch of a
stream: one ``KafkaInputPartition`` per planned ``[start, end)`` range (cut by ``minPartitions`` and
``maxRecordsPerPartition``), carrying the leader at planning time and every setting the task needs,
and the task's ``read`` of it."""

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from broker.client import KafkaClient

from .explained import explained_batches
from .options import SourceOptions
from .planning import OffsetRange, split
from .reading import TaskSettings, read_range


class KafkaInputPartition(InputPartition):
    """One task: a topic partition's ``[start, end)`` range, its leader at planning time, the settings."""

    def __init__(self, topic: str, partition: int, start: int, end: int, leader: str, settings: TaskSettings) -> None:
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end
        self.leader = leader
        self.settings = settings

    def __repr__(self) -> str:
        return f"KafkaInputPartition({self.topic}-{self.partition} [{self.start}, {self.end}) leader {self.leader})"


def input_partitions(client: KafkaClient, options: SourceOptions, ranges: list[OffsetRange]) -> list:
    """The tasks reading ``ranges``: split as the options say, each with its leader."""
    settings = TaskSettings(
        options.bootstrap_servers,
        options.client,
        options.fail_on_data_loss,
        options.include_headers,
        options.poll_timeout_ms,
        options.task_checkpoint_location,
    )
    leaders = {(r.topic, r.partition): client.leader_of(r.topic, r.partition) for r in ranges}
    return [
        KafkaInputPartition(
            r.topic, r.partition, r.start, r.end, f"{leaders[r[:2]].host}:{leaders[r[:2]].port}", settings
        )
        for r in split(ranges, options.min_partitions, options.max_records_per_partition)
    ]


def read_partition(partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """The Arrow batches of one task's range (none for Spark's placeholder of an empty plan)."""
    if not isinstance(partition, KafkaInputPartition):
        return iter(())  # nothing to read: Spark turns an empty plan into one InputPartition(None)
    return explained_batches(
        read_range(
            partition.topic, partition.partition, partition.start, partition.end, partition.settings, partition.leader
        )
    )
