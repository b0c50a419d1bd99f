"""Cleaning one compacted log: Kafka's ``Cleaner``, run by a cleaner thread (``log_cleaner``).

A pass over ``[first dirty, first uncleanable)`` (chosen by ``cleaner_manager``):

1. Build the key map: the latest offset of each key in the dirty range, batch by batch, until
   the range ends or the map is full (``log.cleaner.dedupe.buffer.size``); the map's end is
   where the next pass starts.
2. Rewrite every inactive segment below the map's end, in groups that fit one segment (size,
   index size, 32-bit relative offsets: small segments, and those cleaning emptied, are merged),
   keeping a record unless the map holds a later offset of its key, it has no key (Kafka drops
   those too), or it is a tombstone whose segment's newest record is older than
   ``delete.retention.ms``. Records at or past the map's end are all kept. Batches keep their
   offsets, timestamps, headers, codec and producer fields (``broker.records.retain``); control
   batches (transaction markers) are kept whole; a batch with nothing left is dropped.
   Transactions: the batches of aborted transactions (from the ``.txnindex``) are dropped and
   never enter the key map (an aborted record must not hide a committed one); the cleaned segment
   keeps the ``.txnindex`` entries of the segments it replaces; nothing is cleaned at or past the
   first offset of an open transaction (``cleaner_manager``).
3. Each group is written aside as ``<base>.log.cleaned`` (with its indexes), fsynced, renamed
   ``.swap``, then swapped in under the log's lock (``PartitionLog.replace_segments``). A crash
   before the rename loses nothing (the ``.cleaned`` files are deleted at the next start); after
   it, the loader finishes the swap.

Reads go on throughout: they hold the old segments' files, which are deleted only after
``file.delete.delay.ms``; appends go to the active segment, which is never cleaned.
"""

import logging
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from broker.common.files import fsync_directory
from broker.records import batch, retain

from .config import LogConfig
from .file_records import EntryHeader, iter_entries
from .index import RELATIVE_OFFSET_MAX
from .offset_map import OffsetMap
from .partition_log import PartitionLog
from .segment import CLEANED_SUFFIX, SWAP_SUFFIX, LogSegment
from .transaction_index import AbortedTxn

log = logging.getLogger(__name__)


class CleaningAborted(Exception):
    """The log is being deleted or the broker is stopping: the pass stops, its files are removed."""


class CleanerStats(NamedTuple):
    bytes_read: int
    bytes_written: int
    records_read: int
    records_kept: int
    seconds: float


class Cleaner:
    def __init__(
        self, dedupe_buffer_bytes: int, should_abort: Callable[[PartitionLog], bool] = lambda partition_log: False
    ):
        self.offset_map = OffsetMap(dedupe_buffer_bytes)
        self._should_abort = should_abort
        self._aborted: dict[int, list[AbortedTxn]] = {}  # this pass's aborted transactions, by producer
        self._tally = [0, 0, 0, 0]  # this pass's bytes read, bytes written, records read, records kept

    def clean(
        self, partition_log: PartitionLog, first_dirty: int, first_uncleanable: int, now_ms: int
    ) -> tuple[int, CleanerStats]:
        """One pass; returns ``(the next first dirty offset, what it did)``. Raises CleaningAborted."""
        started = time.monotonic()
        self._tally = [0, 0, 0, 0]
        segments = partition_log.segments
        self._aborted = _by_producer(partition_log.collect_aborted_txns(segments[0].base_offset, first_uncleanable))
        map_end = self._build_offset_map(partition_log, segments, first_dirty, first_uncleanable)
        horizon_ms = now_ms - partition_log.config.delete_retention_ms
        to_clean = [s for s in segments[:-1] if s.base_offset < map_end]
        for group in group_segments(to_clean, partition_log.config):
            self._clean_group(partition_log, group, map_end, horizon_ms)
        self.offset_map.clear()
        read, written, records, kept = self._tally
        return map_end, CleanerStats(read, written, records, kept, time.monotonic() - started)

    def _build_offset_map(
        self, partition_log: PartitionLog, segments: Sequence[LogSegment], first_dirty: int, first_uncleanable: int
    ) -> int:
        """Fill the map from ``first_dirty``; return the offset after the last batch it holds."""
        offset_map = self.offset_map
        offset_map.clear()
        map_end = first_dirty
        for segment in segments[:-1]:
            if segment.next_offset <= first_dirty:
                continue
            if segment.base_offset >= first_uncleanable:
                break
            _, start = segment.offset_index.lookup(first_dirty)
            log_file = segment.file
            for _, entry_header, entry in iter_entries(log_file.fileno(), start, segment.size):
                self._check(partition_log)
                header = _v2(entry_header)
                if header.last_offset < first_dirty:
                    continue
                if header.base_offset >= first_uncleanable:
                    return map_end
                if len(offset_map) and len(offset_map) + header.records_count > offset_map.capacity:
                    return map_end  # full: the next pass goes on from here
                if not header.is_control and not self._is_aborted(header):
                    offset_map.put_all(retain.keyed_offsets(entry, header))
                map_end = header.last_offset + 1
        return map_end

    def _clean_group(self, partition_log: PartitionLog, group: list[LogSegment], map_end: int, horizon_ms: int) -> None:
        config = partition_log.config
        cleaned = LogSegment.create(
            partition_log.directory,
            group[0].base_offset,
            config.index_interval_bytes,
            config.segment_index_bytes,
            CLEANED_SUFFIX,
            partition_log.clock,
        )
        try:
            for segment in group:
                self._copy_kept(
                    partition_log, segment, cleaned, map_end, drop_tombstones=segment.largest_timestamp < horizon_ms
                )
            for segment in group:
                for aborted in segment.txn_index.entries:
                    cleaned.txn_index.append(aborted)
            cleaned.on_become_inactive()
            cleaned.flush()
            self._check(partition_log)
            cleaned.change_suffix(SWAP_SUFFIX)
            fsync_directory(partition_log.directory)
            if not partition_log.replace_segments(group, cleaned):
                raise CleaningAborted(f"{partition_log.name}: segments changed while they were cleaned")
        except BaseException:
            if cleaned.suffix in (CLEANED_SUFFIX, SWAP_SUFFIX):
                cleaned.delete()
            raise
        self._tally[1] += cleaned.size
        log.debug(
            "%s: cleaned %d segment(s) from %d into %r", partition_log.name, len(group), group[0].base_offset, cleaned
        )

    def _copy_kept(
        self, partition_log: PartitionLog, segment: LogSegment, cleaned: LogSegment, map_end: int, drop_tombstones: bool
    ) -> None:
        offset_map = self.offset_map

        def keep(record: retain.RecordKey) -> bool:
            if record.offset >= map_end:
                return True
            if record.key is None:
                return False
            latest = offset_map.get(record.key)
            if latest is not None and record.offset < latest:
                return False
            return not (record.is_tombstone and drop_tombstones)

        log_file = segment.file
        for _, entry_header, entry in iter_entries(log_file.fileno(), 0, segment.size):
            self._check(partition_log)
            header = _v2(entry_header)
            self._tally[0] += header.size
            self._tally[2] += header.records_count
            if self._is_aborted(header):
                continue
            whole = header.is_control or header.base_offset >= map_end  # control, or not decided on yet
            kept = entry if whole else retain.retain(entry, header, keep)
            if kept is not None:
                kept_header = batch.parse_header(kept)
                cleaned.append([(kept_header, [kept])])
                self._tally[3] += kept_header.records_count

    def _is_aborted(self, header: batch.BatchHeader) -> bool:
        """Whether a data batch belongs to an aborted transaction."""
        if not header.is_transactional or header.is_control:
            return False
        aborted = self._aborted.get(header.producer_id, ())
        return any(txn.first_offset <= header.base_offset < txn.last_offset for txn in aborted)

    def _check(self, partition_log: PartitionLog) -> None:
        if self._should_abort(partition_log):
            raise CleaningAborted(f"{partition_log.name}: cleaning aborted")


def _by_producer(aborted: Sequence[AbortedTxn]) -> dict[int, list[AbortedTxn]]:
    out: dict[int, list[AbortedTxn]] = {}
    for txn in aborted:
        out.setdefault(txn.producer_id, []).append(txn)
    return out


def _v2(header: EntryHeader) -> batch.BatchHeader:
    """The header of a v2 batch: a log holds nothing else (appends are up-converted to v2)."""
    assert isinstance(header, batch.BatchHeader), f"a legacy entry at offset {header.last_offset} in a log"
    return header


def group_segments(segments: Sequence[LogSegment], config: LogConfig) -> list[list[LogSegment]]:
    """Consecutive segments in groups that each fit one segment: at most ``segment.bytes`` of
    data and ``segment.index.bytes`` per index, offsets within 32 bits of the group's base
    (Kafka's ``groupSegmentsBySize``, sizes counted before cleaning)."""
    groups: list[list[LogSegment]] = []
    for segment in segments:
        if groups:
            group = groups[-1]
            fits = (
                sum(s.size for s in group) + segment.size <= config.segment_bytes
                and _index_bytes(group) + _index_bytes([segment]) <= config.segment_index_bytes
                and segment.next_offset - 1 - group[0].base_offset <= RELATIVE_OFFSET_MAX
            )
            if fits:
                group.append(segment)
                continue
        groups.append([segment])
    return groups


def _index_bytes(segments: Sequence[LogSegment]) -> int:
    return max(sum(s.offset_index.size_in_bytes for s in segments), sum(s.time_index.size_in_bytes for s in segments))
