"""A partition as the server sees it (Kafka's ``Partition``): its state in the cluster (leader,
leader epoch, replicas, in-sync replicas) and its local log, on the leader and on each follower.

On the leader, writes go through the partition, which stamps appended batches with the leader epoch
and keeps the high watermark: the offset below which records are committed, that is stored by
every in-sync replica (the smallest log end offset in the ISR; it only ever moves forward).
Consumers read below it only. The leader learns each follower's log end offset from its fetches
(``record_follower_fetch``), and says which followers fell out of sync (not caught up to the
leader's log end within ``replica.lag.time.max.ms``) and which caught up again: the replica manager
writes the ISR changes. A follower appends the leader's batches as they are
(``append_as_follower``) and takes the high watermark the leader sends.

The partition is shared by the request threads: its counters change under a lock.

The last stable offset is where read_committed readers stop: the first offset of the earliest
open transaction, never past the high watermark.
"""

import dataclasses
import logging
import threading
import time

from broker.cluster.metadata_cache import PartitionState
from broker.log.errors import OffsetOutOfRangeError
from broker.log.leader_epoch_cache import Truncation
from broker.log.partition_log import AppendResult, PartitionLog
from broker.records import batch
from broker.records.errors import CorruptRecordError

_log = logging.getLogger(__name__)


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclasses.dataclass
class _Follower:
    """What the leader knows of one follower: its log end offset (-1 before its first fetch) and when
    it was last caught up to the leader's log end."""

    log_end_offset: int
    last_caught_up_ms: int


def _first_batch(records) -> batch.BatchHeader | None:
    """The header of the first batch of ``records``; None when there is none (or not a v2 one)."""
    try:
        return batch.parse_header(records) if records else None
    except CorruptRecordError:
        return None


class Partition:
    def __init__(
        self,
        topic: str,
        index: int,
        state: PartitionState,
        log: PartitionLog,
        node_id: int,
        high_watermark: int = 0,
    ):
        """``high_watermark``: the one known before this role (a follower's, when it becomes leader)."""
        self.topic = topic
        self.index = index
        self.state = state
        self.log = log
        self.node_id = node_id
        self._lock = threading.Lock()
        self._high_watermark = max(min(high_watermark, log.log_end_offset), log.log_start_offset)
        now = monotonic_ms()
        self._followers = {r: _Follower(-1, now) for r in state.replicas if r != node_id}
        # a follower cuts what its leader does not have before it fetches (the fetcher asks where)
        self.needs_truncation = not self.is_leader
        self._advance_high_watermark()

    @property
    def leader_epoch(self) -> int:
        return self.state.leader_epoch

    @property
    def is_leader(self) -> bool:
        return self.state.leader == self.node_id

    @property
    def isr(self) -> tuple[int, ...]:
        return self.state.isr

    @property
    def high_watermark(self) -> int:
        """The high watermark as of now: on a leader, records appended and not yet flushed count
        (a leader alone in its ISR has them all committed at once, before a flush they wait for)."""
        self._advance_high_watermark()
        return self._high_watermark

    @property
    def last_stable_offset(self) -> int:
        high_watermark = self.high_watermark
        first_unstable = self.log.first_unstable_offset()
        return high_watermark if first_unstable is None else min(first_unstable, high_watermark)

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def update_state(self, state: PartitionState) -> None:
        """The cluster changed this partition's ISR (same leader, same leader epoch)."""
        self.state = state
        self._advance_high_watermark()

    # -- the leader ----------------------------------------------------------------------

    def append_records(self, records) -> AppendResult:
        """Append a produced batch as the leader, stamped with the current leader epoch."""
        result = self.log.append(records, leader_epoch=self.leader_epoch)
        self._advance_high_watermark()
        return result

    def append_txn_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool) -> int:
        """Append a transaction marker as the leader (see ``PartitionLog.append_txn_marker``); its offset."""
        offset = self.log.append_txn_marker(producer_id, producer_epoch, coordinator_epoch, commit, self.leader_epoch)
        self._advance_high_watermark()
        return offset

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[tuple[int, int]]:
        """``(producer id, first offset)`` of the aborted transactions overlapping ``[fetch_offset, upper_bound)``."""
        return [(t.producer_id, t.first_offset) for t in self.log.collect_aborted_txns(fetch_offset, upper_bound)]

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """``(epoch, end offset)`` of ``leader_epoch`` in the local log (OffsetForLeaderEpoch)."""
        return self.log.leader_epoch_cache.end_offset_for(leader_epoch, self.log.log_end_offset)

    def become_leader(self) -> None:
        """Record the leader epoch as starting at the log end before anything is written in it, so
        OffsetForLeaderEpoch answers for it at once (Kafka's KAFKA-7415). An epoch older than the
        log's latest (a single broker, always at epoch 0, over a cluster's data) changes nothing."""
        if self.leader_epoch > self.log.leader_epoch_cache.latest_epoch:
            self.log.leader_epoch_cache.assign(self.leader_epoch, self.log.log_end_offset)

    def record_follower_fetch(self, replica: int, fetch_offset: int, now_ms: int) -> bool:
        """A follower fetched from ``fetch_offset`` (so it has everything below it); whether the high
        watermark moved. KeyError when ``replica`` is not a follower of this partition. An offset past
        this log's end is not recorded: that follower's log is not this one's (its fetch answers
        OFFSET_OUT_OF_RANGE)."""
        follower = self._followers[replica]
        if fetch_offset > self.log.log_end_offset:
            return False
        with self._lock:
            follower.log_end_offset = fetch_offset
            if fetch_offset >= self.log.log_end_offset:
                follower.last_caught_up_ms = now_ms
        return self._advance_high_watermark()

    def _advance_high_watermark(self) -> bool:
        """Move the high watermark up to the smallest log end offset in the ISR; whether it moved."""
        if not self.is_leader:
            return False
        with self._lock:
            ends = [self.log.log_end_offset]
            ends += [self._followers[r].log_end_offset for r in self.state.isr if r in self._followers]
            if min(ends) <= self._high_watermark:
                return False
            self._high_watermark = min(ends)
            return True

    def lagging_in_sync(self, now_ms: int, lag_ms: int) -> list[int]:
        """The in-sync followers not caught up to the leader's log end within ``lag_ms``."""
        with self._lock:
            return [
                r
                for r in self.state.isr
                if r in self._followers and now_ms - self._followers[r].last_caught_up_ms > lag_ms
            ]

    def caught_up_out_of_sync(self) -> list[int]:
        """The followers out of the ISR whose log has reached the high watermark: they may rejoin."""
        with self._lock:
            return [
                r
                for r, follower in self._followers.items()
                if r not in self.state.isr and follower.log_end_offset >= self._high_watermark
            ]

    # -- a follower ----------------------------------------------------------------------

    def truncation_for(self, leader_epoch: int, leader_end_offset: int) -> Truncation:
        """Where this follower cuts its log given the leader's OffsetForLeaderEpoch answer
        ``(leader_epoch, leader_end_offset)`` for its latest epoch (see
        ``LeaderEpochFileCache.truncation_for``); ``(-1, -1)`` when it has no epoch to ask about,
        which cuts at the high watermark."""
        return self.log.leader_epoch_cache.truncation_for(
            leader_epoch, leader_end_offset, self.log.log_end_offset, self.high_watermark
        )

    def truncate(self, offset: int) -> None:
        """Cut the log at ``offset`` (what the leader does not have) and start fetching: the high
        watermark never stays past the log end. Raises LogStorageError."""
        if offset < self.log.log_end_offset:
            _log.info(
                "%s-%d follows broker %d at epoch %d: truncating %d record(s) from offset %d%s",
                self.topic,
                self.index,
                self.state.leader,
                self.leader_epoch,
                self.log.log_end_offset - offset,
                offset,
                " (below its high watermark)" if offset < self._high_watermark else "",
            )
        self.log.truncate_to(offset)
        with self._lock:
            self._high_watermark = min(self._high_watermark, self.log.log_end_offset)
        self.needs_truncation = False

    def start_at(self, offset: int) -> None:
        """Empty the log to start at ``offset``: the leader's log starts past this one's end."""
        _log.info(
            "%s-%d: the leader's log starts at %d, past this log's end: restarting there",
            self.topic,
            self.index,
            offset,
        )
        self.log.truncate_fully_and_start_at(offset)
        with self._lock:
            self._high_watermark = offset
        self.needs_truncation = False

    def append_as_follower(self, records, leader_high_watermark: int, leader_log_start: int) -> int:
        """Append the leader's batches as they are, take its high watermark and its log start (as
        far as this log goes); the new log end offset. An empty log whose end falls inside the
        first batch (the leader's log start, after DeleteRecords, can be mid-batch) restarts at
        that batch, as Kafka's followers do."""
        end = self.log.log_end_offset
        if end == self.log.log_start_offset:
            first = _first_batch(records)
            if first is not None and first.base_offset < end <= first.base_offset + first.last_offset_delta:
                self.log.truncate_fully_and_start_at(first.base_offset)
        end = self.log.append_as_follower(records)
        if leader_log_start > self.log.log_start_offset:
            self.log.delete_records_before(min(leader_log_start, end))
        with self._lock:
            self._high_watermark = max(self._high_watermark, min(leader_high_watermark, end))
        return end

    # -- reads ---------------------------------------------------------------------------

    def read(
        self,
        offset: int,
        max_bytes: int,
        min_one_batch: bool,
        max_offset: int | None = None,
        committed_only: bool = True,
    ):
        """Batches from the one holding ``offset`` (see ``PartitionLog.read``): below the high watermark
        for consumers, up to the log end for followers (``committed_only`` False), and below
        ``max_offset`` if given (the last stable offset of a read_committed fetch)."""
        limit = self.high_watermark if committed_only else None
        if max_offset is not None:
            limit = max_offset if limit is None else min(limit, max_offset)
        return self.log.read(offset, max_bytes, min_one_batch=min_one_batch, max_offset=limit)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        found = self.log.offset_for_timestamp(timestamp)
        return None if found is None or found[0] >= self.high_watermark else found

    def delete_records_before(self, offset: int) -> int:
        """Move the log start up to ``offset``, at most the high watermark (Kafka's DeleteRecords);
        the new log start offset."""
        high_watermark = self.high_watermark
        if not 0 <= offset <= high_watermark:
            raise OffsetOutOfRangeError(self.log.name, offset, self.log_start_offset, high_watermark)
        return self.log.delete_records_before(offset)

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.index}, leader {self.state.leader}, epoch {self.leader_epoch})"
