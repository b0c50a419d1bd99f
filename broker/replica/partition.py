"""A partition as the server sees it (Kafka's ``Partition``): its state in the cluster (leader,
leader epoch, replicas, in-sync replicas) and, when this broker leads it, the local log.

Writes and reads go through the partition, which stamps appended batches with the leader epoch
and keeps the high watermark: the offset below which records are committed, that is stored by
every in-sync replica. Each partition has a single replica (``broker.cluster.placement``), so the
leader's log end is the high watermark: everything appended is committed.

The last stable offset is where read_committed readers stop: the first offset of the earliest
open transaction, never past the high watermark.
"""

from broker.cluster.metadata_cache import PartitionState
from broker.log.errors import OffsetOutOfRangeError
from broker.log.partition_log import AppendResult, PartitionLog


class Partition:
    def __init__(self, topic: str, index: int, state: PartitionState, log: PartitionLog):
        self.topic = topic
        self.index = index
        self.state = state
        self.log = log

    @property
    def leader_epoch(self) -> int:
        return self.state.leader_epoch

    @property
    def high_watermark(self) -> int:
        return self.log.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        high_watermark = self.high_watermark
        first_unstable = self.log.first_unstable_offset()
        return high_watermark if first_unstable is None else min(first_unstable, high_watermark)

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    def append_records(self, records) -> AppendResult:
        """Append a produced batch as the leader, stamped with the current leader epoch."""
        return self.log.append(records, leader_epoch=self.leader_epoch)

    def append_txn_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool) -> int:
        """Append a transaction marker as the leader (see ``PartitionLog.append_txn_marker``); its offset."""
        return self.log.append_txn_marker(producer_id, producer_epoch, coordinator_epoch, commit, self.leader_epoch)

    def read(self, offset: int, max_bytes: int, min_one_batch: bool, max_offset: int | None = None):
        """Committed batches from the one holding ``offset``, below ``max_offset`` if given (see
        ``PartitionLog.read``)."""
        return self.log.read(offset, max_bytes, min_one_batch=min_one_batch, max_offset=max_offset)

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

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        return self.log.offset_for_timestamp(timestamp)

    def delete_records_before(self, offset: int) -> int:
        """Move the log start up to ``offset``, at most the high watermark (Kafka's DeleteRecords);
        the new log start offset."""
        high_watermark = self.high_watermark
        if not 0 <= offset <= high_watermark:
            raise OffsetOutOfRangeError(self.log.name, offset, self.log_start_offset, high_watermark)
        return self.log.delete_records_before(offset)

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.index}, leader {self.state.leader}, epoch {self.leader_epoch})"
