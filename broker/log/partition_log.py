"""A partition's log: an ordered list of segments with append, read, flush, roll and retention.

* ``append`` validates each v2 batch (size, CRC, header counts, and every record inside it, as
  Kafka's LogValidator does), assigns offsets by rewriting only ``baseOffset`` and
  ``partitionLeaderEpoch``, and writes the batch bytes unchanged otherwise. Two exceptions change
  ``maxTimestamp`` and the CRC: LogAppendTime topics (the attributes too), and a CreateTime batch
  whose ``maxTimestamp`` is not its records' largest timestamp (Kafka corrects it the same way).
* ``read`` returns whole batches from the one containing the offset, as a file slice.
* The segment list is an immutable tuple replaced on roll and delete, so readers take a snapshot
  and never wait for a writer.
* ``replace_segments`` swaps cleaned segments in for the ones they were cleaned from (the
  cleaner's last step), under the lock, renaming files only; readers holding the old ones go on.
* ``flush`` fsyncs what was written since the recovery point and only then advances it. With
  ``flush.messages`` = M and ``flush.ms`` = S, at most M messages or S ms of data are at risk.
"""

import bisect
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from broker.common.clock import Clock, wall_clock_ms
from broker.common.files import fsync_directory
from broker.common.settings import LONG_MAX
from broker.records import batch, record_check, record_set, retain
from broker.records.batch import BatchHeader
from broker.records.errors import CorruptRecordError

from . import loader
from .config import LogConfig
from .errors import (
    InvalidBatchError,
    InvalidRecordError,
    InvalidTimestampError,
    LogDeletedError,
    LogError,
    LogStorageError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from .file_records import FileSlice, iter_headers
from .producer_state import ProducerState
from .scheduler import Scheduler
from .segment import SWAP_SUFFIX, Buffer, LogSegment

log = logging.getLogger(__name__)

_FLUSH_RETRY_MS = 1000  # after a failed flush.ms flush, the next attempt


class AppendResult(NamedTuple):
    first_offset: int
    last_offset: int
    record_count: int
    max_timestamp: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    duplicate: bool = False  # an idempotent producer's retry: nothing was appended


def parse_directory_name(name: str) -> tuple[str, int]:
    """``my-topic-3`` -> ``("my-topic", 3)``; ValueError if the name is not ``<topic>-<partition>``."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        raise ValueError(f"{name!r} is not a <topic>-<partition> directory name")
    return topic, int(partition)


class PartitionLog:
    """The log of one topic partition, in ``directory`` (named ``<topic>-<partition>``)."""

    def __init__(
        self,
        directory: str,
        config: LogConfig,
        loaded: loader.LoadedLog,
        scheduler: Scheduler | None = None,
        clock: Clock = wall_clock_ms,
    ):
        self.directory = directory
        self.topic, self.partition = parse_directory_name(os.path.basename(directory))
        self.config = config
        self._segments = tuple(loaded.segments)
        self.log_start_offset = loaded.log_start_offset
        self.recovery_point = loaded.recovery_point
        self._scheduler = scheduler
        self.clock = clock
        self._lock = threading.RLock()
        self._deleted = False
        self._first_unflushed_ms: int | None = None
        self._time_flush_scheduled = False
        self._directory_needs_sync = False
        self.last_flush_ms = clock()
        self.producer_state = ProducerState(directory)
        self.producer_state.load(self.log_end_offset, self._headers_from, loaded.had_clean_shutdown)

    @classmethod
    def open(
        cls,
        directory: str,
        config: LogConfig | None = None,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        had_clean_shutdown: bool = False,
        scheduler: Scheduler | None = None,
        clock: Clock = wall_clock_ms,
    ) -> "PartitionLog":
        """Open (creating if needed) the log in ``directory``, recovering it after an unclean stop.

        ``scheduler`` (a ``Scheduler``) runs the asynchronous work: flushes on roll and on
        ``flush.ms``, and segment deletion after ``file.delete.delay.ms``. Without one, rolled
        segments are flushed only by the flush policy and deleted segments are removed at once.
        ``clock`` is the time that appends (LogAppendTime, timestamp bounds), roll, flush.ms and
        retention go by.
        """
        config = config or LogConfig()
        os.makedirs(directory, exist_ok=True)
        loaded = loader.load(directory, config, recovery_point, log_start_offset, had_clean_shutdown, clock)
        return cls(directory, config, loaded, scheduler, clock)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return self._segments

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def unflushed_messages(self) -> int:
        return self.log_end_offset - self.recovery_point

    # -- append --------------------------------------------------------------------------

    def append(self, records: Buffer, leader_epoch: int = 0) -> AppendResult:
        """Append one or more v2 batches as a client produced them; return the offsets assigned.

        Raises InvalidBatchError (CRC, framing), RecordTooLargeError, InvalidRecordError, or
        LogStorageError; a batch that fails validation is never written.
        """
        now = self.clock()
        headers = self._validate(records, now)
        log_append_time = now if self.config.uses_log_append_time else -1
        with self._lock:
            if self._deleted:
                raise LogDeletedError(f"{self.name} was deleted")
            self._check_write_back()
            if len(headers) == 1:
                duplicate = self.producer_state.check(headers[0][1])
                if duplicate is not None:
                    return AppendResult(
                        duplicate.first_offset,
                        duplicate.last_offset,
                        headers[0][1].records_count,
                        headers[0][1].max_timestamp,
                        log_append_time,
                        self.log_start_offset,
                        True,
                    )
            first_offset = self.log_end_offset
            last_offset = first_offset + sum(h.last_offset_delta + 1 for _, h in headers) - 1
            total_size = sum(h.size for _, h in headers)
            max_timestamp = max(h.max_timestamp for _, h in headers)
            if self.config.uses_log_append_time:
                max_timestamp = log_append_time
            segment = self._maybe_roll(total_size, len(headers), max_timestamp, last_offset, now)
            stored = []
            next_offset = first_offset
            for entry, header in headers:
                if self.config.uses_log_append_time:
                    entry = batch.with_log_append_time(entry, log_append_time)
                    header = header._replace(max_timestamp=log_append_time)
                stored.append(
                    (
                        header._replace(base_offset=next_offset),
                        batch.with_offset_and_epoch(entry, next_offset, leader_epoch),
                    )
                )
                next_offset += header.last_offset_delta + 1
            segment.append(stored)
            for header, _ in stored:
                self.producer_state.update(header, header.base_offset)
            if self._first_unflushed_ms is None:
                self._first_unflushed_ms = now
            self._schedule_time_flush(now)
            result = AppendResult(
                first_offset,
                last_offset,
                sum(h.records_count for _, h in headers),
                max_timestamp,
                log_append_time,
                self.log_start_offset,
            )
        if self.unflushed_messages >= self.config.flush_messages:
            self.flush()
        return result

    def append_as_follower(self, records: Buffer) -> int:
        """Append the leader's batches as they are (offsets, bytes and leader epochs kept), the first
        at this log's end offset: a follower's copy of its leader's log. A partial batch at the end (a
        fetch cut at its size budget) is left for the next fetch. Returns the new log end offset.

        Raises InvalidBatchError (a CRC or framing error, a batch not at the expected offset),
        InvalidRecordError (a legacy batch) or LogStorageError; nothing is written then.
        """
        now = self.clock()
        try:
            entries = list(record_set.iter_entries(records, allow_partial_tail=True))
        except CorruptRecordError as exc:
            raise InvalidBatchError(f"{self.name}: {exc}") from None
        view = memoryview(records)
        checked: list[tuple[BatchHeader, Buffer]] = []
        for position, header in entries:
            if not isinstance(header, batch.BatchHeader):
                raise InvalidRecordError(f"{self.name}: a leader sent a magic {header.magic} batch")
            entry = view[position : position + header.size]
            try:
                batch.validate(entry)
            except CorruptRecordError as exc:
                raise InvalidBatchError(f"{self.name}: {exc}") from None
            checked.append((header, entry))
        with self._lock:
            if self._deleted:
                raise LogDeletedError(f"{self.name} was deleted")
            self._check_write_back()
            expected = self.log_end_offset
            for header, _ in checked:
                if header.base_offset != expected:
                    raise InvalidBatchError(
                        f"{self.name}: the leader's batch starts at offset {header.base_offset}, "
                        f"this replica's log ends at {expected}"
                    )
                expected = header.base_offset + header.last_offset_delta + 1
            if not checked:
                return expected
            segment = self._maybe_roll(
                sum(h.size for h, _ in checked),
                len(checked),
                max(h.max_timestamp for h, _ in checked),
                expected - 1,
                now,
            )
            segment.append([(header, (entry,)) for header, entry in checked])
            for header, _ in checked:
                self.producer_state.update(header, header.base_offset)
            if self._first_unflushed_ms is None:
                self._first_unflushed_ms = now
            self._schedule_time_flush(now)
        if self.unflushed_messages >= self.config.flush_messages:
            self.flush()
        return expected

    def _check_write_back(self) -> None:
        """Raise the write-back error of a segment not flushed since (its data may be lost):
        this partition refuses appends until a restart recovers it from its last flushed offset."""
        for segment in reversed(self._segments):
            if segment.write_back_error is not None:
                raise LogStorageError(f"{self.name}: {segment.write_back_error}")
            if segment.base_offset < self.recovery_point:
                return

    def _validate(self, records: Buffer, now_ms: int) -> list[tuple[Buffer, BatchHeader]]:
        """``(batch bytes, header)`` per batch, checked; a CreateTime batch whose ``maxTimestamp`` is
        not its records' largest comes back as a corrected copy, the others as views of ``records``."""
        try:
            entries = list(record_set.iter_entries(records, allow_partial_tail=False))
        except CorruptRecordError as exc:
            raise InvalidBatchError(f"{self.name}: {exc}") from None
        if not entries:
            raise InvalidRecordError(f"{self.name}: no record batch to append")
        view = memoryview(records)
        checked: list[tuple[Buffer, BatchHeader]] = []
        for position, header in entries:
            if not isinstance(header, batch.BatchHeader):  # magic 0 or 1
                raise InvalidRecordError(f"{self.name}: magic {header.magic} must be up-converted to v2 before append")
            if header.size > self.config.max_message_bytes:
                raise RecordTooLargeError(
                    f"{self.name}: batch of {header.size} bytes exceeds max.message.bytes "
                    f"({self.config.max_message_bytes})"
                )
            entry: Buffer = view[position : position + header.size]
            try:
                batch.validate(entry)
            except CorruptRecordError as exc:
                raise InvalidBatchError(f"{self.name}: {exc}") from None
            if header.records_count <= 0 or header.last_offset_delta + 1 != header.records_count:
                raise InvalidRecordError(
                    f"{self.name}: batch counts {header.records_count} records but spans "
                    f"{header.last_offset_delta + 1} offsets"
                )
            if header.is_control:
                raise InvalidRecordError(f"{self.name}: clients may not write control batches")
            if header.producer_id >= 0 and header.base_sequence < 0:
                raise InvalidRecordError(f"{self.name}: idempotent batch without a base sequence")
            if header.producer_id >= 0 and len(entries) > 1:
                raise InvalidRecordError(f"{self.name}: an idempotent batch must be appended on its own")
            try:
                largest_timestamp = record_check.check(entry, header)
            except record_check.InvalidRecordsError as exc:
                raise InvalidRecordError(f"{self.name}: {exc}", () if exc.index < 0 else (exc.index,)) from None
            if self.config.compacted:
                self._check_keys(entry, header)
            if not self.config.uses_log_append_time:
                self._check_timestamps(entry, header, largest_timestamp, now_ms)
            if header.timestamp_type == batch.TimestampType.CREATE_TIME and header.max_timestamp != largest_timestamp:
                entry = batch.with_max_timestamp(entry, largest_timestamp)
                header = header._replace(max_timestamp=largest_timestamp)
            checked.append((entry, header))
        return checked

    def _check_keys(self, entry: Buffer, header: BatchHeader) -> None:
        """A compacted log keeps the latest record of each key: records without one are refused, each
        named, the others of the batch with them (Kafka too)."""
        keyless = tuple(index for index, record in enumerate(retain.keys(entry, header)) if record.key is None)
        if keyless:
            raise InvalidRecordError(
                f"{self.name}: a compacted topic (cleanup.policy={self.config.cleanup_policy}) "
                f"cannot accept a record without a key ({_named(keyless)})",
                keyless,
                "a record without a key on a compacted topic",
            )

    def _check_timestamps(self, entry: Buffer, header: BatchHeader, largest_timestamp: int, now_ms: int) -> None:
        """Refuse a batch with records timestamped too far from ``now_ms``, each named (Kafka's
        LogValidator; a record without a timestamp, -1, passes). The largest timestamp settles the
        common case; the records are walked only when a lower bound is set or the upper one is crossed."""
        before_ms, after_ms = self.config.timestamp_bounds_ms
        if largest_timestamp - now_ms <= after_ms and before_ms == LONG_MAX:
            return
        out_of_range = [
            (index, record.timestamp)
            for index, record in enumerate(retain.keys(entry, header))
            if record.timestamp != -1
            and (now_ms - record.timestamp > before_ms or record.timestamp - now_ms > after_ms)
        ]
        if out_of_range:
            index, timestamp = out_of_range[0]
            side, bound = ("before", before_ms) if timestamp < now_ms else ("after", after_ms)
            indexes = tuple(index for index, _ in out_of_range)
            raise InvalidTimestampError(
                f"{self.name}: record {index}'s timestamp {timestamp} lies more than "
                f"message.timestamp.{side}.max.ms ({bound}) {side} the broker's clock ({now_ms})"
                + (f" ({_named(indexes)} out of range)" if len(indexes) > 1 else ""),
                indexes,
                "a timestamp further from the broker's clock than message.timestamp.before/after.max.ms allow",
            )

    def _maybe_roll(self, size: int, batch_count: int, max_timestamp: int, max_offset: int, now_ms: int) -> LogSegment:
        segment = self.active_segment
        roll_ms = self.config.segment_ms - self.config.segment_jitter_ms
        if segment.should_roll(
            size, max_timestamp, max_offset, now_ms, self.config.segment_bytes, roll_ms, batch_count
        ):
            segment = self.roll()
        return segment

    def roll(self) -> LogSegment:
        """Start a new active segment at the log end offset (no-op while the active one is empty)."""
        with self._lock:
            old = self.active_segment
            if old.size == 0:
                return old
            new_base = self.log_end_offset
            try:
                old.on_become_inactive()
                segment = LogSegment.create(
                    self.directory,
                    new_base,
                    self.config.index_interval_bytes,
                    self.config.segment_index_bytes,
                    clock=self.clock,
                )
            except OSError as exc:
                raise LogStorageError(f"{self.name}: cannot create segment {new_base}: {exc.strerror or exc}") from exc
            self._segments = self._segments + (segment,)
            self._directory_needs_sync = True
            if self.producer_state.producers:
                self.producer_state.write_snapshot(new_base)
        if self._scheduler is not None:
            self._scheduler.schedule(0, lambda: self.flush(new_base))
        return segment

    # -- read ----------------------------------------------------------------------------

    def read(
        self, offset: int, max_bytes: int, min_one_batch: bool = True, max_offset: int | None = None
    ) -> FileSlice | None:
        """Whole batches starting with the one that contains ``offset`` (see LogSegment.read), none
        at or past ``max_offset`` (a batch boundary: the high watermark) when given.

        None at the end of the log (or at ``max_offset``); OffsetOutOfRangeError below the log start
        or past the end.
        """
        segments = self._segments
        end, end_position = segments[-1].end  # never past the end seen here, whatever is appended meanwhile
        if offset < self.log_start_offset or offset > end:
            raise OffsetOutOfRangeError(self.name, offset, self.log_start_offset, end)
        bases = [s.base_offset for s in segments]
        last, last_position = segments[-1], end_position
        if max_offset is not None and max_offset < end:
            if offset >= max_offset:
                return None
            last = segments[max(0, bisect.bisect_right(bases, max_offset) - 1)]
            found = last.translate_offset(max_offset)
            last_position = last.size if found is None else found[0]
        first = max(0, bisect.bisect_right(bases, offset) - 1)
        try:
            for segment in segments[first:]:
                found_slice = segment.read(offset, max_bytes, last_position if segment is last else None, min_one_batch)
                if found_slice is not None or segment is last:
                    return found_slice
        except (OSError, LogStorageError) as exc:  # EMFILE, EIO: this read fails, the log goes on
            raise self._read_error(f"cannot read offset {offset}", exc) from exc
        return None

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with a timestamp >= ``timestamp``, or None."""
        try:
            for segment in self._segments:
                if segment.max_timestamp >= timestamp:
                    found = segment.find_offset_by_timestamp(timestamp, self.log_start_offset)
                    if found is not None:
                        return found
        except (OSError, LogStorageError) as exc:
            raise self._read_error(f"cannot look up timestamp {timestamp}", exc) from exc
        return None

    def _read_error(self, what: str, exc: Exception) -> LogError:
        """What a failed read raises: the log was deleted under it (its files closed), or a storage error."""
        if self._deleted:
            return LogDeletedError(f"{self.name} was deleted")
        return LogStorageError(f"{self.name}: {what}: {getattr(exc, 'strerror', None) or exc}")

    def _headers_from(self, offset: int) -> Iterator[BatchHeader]:
        """The headers of the v2 batches ending at or after ``offset`` (for replaying producer state)."""
        for segment in self._segments:
            if segment.next_offset <= offset:
                continue
            _, start = segment.offset_index.lookup(offset)
            for _, header in iter_headers(segment.file.fileno(), start, segment.size):
                if isinstance(header, BatchHeader) and header.last_offset >= offset:
                    yield header

    # -- durability ----------------------------------------------------------------------

    def flush(self, up_to: int | None = None) -> None:
        """fsync everything below ``up_to`` (default: the end), then advance the recovery point."""
        started = self.clock()
        with self._lock:
            target = self.log_end_offset if up_to is None else min(up_to, self.log_end_offset)
            if target <= self.recovery_point:
                return
            to_the_end = target == self.log_end_offset
            dirty = [s for s in self._segments if s.next_offset > self.recovery_point and s.base_offset < target]
            sync_directory, self._directory_needs_sync = self._directory_needs_sync, False
        try:
            for segment in dirty:
                segment.flush()
            if sync_directory:
                fsync_directory(self.directory)
        except (OSError, LogStorageError) as exc:
            self._directory_needs_sync = self._directory_needs_sync or sync_directory
            reason = exc.strerror or exc if isinstance(exc, OSError) else exc
            raise LogStorageError(f"{self.name}: flush failed: {reason}") from exc
        with self._lock:
            self.recovery_point = max(self.recovery_point, target)
            if self.recovery_point >= self.log_end_offset:
                self._first_unflushed_ms = None
            elif to_the_end:
                # What is still unflushed was appended while the fsync ran, so after ``started``.
                self._first_unflushed_ms = started
            self.last_flush_ms = self.clock()

    def _schedule_time_flush(self, now: int, delay_ms: int | None = None) -> None:
        """Make sure one background flush is due ``flush.ms`` after the oldest unflushed append.

        Called with the lock held. At most one such flush is pending per log at any time.
        """
        if (
            self._scheduler is None
            or self.config.flush_ms >= LONG_MAX
            or self._time_flush_scheduled
            or self._first_unflushed_ms is None
        ):
            return
        if delay_ms is None:
            delay_ms = max(0, self._first_unflushed_ms + self.config.flush_ms - now)
        self._time_flush_scheduled = True
        self._scheduler.schedule(delay_ms, self._flush_on_time)

    def _flush_on_time(self) -> None:
        """The ``flush.ms`` task: flush, and if data is still at risk (appended during the fsync,
        or the fsync failed), schedule the next one; appends only schedule when none is pending."""
        with self._lock:
            self._time_flush_scheduled = False
        retry_ms = None
        try:
            self.flush()
        except LogStorageError as exc:
            log.error("%s; retrying in %d ms", exc, _FLUSH_RETRY_MS)
            retry_ms = _FLUSH_RETRY_MS
        with self._lock:
            if self._first_unflushed_ms is not None:
                self._schedule_time_flush(self.clock(), retry_ms)

    # -- retention -----------------------------------------------------------------------

    def delete_retained_segments(self) -> int:
        """Delete the oldest whole segments past ``retention.ms`` or beyond ``retention.bytes``,
        and those wholly below the log start offset (moved by ``delete_records_before``).

        The log start offset moves to the first remaining segment. Returns the number deleted.
        """
        now = self.clock()
        with self._lock:
            doomed = self._retained_segments(now)
            if not doomed:
                return 0
            self._drop_leading_segments(len(doomed))
            self.log_start_offset = max(self.log_start_offset, self._segments[0].base_offset)
            self.producer_state.remove_before(self.log_start_offset)
        log.info(
            "%s: retention deleted %d segment(s); log start offset is now %d",
            self.name,
            len(doomed),
            self.log_start_offset,
        )
        self._delete_later(doomed)
        return len(doomed)

    def delete_records_before(self, offset: int) -> int:
        """Move the log start offset up to ``offset`` (DeleteRecords), at most to the log end (the
        partition keeps it at most the high watermark), and delete the segments wholly below it.
        Returns the log start offset.

        Records below it are gone for readers at once (OffsetOutOfRangeError), as after retention.
        """
        with self._lock:
            if self._deleted:
                raise LogDeletedError(f"{self.name} was deleted")
            if not 0 <= offset <= self.log_end_offset:
                raise OffsetOutOfRangeError(self.name, offset, self.log_start_offset, self.log_end_offset)
            if offset <= self.log_start_offset:
                return self.log_start_offset
            self.log_start_offset = offset
            below = 0
            while (
                below < len(self._segments)
                and 0 < self._segments[below].size
                and self._segments[below].next_offset <= offset
            ):
                below += 1
            doomed = self._segments[:below]
            if below:
                self._drop_leading_segments(below)
            self.producer_state.remove_before(self.log_start_offset)
        log.info("%s: records before %d deleted (%d segment(s))", self.name, offset, len(doomed))
        self._delete_later(doomed)
        return offset

    def _drop_leading_segments(self, count: int) -> None:
        """Take the first ``count`` segments out of the log (rolling first if that is all of them).
        Called with the lock held."""
        if count == len(self._segments):
            self.roll()
        for segment in self._segments[:count]:
            segment.rename_for_deletion()
        self._segments = self._segments[count:]

    def _delete_later(self, segments: Sequence[LogSegment]) -> None:
        for segment in segments:
            if self._scheduler is not None:
                self._scheduler.schedule(self.config.file_delete_delay_ms, segment.delete)
            else:
                segment.delete()

    def _retained_segments(self, now: int) -> list[LogSegment]:
        config = self.config
        excess = self.size_in_bytes - config.retention_bytes if config.retention_bytes >= 0 else -1
        doomed = []
        for segment in self._segments:
            if segment.size == 0 and segment is self._segments[-1]:
                break
            expired = (
                config.deletes and config.retention_ms >= 0 and now - segment.largest_timestamp > config.retention_ms
            )
            oversize = config.deletes and excess >= segment.size
            deleted = segment.next_offset <= self.log_start_offset
            if not (expired or oversize or deleted):
                break
            excess -= segment.size
            doomed.append(segment)
        return doomed

    # -- compaction ----------------------------------------------------------------------

    def replace_segments(self, old: Sequence[LogSegment], cleaned: LogSegment) -> bool:
        """Swap ``cleaned`` (complete on disk with the ``.swap`` suffix) in for the consecutive
        inactive segments ``old``: rename them ``.deleted``, drop the suffix of ``cleaned`` (the
        order Kafka's ``replaceSegments`` uses, which the loader finishes after a crash), and
        delete them later. False, with nothing changed, if ``old`` are no longer in the log as they
        were (retention or DeleteRecords removed some meanwhile), or the log was deleted."""
        with self._lock:
            segments = self._segments
            first = next((i for i, s in enumerate(segments) if s is old[0]), None)
            if (
                self._deleted
                or first is None
                or first + len(old) >= len(segments)
                or any(a is not b for a, b in zip(segments[first : first + len(old)], old, strict=True))
            ):
                return False
            assert cleaned.suffix == SWAP_SUFFIX and cleaned.base_offset == old[0].base_offset
            try:
                for segment in old:
                    segment.rename_for_deletion()
                cleaned.change_suffix("")
                fsync_directory(self.directory)
            except OSError as exc:
                raise LogStorageError(
                    f"{self.name}: cannot swap in cleaned segment {cleaned.base_offset}: "
                    f"{exc.strerror or exc} (the next start finishes the swap)"
                ) from exc
            self._segments = segments[:first] + (cleaned,) + segments[first + len(old) :]
        self._delete_later(old)
        return True

    # -- lifecycle -----------------------------------------------------------------------

    def update_config(self, config: LogConfig) -> None:
        """Run with new settings from now on (a dynamic config change): the next append, roll,
        flush and retention check use them."""
        with self._lock:
            self.config = config
            if self._first_unflushed_ms is not None:
                self._schedule_time_flush(self.clock())

    def close(self) -> None:
        """Trim the indexes, let go of the files, then write the producer snapshot (trimming first
        frees the indexes' reserved blocks on a full disk). No flush: the owner decides (see
        LogManager.shutdown). Every step is attempted; LogStorageError names the first failure."""
        with self._lock:
            steps = [self.active_segment.on_become_inactive, *(segment.close for segment in self._segments)]
            if self.producer_state.producers:
                steps.append(lambda: self.producer_state.write_snapshot(self.log_end_offset))
            failed = None
            for step in steps:
                try:
                    step()
                except OSError as exc:
                    failed = failed or exc
            if failed is not None:
                raise LogStorageError(f"{self.name}: close failed: {failed.strerror or failed}") from failed

    def discard(self) -> None:
        """Let go of the files without trimming or snapshots (the log is being deleted)."""
        with self._lock:
            self._deleted = True
            for segment in self._segments:
                segment.discard()

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.name}, start={self.log_start_offset}, end={self.log_end_offset}, "
            f"segments={len(self._segments)})"
        )


def _named(indexes: tuple[int, ...]) -> str:
    """``record 3``, ``records 0, 10, 20``, ``records 0, 10, 20 and 7 more``: a bounded message for any count."""
    if len(indexes) == 1:
        return f"record {indexes[0]}"
    more = f" and {len(indexes) - 3} more" if len(indexes) > 3 else ""
    return f"records {', '.join(map(str, indexes[:3]))}{more}"
