"""Which compacted log to clean next, and where each one's dirty part starts: Kafka's ``LogCleanerManager``.

* ``cleaner-offset-checkpoint`` (Kafka's checkpoint format, in the log directory) holds each
  compacted partition's first dirty offset: everything below it was cleaned at least once.
* A log is cleanable from its first dirty offset up to its first uncleanable one: the active
  segment's base, the first segment with a record newer than ``min.compaction.lag.ms``, or the
  first offset of an open transaction, whichever comes first.
* The filthiest log goes first: the largest share of dirty bytes, if at least
  ``min.cleanable.dirty.ratio``, or any log whose oldest dirty record waited longer than
  ``max.compaction.lag.ms``.
* A log whose pass failed for another reason than storage (a corrupt batch) is left alone until
  the broker restarts (Kafka's "uncleanable" partitions).
* A log being cleaned is marked in progress; ``abort_and_wait`` (the log is being deleted, the
  broker stops) asks its cleaner to stop and waits until it has.
"""

import os
import threading
from collections.abc import Callable
from typing import NamedTuple

from . import checkpoints
from .partition_log import PartitionLog

CHECKPOINT_FILE = "cleaner-offset-checkpoint"


class CleanableLog(NamedTuple):
    log: PartitionLog
    first_dirty: int
    first_uncleanable: int
    dirty_ratio: float


class LogCleanerManager:
    def __init__(self, log_dir: str, all_logs: Callable[[], list[PartitionLog]]):
        """``all_logs()`` returns the PartitionLogs of the directory."""
        self.checkpoint_path = os.path.join(log_dir, CHECKPOINT_FILE)
        self._all_logs = all_logs
        self._first_dirty = checkpoints.read_or_empty(self.checkpoint_path)
        self._in_progress: dict[PartitionLog, bool] = {}  # -> aborted?
        self._uncleanable: set[PartitionLog] = set()  # logs a pass failed on for another reason than storage
        self._condition = threading.Condition()

    def cleanable(self, partition_log: PartitionLog, now_ms: int) -> CleanableLog:
        """Where the log's dirty part starts and ends, and its share of the log's cleanable bytes."""
        segments = partition_log.segments
        first_dirty = self._first_dirty.get((partition_log.topic, partition_log.partition), 0)
        if not partition_log.log_start_offset <= first_dirty <= partition_log.log_end_offset:
            first_dirty = partition_log.log_start_offset  # a new log, or one truncated or re-created
        first_uncleanable = segments[-1].base_offset
        lag_ms = partition_log.config.min_compaction_lag_ms
        for segment in segments[:-1]:
            if segment.next_offset > first_dirty and lag_ms > 0 and segment.largest_timestamp > now_ms - lag_ms:
                first_uncleanable = segment.base_offset
                break
        first_unstable = partition_log.first_unstable_offset()
        if first_unstable is not None:
            first_uncleanable = min(first_uncleanable, first_unstable)
        first_dirty = min(first_dirty, first_uncleanable)
        clean = sum(s.size for s in segments if s.next_offset <= first_dirty)
        dirty = sum(s.size for s in segments if s.next_offset > first_dirty and s.base_offset < first_uncleanable)
        ratio = dirty / (clean + dirty) if dirty else 0.0
        return CleanableLog(partition_log, first_dirty, first_uncleanable, ratio)

    def grab_filthiest(self, now_ms: int) -> CleanableLog | None:
        """The compacted log most in need of cleaning, marked in progress; None if none needs it."""
        with self._condition:
            candidates = []
            for partition_log in self._all_logs():
                if (
                    not partition_log.config.compacted
                    or partition_log in self._in_progress
                    or partition_log in self._uncleanable
                ):
                    continue
                found = self.cleanable(partition_log, now_ms)
                if found.first_dirty < found.first_uncleanable and (
                    found.dirty_ratio >= partition_log.config.min_cleanable_dirty_ratio
                    or self._waited_too_long(found, now_ms)
                ):
                    candidates.append(found)
            if not candidates:
                return None
            chosen = max(candidates, key=lambda c: c.dirty_ratio)
            self._in_progress[chosen.log] = False
            return chosen

    @staticmethod
    def _waited_too_long(found: CleanableLog, now_ms: int) -> bool:
        """``max.compaction.lag.ms``: the oldest dirty segment's first record is older than that."""
        max_lag = found.log.config.max_compaction_lag_ms
        for segment in found.log.segments:
            if segment.next_offset > found.first_dirty and segment.size:
                first = segment.first_batch_timestamp
                return first is not None and 0 <= first < now_ms - max_lag
        return False

    def done_cleaning(self, partition_log: PartitionLog, first_dirty: int | None) -> None:
        """The pass ended: record the log's next first dirty offset (None: it was aborted)."""
        with self._condition:
            aborted = self._in_progress.pop(partition_log, False)
            if first_dirty is not None and not aborted:
                self._first_dirty[(partition_log.topic, partition_log.partition)] = first_dirty
                self._write_checkpoint()
            self._condition.notify_all()

    def mark_uncleanable(self, partition_log: PartitionLog) -> None:
        with self._condition:
            self._uncleanable.add(partition_log)

    def should_abort(self, partition_log: PartitionLog) -> bool:
        return self._in_progress.get(partition_log, False)

    def abort_and_wait(self, partition_log: PartitionLog | None = None, timeout: float = 60.0) -> None:
        """Stop cleaning ``partition_log`` (every log if None) and wait until its pass has ended."""
        with self._condition:
            for cleaning in list(self._in_progress):
                if partition_log is None or cleaning is partition_log:
                    self._in_progress[cleaning] = True
            self._condition.wait_for(
                lambda: not any(partition_log is None or c is partition_log for c in self._in_progress), timeout
            )

    def forget(self, topic: str, partition: int) -> None:
        """A deleted log's checkpoint entry goes (a topic re-created under its name starts clean)."""
        with self._condition:
            if self._first_dirty.pop((topic, partition), None) is not None:
                self._write_checkpoint()

    def truncate_checkpoint(self, topic: str, partition: int, offset: int) -> None:
        """The log was truncated: its first dirty offset moves down to ``offset`` if above it."""
        with self._condition:
            if self._first_dirty.get((topic, partition), -1) > offset:
                self._first_dirty[(topic, partition)] = offset
                self._write_checkpoint()

    def _write_checkpoint(self) -> None:
        checkpoints.write(self.checkpoint_path, self._first_dirty)
