"""Idempotent-producer state of one partition: sequence checks, duplicate detection, snapshots.

As in Kafka, for each producer id the partition remembers the epoch and the last five batches
(first and last sequence, first and last offset). An incoming batch from that producer is:

* a **duplicate** if its epoch and sequence range match a remembered batch: it is not appended
  again, and the producer is told the offsets it got the first time;
* **in order** if its first sequence follows the last one (wrapping at INT32_MAX), or is 0 for
  a new epoch; anything else is OUT_OF_ORDER_SEQUENCE_NUMBER;
* **accepted whatever its sequence** if the partition knows nothing of the producer (Kafka's
  ``ProducerAppendInfo.checkSequence``): its batches, and so its state, may have been deleted by
  retention while it kept producing, and refusing it would wedge it for good;
* **fenced** if its epoch is older than the remembered one (INVALID_PRODUCER_EPOCH).

Transactions (Kafka's ``ProducerAppendInfo``): a producer's first transactional batch opens its
transaction at that batch's first offset; a non-transactional batch while one is open is
INVALID_TXN_STATE. A transaction marker (a control batch the coordinator has written) closes it:
a marker from an older producer epoch is INVALID_PRODUCER_EPOCH, one from an older coordinator
epoch TRANSACTION_COORDINATOR_FENCED; a marker for a producer without data here completes nothing.
The open transactions give the partition its first unstable offset.

The state survives restarts through Kafka's ``<offset>.snapshot`` files (version 1: INT16
version, UINT32 CRC-32C of the entries, then one entry per producer with its last batch, its
coordinator epoch and the first offset of its open transaction), written at roll and at clean
shutdown; the partition log loads the newest usable one and replays the batches after it.
"""

import collections
import os
import struct
from typing import NamedTuple

from broker.common.files import write_atomically
from broker.records.batch import NO_PRODUCER_ID, BatchHeader, ControlType
from broker.records.crc import crc32c

from .errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)

SNAPSHOT_SUFFIX = ".snapshot"
CACHED_BATCHES = 5
_SNAPSHOT_VERSION = 1
_SNAPSHOT_HEADER = struct.Struct(">hIi")  # version, crc, entry count
_SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")
_INT32_MAX = 2**31 - 1


class CachedBatch(NamedTuple):
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int


class CompletedTxn(NamedTuple):
    """A transaction a marker closed: its first offset, the marker's offset, and how it ended."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


class ProducerEntry:
    __slots__ = ("epoch", "batches", "last_timestamp", "coordinator_epoch")

    def __init__(self, epoch: int, last_timestamp: int, coordinator_epoch: int = -1):
        self.epoch = epoch
        self.batches: collections.deque[CachedBatch] = collections.deque(maxlen=CACHED_BATCHES)
        self.last_timestamp = last_timestamp
        self.coordinator_epoch = coordinator_epoch

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1


class ProducerState:
    """The producers of one partition log, keyed by producer id."""

    def __init__(self, directory: str):
        self.directory = directory
        self.producers: dict[int, ProducerEntry] = {}
        self.open_txns: dict[int, int] = {}  # producer id -> first offset of its open transaction
        # the earliest of them, replaced whole on every change: readers take it without the log's lock
        self.first_unstable_offset: int | None = None

    def _set_open_txn(self, producer_id: int, first_offset: int | None) -> None:
        if first_offset is None:
            self.open_txns.pop(producer_id, None)
        else:
            self.open_txns[producer_id] = first_offset
        self.first_unstable_offset = min(self.open_txns.values(), default=None)

    def clear(self) -> None:
        """Forget every producer."""
        self.producers.clear()
        self.open_txns.clear()
        self.first_unstable_offset = None

    def check(self, header: BatchHeader) -> CachedBatch | None:
        """Check a batch before it is appended: return the remembered batch if it is a duplicate,
        None if it may be appended; raise OutOfOrderSequenceError or InvalidProducerEpochError."""
        if header.producer_id == NO_PRODUCER_ID:
            return None
        entry = self.producers.get(header.producer_id)
        if header.is_control:  # a transaction marker: no sequence, an epoch at least the producer's
            if entry is not None and header.producer_epoch < entry.epoch:
                raise InvalidProducerEpochError(
                    f"marker for producer {header.producer_id} epoch {header.producer_epoch} is older "
                    f"than the current epoch {entry.epoch}"
                )
            return None
        first, last = header.base_sequence, header.last_sequence
        if entry is None:
            return None  # any sequence: its state may be gone with its batches (retention, a re-created topic)
        if header.producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {header.producer_id} epoch {header.producer_epoch} is older "
                f"than the current epoch {entry.epoch}"
            )
        txn_first_offset = self.open_txns.get(header.producer_id)
        if header.producer_epoch == entry.epoch and txn_first_offset is not None and not header.is_transactional:
            raise InvalidTxnStateError(
                f"producer {header.producer_id} sent a non-transactional batch while its transaction "
                f"from offset {txn_first_offset} is open"
            )
        if header.producer_epoch > entry.epoch:
            if first != 0:
                raise OutOfOrderSequenceError(
                    f"producer {header.producer_id} starts epoch {header.producer_epoch} at sequence {first}, not 0"
                )
            return None
        for cached in entry.batches:
            if (cached.first_sequence, cached.last_sequence) == (first, last):
                return cached
        expected = 0 if entry.last_sequence == _INT32_MAX else entry.last_sequence + 1
        if first != expected:
            raise OutOfOrderSequenceError(f"producer {header.producer_id} sent sequence {first}, expected {expected}")
        return None

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Check a transaction marker before it is appended: InvalidProducerEpochError for an older
        producer epoch, TransactionCoordinatorFencedError for an older coordinator epoch."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"marker for producer {producer_id} has epoch {producer_epoch}, older than {entry.epoch}"
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"marker for producer {producer_id} comes from coordinator epoch {coordinator_epoch}, "
                f"older than {entry.coordinator_epoch}"
            )

    def complete_txn(
        self, header: BatchHeader, marker: ControlType, coordinator_epoch: int, offset: int
    ) -> CompletedTxn | None:
        """Apply a marker appended at ``offset``: the transaction it closes, if the producer had
        data in it here."""
        entry = self.producers.get(header.producer_id)
        first_offset = self.open_txns.get(header.producer_id)
        if entry is None or header.producer_epoch != entry.epoch:
            # a new epoch (a fenced producer's transaction aborted) forgets the old one's batches:
            # its next batch starts at sequence 0
            entry = self.producers[header.producer_id] = ProducerEntry(header.producer_epoch, header.max_timestamp)
        if first_offset is not None:
            self._set_open_txn(header.producer_id, None)
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = max(entry.last_timestamp, header.max_timestamp)
        if first_offset is None:
            return None
        return CompletedTxn(header.producer_id, first_offset, offset, marker == ControlType.ABORT)

    def update(self, header: BatchHeader, first_offset: int) -> None:
        """Remember a data batch that was just appended at ``first_offset``."""
        if header.producer_id == NO_PRODUCER_ID:
            return
        entry = self.producers.get(header.producer_id)
        if header.is_control:  # a marker of a newer epoch (a fenced producer's abort) fences the older one
            if entry is None or header.producer_epoch > entry.epoch:
                self.producers[header.producer_id] = ProducerEntry(header.producer_epoch, header.max_timestamp)
            return
        if entry is None or header.producer_epoch != entry.epoch:
            coordinator_epoch = entry.coordinator_epoch if entry is not None else -1
            entry = self.producers[header.producer_id] = ProducerEntry(
                header.producer_epoch, header.max_timestamp, coordinator_epoch
            )
        if header.is_transactional and header.producer_id not in self.open_txns:
            self._set_open_txn(header.producer_id, first_offset)
        entry.batches.append(
            CachedBatch(
                header.base_sequence, header.last_sequence, first_offset, first_offset + header.last_offset_delta
            )
        )
        entry.last_timestamp = max(entry.last_timestamp, header.max_timestamp)

    def remove_before(self, offset: int) -> None:
        """Forget producers whose last batch is below ``offset`` (deleted by retention) and that have
        no open transaction, and older snapshots."""
        for producer_id in [
            p
            for p, e in self.producers.items()
            if e.batches and e.batches[-1].last_offset < offset and p not in self.open_txns
        ]:
            del self.producers[producer_id]
        for snapshot_offset in self.snapshot_offsets():
            if snapshot_offset < offset:
                os.unlink(self._snapshot_path(snapshot_offset))

    def forget_all(self) -> None:
        """Forget every producer and delete every snapshot (the log was emptied)."""
        self.clear()
        for snapshot_offset in self.snapshot_offsets():
            os.unlink(self._snapshot_path(snapshot_offset))

    # -- snapshots -----------------------------------------------------------------------

    def _snapshot_path(self, offset: int) -> str:
        return os.path.join(self.directory, f"{offset:020d}{SNAPSHOT_SUFFIX}")

    def snapshot_offsets(self) -> list[int]:
        names = [n for n in os.listdir(self.directory) if n.endswith(SNAPSHOT_SUFFIX)]
        return sorted(int(n[: -len(SNAPSHOT_SUFFIX)]) for n in names if n[: -len(SNAPSHOT_SUFFIX)].isdigit())

    def write_snapshot(self, offset: int) -> None:
        entries = b"".join(
            _SNAPSHOT_ENTRY.pack(
                producer_id,
                entry.epoch,
                last.last_sequence,
                last.last_offset,
                last.last_offset - last.first_offset,
                entry.last_timestamp,
                entry.coordinator_epoch,
                self.open_txns.get(producer_id, -1),
            )
            for producer_id, entry in self.producers.items()
            for last in (entry.batches[-1] if entry.batches else CachedBatch(-1, -1, -1, -1),)
        )
        count = struct.pack(">i", len(entries) // _SNAPSHOT_ENTRY.size)
        body = count + entries
        data = struct.pack(">hI", _SNAPSHOT_VERSION, crc32c(body)) + body
        write_atomically(self._snapshot_path(offset), data)

    def load_snapshot(self, at_most: int, log_end_offset: int) -> int:
        """Load the newest usable snapshot at or below ``at_most``, deleting those past the log end
        or corrupt; return its offset (0, with no producers, if there is none). The caller replays
        the batches from there."""
        self.clear()
        for offset in reversed(self.snapshot_offsets()):
            path = self._snapshot_path(offset)
            if offset > at_most and offset <= log_end_offset:
                continue
            if offset > log_end_offset or not self._read_snapshot(path):
                os.unlink(path)
                continue
            return offset
        self.clear()
        return 0

    def _read_snapshot(self, path: str) -> bool:
        with open(path, "rb") as f:
            data = f.read()
        if len(data) < _SNAPSHOT_HEADER.size:
            return False
        version, crc, count = _SNAPSHOT_HEADER.unpack_from(data)
        body = data[6:]
        if version != _SNAPSHOT_VERSION or crc32c(body) != crc or len(body) != 4 + count * _SNAPSHOT_ENTRY.size:
            return False
        self.clear()
        for (
            producer_id,
            epoch,
            last_sequence,
            last_offset,
            delta,
            timestamp,
            coordinator_epoch,
            txn_first_offset,
        ) in _SNAPSHOT_ENTRY.iter_unpack(body[4:]):
            entry = self.producers[producer_id] = ProducerEntry(epoch, timestamp, coordinator_epoch)
            if last_offset >= 0:
                entry.batches.append(
                    CachedBatch(last_sequence - delta, last_sequence, last_offset - delta, last_offset)
                )
            if txn_first_offset >= 0:
                self._set_open_txn(producer_id, txn_first_offset)
        return True
