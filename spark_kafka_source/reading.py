"""Reading one planned range in a Spark task: fetch by offset from the leader, decode to Arrow.

The task needs nothing but its input partition: the range, the brokers and the client settings
travel with it. It fetches from the start offset, decodes every complete batch (any codec, any
magic; control batches skipped) into ``pyarrow.RecordBatch``es typed as Spark expects, and stops
exactly at the end offset, even in the middle of a batch. Under ``kafka.isolation.level``
read_committed the batches of aborted transactions are dropped too (the partition's
``ReadFilter`` carried from fetch to fetch); the offsets they and the transaction markers take
are gaps in the ``offset`` column, and a range with no record left yields nothing: neither is
data loss.

Data lost between planning and reading (retention deleted the range's start, the partition or
topic was deleted, the log now ends before the range does) fails the task with a message naming
the topic, partition and offsets when ``failOnDataLoss`` is true; otherwise it is logged and the
task reads what is left. A leader that died (or keeps refusing) fails the task once the client's
retries (``fetchOffset.numRetries``, ``fetchOffset.retryIntervalMs``) run out, naming the range and
the address it was led from when the read was planned; rows already handed to Spark belong to the
failed task, which Spark discards.
"""

import logging
import time
from collections.abc import Iterator
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from broker.client import KafkaError, OffsetOutOfRangeError, UnknownTopicOrPartitionError

from .arrow_records import decode
from .checkpoint import TaskCheckpoint, write_task_checkpoint
from .options import ClientSettings
from .planning import DataLossError

log = logging.getLogger(__name__)


class TaskSettings(NamedTuple):
    """Everything a task needs besides its range (shipped inside every input partition)."""

    bootstrap_servers: str
    client: ClientSettings
    fail_on_data_loss: bool
    include_headers: bool
    poll_timeout_ms: int
    task_checkpoint_location: str | None = None


def _loss(settings: TaskSettings, message: str) -> None:
    if settings.fail_on_data_loss:
        raise DataLossError(
            f"{message}. Some data may have been lost since the query was planned (retention, or "
            f"a deleted topic). Set failOnDataLoss=false to read what is left instead of failing."
        )
    log.warning("%s; failOnDataLoss=false, so the task skips it", message)


def read_range(
    topic: str, partition: int, start: int, end: int, settings: TaskSettings, node: str = ""
) -> Iterator[pa.RecordBatch]:
    """Yield RecordBatches with exactly the records of ``topic``-``partition`` in ``[start, end)``;
    with a task checkpoint location, write what was read there once the range is read completely."""
    if settings.task_checkpoint_location is None:
        yield from _fetch_range(topic, partition, start, end, settings, node)
        return
    began = time.monotonic()
    tally = _Tally()
    for batch in _fetch_range(topic, partition, start, end, settings, node):
        tally.add(batch)
        yield batch
    write_task_checkpoint(
        settings.task_checkpoint_location,
        TaskCheckpoint(
            node,
            topic,
            partition,
            start,
            end,
            tally.records,
            tally.bytes,
            tally.first_timestamp,
            tally.last_timestamp,
            round(time.monotonic() - began, 3),
        ),
    )


class _Tally:
    """Records, key and value bytes, and the first and last timestamps (ms) of the batches read."""

    def __init__(self) -> None:
        self.records = self.bytes = 0
        self.first_timestamp = self.last_timestamp = None

    def add(self, batch) -> None:
        self.records += batch.num_rows
        for column in ("key", "value"):
            self.bytes += pc.sum(pc.binary_length(batch.column(column))).as_py() or 0
        timestamps = batch.column("timestamp")
        if self.first_timestamp is None:
            self.first_timestamp = timestamps[0].value // 1000
        self.last_timestamp = timestamps[-1].value // 1000


def _fetch_range(topic: str, partition: int, start: int, end: int, settings: TaskSettings, node: str):
    client_settings = settings.client
    client = client_settings.client(settings.bootstrap_servers)
    name = f"{topic}-{partition}"
    offset = start
    read_filter = client.read_filter()
    stalled_since = None
    try:
        while offset < end:
            try:
                fetched = client.fetch(
                    topic,
                    partition,
                    offset,
                    min(client_settings.partition_fetch_bytes, client_settings.fetch_max_bytes),
                )
            except OffsetOutOfRangeError as exc:
                if offset < exc.log_start_offset:
                    _loss(
                        settings,
                        f"{name}: offsets [{offset}, {min(exc.log_start_offset, end)}) were deleted "
                        f"before this task read them",
                    )
                    offset = exc.log_start_offset
                    read_filter = client.read_filter()  # what it knew of the deleted records is stale
                else:
                    _loss(
                        settings,
                        f"{name}: offsets [{offset}, {end}) no longer exist (the log ends at {exc.high_watermark})",
                    )
                    return
                continue
            except UnknownTopicOrPartitionError:
                _loss(settings, f"{name} no longer exists: offsets [{offset}, {end}) cannot be read")
                return
            except KafkaError as exc:  # the retries ran out: its leader died, or keeps refusing
                raise type(exc)(
                    f"task reading {name} [{start}, {end}) from {node or 'its leader'} (its leader when "
                    f"the read was planned): {exc}",
                    exc.code,
                ) from None
            read_filter.add_aborted(fetched.aborted_transactions)
            decoded = decode(
                fetched.records,
                topic,
                partition,
                offset,
                end,
                settings.include_headers,
                check_crcs=client_settings.check_crcs,
                read_filter=read_filter,
            )
            if decoded.batch is not None and decoded.batch.num_rows:
                yield decoded.batch
            if decoded.complete_entries:
                offset = max(offset, decoded.next_offset)
                stalled_since = None
                continue
            if fetched.high_watermark <= offset:
                _loss(
                    settings,
                    f"{name}: offsets [{offset}, {end}) no longer exist (the log ends at {fetched.high_watermark})",
                )
                return
            stalled_since = stalled_since or time.monotonic()
            if time.monotonic() - stalled_since > settings.poll_timeout_ms / 1000:
                raise KafkaError(
                    f"{name}: no record could be fetched at offset {offset} within "
                    f"kafkaConsumer.pollTimeoutMs ({settings.poll_timeout_ms} ms)"
                )
            time.sleep(0.05)
    finally:
        client.close()
