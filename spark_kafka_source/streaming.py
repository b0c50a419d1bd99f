"""``spark.readStream.format("kafkalog")``: the micro-batch stream reader, with Spark's semantics.

Spark keeps a Python stream reader alive in one process on the driver for the whole query
(``initialOffset``, ``latestOffset``, ``partitions``, ``commit`` run there, and its state lasts
between micro-batches); each task reads its range in a worker with the batch source's code
(``input_partitions``). Offsets are Spark's Kafka source offsets: ``{"topic": {"0": 23}}``, the
next offset to read per partition, written sorted by topic and partition (Spark compares offsets
as strings, so the same offsets always give the same text).

* A new checkpoint starts where the starting options say (default ``latest``); a checkpoint's own
  offsets win afterwards. Partitions that appear later (added to a topic, a topic newly created
  for ``subscribe`` or newly matching ``subscribePattern``) are read from their earliest offset.
* Data loss, as in Spark, fails the query when ``failOnDataLoss`` is true, naming partition and
  offsets: a start below the earliest offset (retention), a partition or topic that is gone, a
  checkpoint ahead of the log (a re-created topic), a new partition that does not start at 0.
  With ``failOnDataLoss=false`` it is logged and the stream goes on: from the earliest offset
  still there (a re-created topic is read from its beginning), without the partitions gone.
* Limits (``options.TriggerLimits``) apply unless Spark asks for everything (``Trigger.Once``):
  ``maxOffsetsPerPartitionPerTrigger`` caps each partition, ``maxOffsetsPerTrigger`` is split over
  the partitions in proportion to their backlog (Spark's rule: a share below one record is rounded
  up, others down), and ``minOffsetsPerTrigger`` holds a micro-batch back until that many records
  wait or ``maxTriggerDelay`` has passed since the last one (the first of a run is not held).
* ``Trigger.AvailableNow``: the latest offsets when the query starts are its target; micro-batches
  honour the limits and never go past it (partitions created later are left out), then the
  query stops.
* ``reportLatestOffset`` gives the latest offsets seen, which Spark shows as the source's
  ``latestOffset`` in the query progress (``progress.offsets_behind_latest`` turns it into Spark's
  offsets-behind figures: the Python API has no source metrics).
* With ``commitOffsetsToGroup`` (or ``kafka.group.id``), each micro-batch's end offsets are committed
  to that consumer group once the sink has committed the batch (Spark calls ``commit`` late, after
  planning the next batch, and not at all for a query's last batch, so the reader also commits the
  ``start`` Spark hands to ``latestOffset``: the end of the batch the sink finished last), so lag
  tools see the stream; Spark's checkpoint stays the source of truth, and a failed commit is
  logged, not fatal. The commit comes from outside the group (generation -1), as Kafka's tools do.
"""

import logging
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from broker.client import (
    EARLIEST,
    LATEST,
    BrokerConnectionError,
    GroupClient,
    KafkaClient,
    KafkaError,
    UnknownTopicOrPartitionError,
)

from .explained import explained
from .input_partitions import input_partitions, read_partition
from .options import SourceOptions, TriggerLimits
from .planning import OffsetRange, client_for, listed_offsets, report_data_loss, starting_offsets, topic_partitions

log = logging.getLogger(__name__)


def offsets_json(offsets: dict) -> dict:
    """``{(topic, partition): offset}`` as Spark's Kafka source writes it, sorted: ``{"t": {"0": 23}}``."""
    out: dict = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def offsets_of(json_offsets: dict) -> dict:
    """The inverse of ``offsets_json``."""
    return {
        (topic, int(partition)): offset
        for topic, partitions in json_offsets.items()
        for partition, offset in partitions.items()
    }


def limited_ends(begins: dict, available: dict, limits: TriggerLimits) -> dict:
    """Where each partition's micro-batch ends, from ``begins`` towards ``available``, within the
    per-partition cap and ``maxOffsetsPerTrigger`` split in proportion to the (capped) backlogs."""
    cap = limits.max_offsets_per_partition
    ends = {tp: max(begins[tp], min(end, begins[tp] + cap) if cap else end) for tp, end in available.items()}
    total = sum(ends[tp] - begins[tp] for tp in ends)
    if not limits.max_offsets or total <= limits.max_offsets:
        return ends
    limited = {}
    for tp, end in ends.items():
        backlog = end - begins[tp]
        share = limits.max_offsets * backlog // total or min(backlog, 1)  # exact integers, no float rounding
        limited[tp] = begins[tp] + share
    return limited


Settled = TypeVar("Settled")


def settled(step: Callable[[], Settled], attempts: int = 3) -> Settled:
    """``step()``, done again (after a pause) when a topic it found vanished before it asked for
    its offsets: a topic deleted or re-created between two requests to the broker."""
    for attempt in range(attempts - 1):
        try:
            return step()
        except UnknownTopicOrPartitionError:
            time.sleep(0.2 * (attempt + 1))
    return step()


class KafkaLogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The stream reader; see the module's docstring. Every call to the broker uses its own client
    (Spark ends the driver's reader by killing its process, so nothing may stay open)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.target: dict | None = None  # AvailableNow: the offsets present when the query started
        self.latest: dict = {}  # the latest offsets seen by the last latestOffset()
        self.last_batch_at = 0.0  # monotonic time of the last micro-batch minOffsetsPerTrigger let through
        self.committed: dict | None = None  # the offsets last committed to the consumer group
        self.commit_failed = False  # a commit failed already (warned once)

    # -- the driver side ------------------------------------------------------------------

    def initialOffset(self) -> dict:
        with explained(), client_for(self.options) as client:
            partitions = topic_partitions(client, self.options, missing_topics_fail=False)
            return offsets_json(starting_offsets(client, self.options, partitions))

    def prepareForTriggerAvailableNow(self) -> None:
        with explained(), client_for(self.options) as client:
            partitions = topic_partitions(client, self.options, missing_topics_fail=False)
            self.target = listed_offsets(client, partitions, LATEST)

    def getDefaultReadLimit(self) -> ReadLimit:
        """Spark hands this back to ``latestOffset`` unless it wants everything (``ReadAllAvailable``);
        which limits apply comes from the options (Spark passes one limit only)."""
        limits = self.options.limits
        if limits.max_offsets:
            return ReadMaxRows(limits.max_offsets)
        if limits.min_offsets:
            return ReadMinRows(limits.min_offsets)
        if limits.max_offsets_per_partition:
            return ReadMaxRows(limits.max_offsets_per_partition)
        return ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        self._commit_to_group(start)  # Spark asks after the sink committed the batch ending at start
        with explained(), client_for(self.options) as client:
            begins, available = settled(lambda: self._positions(client, offsets_of(start)))
        if isinstance(limit, ReadAllAvailable):
            return offsets_json({tp: max(begins[tp], available[tp]) for tp in available})
        limits = self.options.limits
        if limits.min_offsets and self.target is None and self._held_back(begins, available, limits):
            return start
        return offsets_json(limited_ends(begins, available, limits))

    def _positions(self, client: KafkaClient, starts: dict) -> tuple[dict, dict]:
        """(where each partition goes on from, how far it may go now)."""
        partitions = topic_partitions(client, self.options, missing_topics_fail=False)
        self.latest = listed_offsets(client, partitions, LATEST)
        available = dict(self.latest)
        if self.target is not None:
            available = {tp: min(end, self.target[tp]) for tp, end in available.items() if tp in self.target}
        return self._begins(client, starts, available), available

    def _held_back(self, begins: dict, available: dict, limits: TriggerLimits) -> bool:
        """minOffsetsPerTrigger: too few new records, and maxTriggerDelay has not passed since the last batch."""
        waiting = sum(max(0, available[tp] - begins[tp]) for tp in available)
        now = time.monotonic()
        if waiting < limits.min_offsets and (now - self.last_batch_at) * 1000 < limits.max_delay_ms:
            return True
        self.last_batch_at = now
        return False

    def _begins(self, client: KafkaClient, starts: dict, wanted: dict) -> dict:
        """Where each partition of ``wanted`` goes on from: its offset in ``starts``, or, after data
        loss (reported) or for a new partition, the earliest offset there is."""
        for tp in sorted(set(starts) - set(self.latest)):
            report_data_loss(
                self.options,
                f"{tp[0]}-{tp[1]} is gone (its topic or the partition was deleted): "
                f"the stream had read it up to offset {starts[tp]}",
            )
        earliest = listed_offsets(client, list(wanted), EARLIEST)
        return {tp: self._begin(tp, starts.get(tp), earliest[tp], self.latest[tp]) for tp in wanted}

    def _begin(self, tp: tuple, start: int | None, earliest: int, end: int) -> int:
        """Where ``tp`` is read from towards ``end`` (its latest offset, or a micro-batch's end)."""
        name = f"{tp[0]}-{tp[1]}"
        if start is None:
            if earliest != 0:
                report_data_loss(
                    self.options,
                    f"new partition {name} starts at offset {earliest}, not 0: offsets "
                    f"[0, {earliest}) were deleted before the stream saw them",
                )
            return earliest
        if start > end:
            report_data_loss(
                self.options,
                f"{name}: the stream's checkpoint is at offset {start}, but the partition "
                f"ends at {end} (the topic was re-created, or the checkpoint belongs to "
                f"another cluster); it is read again from offset {earliest}",
            )
            return earliest
        if start < earliest:
            report_data_loss(
                self.options,
                f"{name}: the stream is at offset {start}, but the earliest offset still "
                f"available is {earliest}: offsets [{start}, {earliest}) are gone",
            )
            return earliest
        return start

    def partitions(self, start: dict, end: dict) -> list:
        starts, ends = offsets_of(start), offsets_of(end)
        with explained(), client_for(self.options) as client:
            return input_partitions(client, self.options, settled(lambda: self._ranges(client, starts, ends)))

    def _ranges(self, client: KafkaClient, starts: dict, ends: dict) -> list:
        present = set(topic_partitions(client, self.options, missing_topics_fail=False))
        for tp in sorted(set(ends) - present):
            report_data_loss(
                self.options,
                f"{tp[0]}-{tp[1]} is gone (its topic or the partition was "
                f"deleted): offsets up to {ends[tp]} cannot be read",
            )
        ends = {tp: offset for tp, offset in ends.items() if tp in present}
        earliest = listed_offsets(client, list(ends), EARLIEST)
        return [
            OffsetRange(tp[0], tp[1], begin, ends[tp])
            for tp in sorted(ends)
            for begin in [self._begin(tp, starts.get(tp), earliest[tp], ends[tp])]
            if begin < ends[tp]
        ]

    def reportLatestOffset(self) -> dict | None:
        return offsets_json(self.latest) if self.latest else None

    def commit(self, end: dict) -> None:
        self._commit_to_group(end)

    def _commit_to_group(self, offsets: dict) -> None:
        """Commit ``offsets`` (processed by the sink) to the consumer group, once each."""
        group = self.options.commit_group
        if group is None or offsets == self.committed:
            return
        try:
            with client_for(self.options) as client:
                GroupClient(client).commit(group, offsets_of(offsets), metadata="kafkalog spark stream")
            self.committed = offsets
        except (KafkaError, BrokerConnectionError) as exc:
            level = logging.DEBUG if self.commit_failed else logging.WARNING  # once a query, not every trigger
            self.commit_failed = True
            log.log(
                level,
                "could not commit the stream's offsets to consumer group %r (the Spark checkpoint has "
                "them anyway; later failures are logged at DEBUG): %s",
                group,
                exc,
            )

    # -- the task side --------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition)
