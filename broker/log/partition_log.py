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
* Transactions: ``append_txn_marker`` writes a COMMIT or ABORT control batch for a producer; an
  aborted transaction gets an entry in the ``.txnindex`` of the segment its marker lands in, which
  ``collect_aborted_txns`` reads back for read_committed fetches. ``first_unstable_offset`` is the
  start of the earliest open transaction. At open, the producers' state is loaded from the newest
  snapshot and the batches after it are replayed, rebuilding the ``.txnindex`` entries of the
  replayed range (from the recovery point after an unclean stop, from a torn ``.txnindex`` on).
* ``leader_epoch_cache`` records where each leader epoch starts (``leader-epoch-checkpoint``): an
  append of a new epoch adds an entry; a log start that moves and a truncation trim it.
* ``truncate_to`` cuts the log at a batch boundary (a follower removing a tail its leader does not
  have), ``truncate_fully_and_start_at`` empties it to restart at an offset. Segments are removed
  from the last one down and the cut segment's indexes rebuilt, so a crash at any step leaves a
  consistent prefix of the log that the loader recovers.
"""

import bisect
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from broker.common.clock import Clock, wall_clock_ms
from broker.common.files import fsync_directory
from broker.common.settings import LONG_MAX
from broker.records import batch, record_check, record_set, retain
from broker.records.batch import BatchHeader, ControlType, Record
from broker.records.errors import CorruptRecordError

from . import loader
from .config import LogConfig
from .errors import (
    CorruptIndexError,
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
from .leader_epoch_cache import LeaderEpochFileCache
from .producer_state import ProducerState
from .scheduler import Scheduler
from .segment import SWAP_SUFFIX, Buffer, LogSegment
from .transaction_index import AbortedTxn

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
        self._load_producer_state(loaded.had_clean_shutdown)
        self.leader_epoch_cache = LeaderEpochFileCache(directory)
        self._load_leader_epochs(loaded.had_clean_shutdown)
        # called after a truncation, outside the lock (the log manager moves the cleaner's checkpoint)
        self.on_truncated: Callable[[PartitionLog], None] = lambda partition_log: None

    def _load_leader_epochs(self, had_clean_shutdown: bool) -> None:
        """Make the epoch cache agree with the log as loaded: after an unclean stop the entries from
        the recovery point on are made again from the batches' epochs (from the log start when the
        file was missing or unreadable); entries past the log end or before its start are trimmed.
        A file that cannot be written (a full disk) does not keep the log from opening: the entries
        are right in memory, and the next change writes them."""
        cache = self.leader_epoch_cache
        failed: list[OSError] = []

        def attempt(step: Callable[..., None], *args: int) -> None:
            try:
                step(*args)
            except OSError as exc:
                failed.append(exc)

        if cache.was_missing or not had_clean_shutdown:
            replay_from = self.log_start_offset if cache.was_missing else self.recovery_point
            for i, (_, _, header) in enumerate(self._batches_from(replay_from)):
                start_offset = max(header.base_offset, self.log_start_offset)
                if i == 0:
                    attempt(cache.truncate_from_end, start_offset)
                attempt(cache.assign, header.partition_leader_epoch, start_offset)
        attempt(cache.truncate_from_end, self.log_end_offset)
        attempt(cache.truncate_from_start, self.log_start_offset)
        if failed:
            reason = failed[-1].strerror or failed[-1]
            log.warning("%s: cannot write %s (%s); the next change writes it", self.name, cache.path, reason)

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
        """Append one or more v2 batches as a client produced them; return the offsets assigned
        (transaction markers go through ``append_txn_marker``).

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
            result = self._append_checked(headers, leader_epoch, now, log_append_time)
        if self.unflushed_messages >= self.config.flush_messages:
            self.flush()
        return result

    def _append_checked(
        self, headers: list[tuple[Buffer, BatchHeader]], leader_epoch: int, now: int, log_append_time: int
    ) -> AppendResult:
        """Write validated batches at the log end and account for them. Called with the lock held."""
        first_offset = self.log_end_offset
        last_offset = first_offset + sum(h.last_offset_delta + 1 for _, h in headers) - 1
        total_size = sum(h.size for _, h in headers)
        max_timestamp = max(h.max_timestamp for _, h in headers)
        if self.config.uses_log_append_time:
            max_timestamp = log_append_time
        segment = self._maybe_roll(total_size, len(headers), max_timestamp, last_offset, now)
        self._assign_epoch(leader_epoch, first_offset)
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
        for (header, _), (entry, _) in zip(stored, headers, strict=True):
            self._track_producer(segment, header, entry)
        if self._first_unflushed_ms is None:
            self._first_unflushed_ms = now
        self._schedule_time_flush(now)
        return AppendResult(
            first_offset,
            last_offset,
            sum(h.records_count for _, h in headers),
            max_timestamp,
            log_append_time,
            self.log_start_offset,
        )

    def append_txn_marker(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool, leader_epoch: int = 0
    ) -> int:
        """Append a COMMIT or ABORT marker closing the producer's transaction; return its offset.

        Raises InvalidProducerEpochError (an older producer epoch), TransactionCoordinatorFencedError
        (an older coordinator epoch), or LogStorageError."""
        now = self.clock()
        key, value = batch.control_record(ControlType.COMMIT if commit else ControlType.ABORT, coordinator_epoch)
        marker = batch.build(
            [Record(0, now, key, value, ())],
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            is_transactional=True,
            is_control=True,
        )
        header = batch.parse_header(marker)
        with self._lock:
            if self._deleted:
                raise LogDeletedError(f"{self.name} was deleted")
            self._check_write_back()
            self.producer_state.check_marker(producer_id, producer_epoch, coordinator_epoch)
            log_append_time = now if self.config.uses_log_append_time else -1
            result = self._append_checked([(marker, header)], leader_epoch, now, log_append_time)
        if self.unflushed_messages >= self.config.flush_messages:
            self.flush()
        return result.first_offset

    def _track_producer(self, segment: LogSegment, header: BatchHeader, entry: Buffer) -> None:
        """Account for a batch now in ``segment`` in the producers' state (an aborted
        transaction's marker also in the segment's ``.txnindex``). Called with the lock held."""
        if not header.is_control:
            self.producer_state.update(header, header.base_offset)
            return
        marker = _read_marker(entry)
        if marker is None:
            return
        completed = self.producer_state.complete_txn(header, *marker, header.base_offset)
        if completed is not None and completed.aborted:
            still_open = self.producer_state.first_unstable_offset
            last_stable = completed.last_offset + 1 if still_open is None else still_open
            try:
                segment.txn_index.append(
                    AbortedTxn(completed.producer_id, completed.first_offset, completed.last_offset, last_stable)
                )
            except OSError as exc:
                raise LogStorageError(
                    f"{self.name}: cannot write {segment.txn_index.path}: {exc.strerror or exc}"
                ) from exc

    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest open transaction, or None (without waiting for an append)."""
        return self.producer_state.first_unstable_offset

    def _assign_epoch(self, leader_epoch: int, start_offset: int) -> None:
        """Record a new leader epoch starting at ``start_offset`` before its first batch is written
        (an entry at the log end without data is harmless: the next batch of the epoch starts there)."""
        try:
            self.leader_epoch_cache.assign(leader_epoch, start_offset)
        except OSError as exc:
            reason = exc.strerror or exc
            raise LogStorageError(f"{self.name}: cannot write the leader epoch checkpoint: {reason}") from exc

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
            for header, _ in checked:
                self._assign_epoch(header.partition_leader_epoch, header.base_offset)
            segment.append([(header, (entry,)) for header, entry in checked])
            for header, data in checked:
                self._track_producer(segment, header, data)
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
            if header.is_transactional and header.producer_id < 0:
                raise InvalidRecordError(f"{self.name}: transactional batch without a producer id")
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
                segment = self._new_segment(new_base)
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
        """Whole batches starting with the one that contains ``offset`` (see LogSegment.read), and
        ending below ``max_offset`` if given (a batch boundary: the last stable offset).

        None at the end of the log; OffsetOutOfRangeError below the log start or past the end.
        """
        segments = self._segments
        end, end_position = segments[-1].end  # never past the end seen here, whatever is appended meanwhile
        if offset < self.log_start_offset or offset > end:
            raise OffsetOutOfRangeError(self.name, offset, self.log_start_offset, end)
        first = max(0, bisect.bisect_right([s.base_offset for s in segments], offset) - 1)
        try:
            stop_segment, stop_position = segments[-1], end_position
            if max_offset is not None and max_offset < end:
                if offset >= max_offset:
                    return None
                stop_segment, stop_position = self._position_of(segments, max_offset)
            for segment in segments[first:]:
                max_position = stop_position if segment is stop_segment else None
                found = segment.read(offset, max_bytes, max_position, min_one_batch)
                if found is not None or segment is stop_segment:
                    return found
        except (OSError, LogStorageError) as exc:  # EMFILE, EIO: this read fails, the log goes on
            raise self._read_error(f"cannot read offset {offset}", exc) from exc
        return None

    @staticmethod
    def _position_of(segments: tuple[LogSegment, ...], offset: int) -> tuple[LogSegment, int]:
        """The segment holding the batch that starts at ``offset`` (below the log end), and its position."""
        index = max(0, bisect.bisect_right([s.base_offset for s in segments], offset) - 1)
        for segment in segments[index:]:
            found = segment.translate_offset(offset)
            if found is not None:
                return segment, found[0]
        return segments[-1], segments[-1].size

    def collect_aborted_txns(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping ``[fetch_offset, upper_bound)``, from the
        ``.txnindex`` of the segment holding ``fetch_offset`` and those after it, as Kafka's
        ``LocalLog.collectAbortedTransactions``."""
        segments = self._segments
        first = max(0, bisect.bisect_right([s.base_offset for s in segments], fetch_offset) - 1)
        found: list[AbortedTxn] = []
        for segment in segments[first:]:
            entries, complete = segment.txn_index.collect(fetch_offset, upper_bound)
            found.extend(entries)
            if complete:
                break
        return found

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

    def _load_producer_state(self, had_clean_shutdown: bool) -> None:
        """Load the producers' state and the segments' ``.txnindex``: from the newest snapshot,
        replaying the batches after it. After a clean shutdown with intact indexes nothing is
        replayed (the log was closed with a snapshot at its end if it had any producer, so without
        one it had none, and a large log is not read through)."""
        rebuild_from = self.log_end_offset
        if not had_clean_shutdown:
            rebuild_from = self._segments[
                max(0, bisect.bisect_right([s.base_offset for s in self._segments], self.recovery_point) - 1)
            ].base_offset
        for index, segment in enumerate(self._segments):
            try:
                segment.txn_index.load(segment.base_offset, segment.next_offset)
            except (CorruptIndexError, OSError) as exc:
                for later in self._segments[index:]:
                    later.txn_index.delete()  # rebuilt by the replay below
                log.warning(
                    "%s: rebuilding the transaction indexes from segment %d (%s)", self.name, segment.base_offset, exc
                )
                rebuild_from = min(rebuild_from, segment.base_offset)
                break
        if had_clean_shutdown and rebuild_from == self.log_end_offset:
            if self.producer_state.load_snapshot(rebuild_from, self.log_end_offset) != self.log_end_offset:
                self.producer_state.clear()
            return
        self._rebuild_producer_state(rebuild_from)

    def _rebuild_producer_state(self, at_most: int) -> None:
        """Load the newest snapshot at or below ``at_most`` and replay the batches after it, their
        ``.txnindex`` entries rewritten (after recovery, or a truncation of the log's end)."""
        start = self.producer_state.load_snapshot(at_most, self.log_end_offset)
        for segment in self._segments:
            if segment.next_offset > start:
                segment.txn_index.truncate_from(start)
        for segment, position, header in self._batches_from(start):
            entry = os.pread(segment.file.fileno(), header.size, position) if header.is_control else b""
            self._track_producer(segment, header, entry)

    def _batches_from(self, offset: int) -> Iterator[tuple[LogSegment, int, BatchHeader]]:
        """Each v2 batch ending at or after ``offset``, with its segment and position (for replays)."""
        for segment in self._segments:
            if segment.next_offset <= offset:
                continue
            _, start = segment.offset_index.lookup(offset)
            for position, header in iter_headers(segment.file.fileno(), start, segment.size):
                if isinstance(header, BatchHeader) and header.last_offset >= offset:
                    yield segment, position, header

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
            self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
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
            self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
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

    # -- truncation ----------------------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove every batch at and above ``offset`` (a follower dropping what its leader does not
        have). A batch holding ``offset`` goes whole: the log then ends at the largest batch boundary
        <= ``offset``. Below the log start the log is emptied to start at ``offset``; at or past
        the log end only the epoch cache is trimmed (an epoch entry without data). The segments
        above are removed from the last one down, then the one holding ``offset`` is cut, its
        indexes rebuilt; the epoch cache, the producer state and the recovery point follow."""
        if offset < 0:
            raise ValueError(f"{self.name}: cannot truncate to a negative offset ({offset})")
        with self._lock:
            if self._deleted:
                raise LogDeletedError(f"{self.name} was deleted")
            if offset >= self.log_end_offset:
                self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
                return
            if offset < self.log_start_offset:  # never below the log start: deleted records stay gone
                self.truncate_fully_and_start_at(offset)
                return
            keep = bisect.bisect_right([s.base_offset for s in self._segments], offset)
            doomed = self._segments[keep:]
            try:
                for segment in reversed(doomed):
                    segment.rename_for_deletion()
                self._segments = self._segments[:keep]
                self.active_segment.truncate_to(offset)
            except OSError as exc:
                raise LogStorageError(f"{self.name}: cannot truncate to {offset}: {exc.strerror or exc}") from exc
            self._after_truncation()
            self._rebuild_producer_state(self.log_end_offset)
        log.info("%s: truncated to offset %d (%d segment(s) removed)", self.name, self.log_end_offset, len(doomed))
        self._delete_later(doomed)
        self.on_truncated(self)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Remove every segment and start an empty log at ``offset`` (a follower whose leader's log
        starts past its own end); the epoch cache and the producer state are emptied."""
        if offset < 0:
            raise ValueError(f"{self.name}: cannot start at a negative offset ({offset})")
        with self._lock:
            if self._deleted:
                raise LogDeletedError(f"{self.name} was deleted")
            doomed = self._segments
            try:
                for segment in reversed(doomed):
                    segment.rename_for_deletion()
                self._segments = (self._new_segment(offset),)
            except OSError as exc:
                raise LogStorageError(f"{self.name}: cannot restart at {offset}: {exc.strerror or exc}") from exc
            self.log_start_offset = offset
            self._after_truncation()
            self.producer_state.forget_all()
            self.leader_epoch_cache.clear()
        log.info("%s: emptied to start at offset %d (%d segment(s) removed)", self.name, offset, len(doomed))
        self._delete_later(doomed)
        self.on_truncated(self)

    def _new_segment(self, base_offset: int) -> LogSegment:
        """An empty segment starting at ``base_offset``, with this log's index settings."""
        return LogSegment.create(
            self.directory,
            base_offset,
            self.config.index_interval_bytes,
            self.config.segment_index_bytes,
            clock=self.clock,
        )

    def _after_truncation(self) -> None:
        """The log end moved down: bring the offsets that must not pass it back, and the epoch cache.
        Called with the lock held."""
        end = self.log_end_offset
        self.recovery_point = min(self.recovery_point, end)
        self.log_start_offset = min(self.log_start_offset, end)
        self._directory_needs_sync = True
        if self.recovery_point >= end:
            self._first_unflushed_ms = None
        self.leader_epoch_cache.truncate_from_end(end)

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


def _read_marker(entry: Buffer) -> tuple[ControlType, int] | None:
    """``(type, coordinator epoch)`` of a transaction marker batch; None for other control types."""
    records = batch.decode(entry, verify_crc=False).records
    control = batch.read_control_record(records[0].key, records[0].value) if records else None
    if control is None or control[1] is None:
        return None
    return ControlType(control[0]), control[1]


def _named(indexes: tuple[int, ...]) -> str:
    """``record 3``, ``records 0, 10, 20``, ``records 0, 10, 20 and 7 more``: a bounded message for any count."""
    if len(indexes) == 1:
        return f"record {indexes[0]}"
    more = f" and {len(indexes) - 3} more" if len(indexes) > 3 else ""
    return f"records {', '.join(map(str, indexes[:3]))}{more}"
