"""Planning a read on the driver: which partitions, from which offset to which, in how many tasks.

Every start and end offset is resolved here, once, through the broker (earliest, latest, offset
JSON, timestamps), so a DataFrame is repeatable: counted twice, or counted and then written, it
reads the same records. (Spark's own source resolves ``earliest``/``latest`` late, in each task;
this one does not, on purpose.) Then each topic partition's ``[start, end)`` range becomes one
input partition, or several when ``minPartitions`` or ``maxRecordsPerPartition`` ask for it, cut
with the rules of Spark 4's ``KafkaOffsetRangeCalculator`` (``maxRecordsPerPartition`` first, then
``minPartitions`` over the pieces). Since the default ``earliest``..``latest`` range is resolved
here too, it is split like any other (Spark leaves that range unsplit by ``maxRecordsPerPartition``,
as it does not know its size before the task runs).

Data loss found on the driver (a start below the partition's earliest offset, a range that ends
before it starts, an assigned partition that is gone) fails the query when ``failOnDataLoss`` is
true, naming the topic, partition and offsets; when false it is logged and the read goes on with
what is still there.
"""

import logging
import math
import re
from collections.abc import Collection
from typing import NamedTuple

from broker.client import EARLIEST, LATEST, KafkaClient, UnknownTopicOrPartitionError

from .checkpoint import CheckpointStore
from .options import SourceOptions, option_error, partitions_example

log = logging.getLogger(__name__)

_EXAMPLE_TIME = 1_700_000_000_000  # epoch ms in the examples of timestamp options


class DataLossError(RuntimeError):
    """Records the read was asked for are gone from the broker (and failOnDataLoss is true)."""


class OffsetRange(NamedTuple):
    topic: str
    partition: int
    start: int
    end: int  # exclusive

    @property
    def size(self) -> int:
        return self.end - self.start


def client_for(options: SourceOptions) -> KafkaClient:
    return options.client.client(options.bootstrap_servers)


DATA_LOSS_ADVICE = "Set failOnDataLoss=false to read what is left instead of failing."


def report_data_loss(options: SourceOptions, message: str) -> None:
    if options.fail_on_data_loss:
        raise DataLossError(
            f"{message}. Some data may have been lost: records were deleted by retention, or the "
            f"topic was deleted or re-created. {DATA_LOSS_ADVICE}"
        )
    log.warning("%s; failOnDataLoss=false, so the read skips it", message)


def topic_partitions(
    client: KafkaClient, options: SourceOptions, missing_topics_fail: bool = True
) -> list[tuple[str, int]]:
    """The partitions to read, from assign, subscribe or subscribePattern. A subscribed topic that
    does not exist fails the read, unless ``missing_topics_fail`` is false (a stream: it has no
    partitions until it is created, and a deleted one is data loss)."""
    if options.subscribe_pattern is not None:
        pattern = re.compile(options.subscribe_pattern)
        return [(t, p) for t in client.topics() if pattern.fullmatch(t) for p in client.partitions_of(t)]
    if options.subscribe is not None:
        found = []
        for topic in options.subscribe:
            try:
                found += [(topic, p) for p in client.partitions_of(topic)]
            except UnknownTopicOrPartitionError:
                if not missing_topics_fail:
                    continue
                raise option_error(
                    "subscribe",
                    f"topic {topic!r} does not exist on {options.bootstrap_servers} (the read does not create topics)",
                ) from None
        return found
    if options.assign is None:
        raise ValueError("source options name no partitions: none of assign, subscribe, subscribePattern")
    found = []
    for topic, partitions in options.assign.items():
        try:
            existing = set(client.partitions_of(topic))
        except UnknownTopicOrPartitionError:
            existing = set()
        for partition in partitions:
            if partition in existing:
                found.append((topic, partition))
            elif not existing:  # the topic is gone (deleted, or never created)
                report_data_loss(options, f"assigned partition {topic}-{partition} does not exist")
            elif missing_topics_fail:  # a partition a read names never existed (a stream's could, before a re-creation)
                raise option_error(
                    "assign",
                    f"partition {topic}-{partition} does not exist: topic {topic!r} has {counted_partitions(existing)}",
                )
            else:
                report_data_loss(
                    options,
                    f"assigned partition {topic}-{partition} does not exist (topic {topic!r} "
                    f"has {counted_partitions(existing)})",
                )
    return found


def counted_partitions(existing: set) -> str:
    """``4 partitions (0 to 3)``."""
    return f"{len(existing)} partition{'' if len(existing) == 1 else 's'} (0 to {max(existing)})"


def resolve_ranges(client: KafkaClient, options: SourceOptions) -> list[OffsetRange]:
    """The ``[start, end)`` range of every partition to read, resolved through the broker now."""
    partitions = topic_partitions(client, options)
    if not partitions:
        return []
    earliest, latest = listed_offsets(client, partitions, EARLIEST), listed_offsets(client, partitions, LATEST)
    starts = _resolve(client, options, "starting", partitions, earliest, latest)
    ends = _resolve(client, options, "ending", partitions, earliest, latest)
    ranges = []
    for tp in partitions:
        start, end = starts[tp], ends[tp]
        if end > latest[tp]:
            raise option_error(
                "endingOffsets",
                f"{tp[0]}-{tp[1]} is asked to end at {end}, but it holds offsets "
                f"up to {latest[tp]} only (use -1 for the latest offset)",
                example=partitions_example("endingOffsets", partitions, LATEST),
            )
        if start < earliest[tp]:
            report_data_loss(
                options,
                f"{tp[0]}-{tp[1]}: the read starts at offset {start}, but the earliest "
                f"offset still available is {earliest[tp]}: offsets [{start}, "
                f"{earliest[tp]}) are gone",
            )
            start = earliest[tp]
        if end < start:
            where = f"but the partition ends at {latest[tp]}" if start > latest[tp] else f"but ends at {end}"
            report_data_loss(
                options,
                f"{tp[0]}-{tp[1]}: the read starts at offset {start} {where} (an offset "
                f"past the end, or the topic was re-created and its offsets started over)",
            )
            continue
        ranges.append(OffsetRange(tp[0], tp[1], start, end))
    return ranges


def listed_offsets(client: KafkaClient, partitions: Collection[tuple[str, int]], which: int) -> dict:
    """``{(topic, partition): offset}``: the EARLIEST or LATEST offset of each partition, now."""
    if not partitions:
        return {}
    return {tp: offset for tp, (offset, _) in client.list_offsets({tp: which for tp in partitions}).items()}


def starting_offsets(client: KafkaClient, options: SourceOptions, partitions: Collection[tuple[str, int]]) -> dict:
    """Where each of ``partitions`` starts by the starting options, resolved through the broker now."""
    earliest, latest = listed_offsets(client, partitions, EARLIEST), listed_offsets(client, partitions, LATEST)
    return _resolve(client, options, "starting", partitions, earliest, latest)


def _resolve(client, options: SourceOptions, side: str, partitions, earliest: dict, latest: dict) -> dict:
    spec = options.starting if side == "starting" else options.ending
    if spec.kind == "checkpoint":
        if spec.checkpoint is None:
            raise ValueError(f"the {side} offsets come from a checkpoint, but name none")
        store = CheckpointStore(spec.checkpoint)
        if not store.location.exists():
            raise option_error(
                "startingOffsetsFromCheckpoint",
                f"there is no checkpoint at {store.uri} (a typo? a "
                f"new load's checkpoint exists once its first run "
                f"has been planned)",
            )
        ends = store.committed_ends()
        otherwise = earliest if spec.otherwise == "earliest" else latest
        return {tp: ends.get(tp, otherwise[tp]) for tp in partitions}
    if spec.kind == "earliest":
        return dict(earliest)
    if spec.kind == "latest":
        return dict(latest)
    named = spec.named_partitions()
    if named and named != set(partitions):
        name = f"{side}Offsets" if spec.kind == "offsets" else f"{side}OffsetsByTimestamp"
        missing = sorted(set(partitions) - named)
        extra = sorted(named - set(partitions))
        detail = (
            (f"missing {', '.join(f'{t}-{p}' for t, p in missing)}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"not assigned {', '.join(f'{t}-{p}' for t, p in extra)}" if extra else "")
        )
        value = (EARLIEST if side == "starting" else LATEST) if spec.kind == "offsets" else _EXAMPLE_TIME
        raise option_error(
            name,
            f"must name exactly the partitions being read ({detail})",
            example=partitions_example(name, partitions, value),
        )
    if spec.kind == "offsets":
        return {
            tp: earliest[tp]
            if spec.offsets[tp] == EARLIEST
            else latest[tp]
            if spec.offsets[tp] == LATEST
            else spec.offsets[tp]
            for tp in partitions
        }
    times = {tp: spec.timestamp if spec.kind == "timestamp" else spec.timestamps[tp] for tp in partitions}
    found = client.list_offsets(times)
    resolved = {}
    for tp in partitions:
        offset = found[tp][0]
        if offset >= 0:
            resolved[tp] = offset
        elif side == "ending" or options.on_no_matching_start == "latest":
            resolved[tp] = latest[tp]  # no record at or after the time: Spark takes the latest offset
        else:
            name = "startingTimestamp" if spec.kind == "timestamp" else "startingOffsetsByTimestamp"
            raise option_error(
                name,
                f"no record of {tp[0]}-{tp[1]} has a timestamp at or after {times[tp]}; set "
                f"startingOffsetsByTimestampStrategy=latest to start at the end instead",
                example_option="startingOffsetsByTimestampStrategy",
            )
    return resolved


def split(ranges: list[OffsetRange], min_partitions: int | None, max_records: int | None) -> list[OffsetRange]:
    """Cut ranges into tasks with the rules of Spark 4's ``KafkaOffsetRangeCalculator`` (SPARK-49259).

    Empty ranges are dropped. Then, in this order:

    1. ``maxRecordsPerPartition`` = N cuts every range into ``ceil(size / N)`` pieces.
    2. If ``minPartitions`` is above the number of pieces, each piece gets
       ``max(round(size / total * minPartitions), 1)`` parts (rounding half up, as Java does);
       pieces that would get one part are left whole and taken out of the proportion, and the
       others share ``minPartitions`` minus the number of whole pieces.

    Parts of a range or piece are equal, the last one taking the remainder. So a piece is never
    larger than N, and ``minPartitions`` only ever cuts the pieces further: with ranges of 100 and 10
    records, ``minPartitions`` 4 and N = 60, the pieces are 50, 50 and 10, and the tasks 25, 25,
    25, 25 and 10.
    """
    pieces = [r for r in ranges if r.size > 0]
    if max_records:
        pieces = [piece for r in pieces for piece in _divide(r, math.ceil(r.size / max_records))]
    if not min_partitions or len(pieces) >= min_partitions:
        return pieces
    total = sum(r.size for r in pieces)
    whole = {i for i, r in enumerate(pieces) if _part_count(r.size, total, min_partitions) == 1}
    split_total = total - sum(pieces[i].size for i in whole)
    split_min = max(min_partitions - len(whole), 1)
    return [
        part
        for i, r in enumerate(pieces)
        for part in _divide(r, 1 if i in whole else _part_count(r.size, split_total, split_min))
    ]


def _divide(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """``r`` in ``parts`` equal parts, the last one taking the remainder; empty parts dropped."""
    out, remaining, start = [], r.size, r.start
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        if this > 0:
            out.append(OffsetRange(r.topic, r.partition, start, start + this))
        start += this
    return out


def _part_count(size: int, total: int, min_partitions: int) -> int:
    return max(_round_half_up(size / total * min_partitions), 1)


def _round_half_up(value: float) -> int:
    """Java's Math.round (half up), not Python's round (half to even)."""
    return math.floor(value + 0.5)
