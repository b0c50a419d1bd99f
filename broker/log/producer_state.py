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

The state survives restarts through Kafka's ``<offset>.snapshot`` files (version 1: INT16
version, UINT32 CRC-32C of the entries, then one entry per producer with its last batch),
written at roll and at clean shutdown; after loading the newest usable snapshot, the batch
headers from its offset to the log end are replayed.
"""

import collections
import os
import struct
from collections.abc import Callable, Iterable
from typing import NamedTuple

from broker.common.files import write_atomically
from broker.records.batch import NO_PRODUCER_ID, BatchHeader
from broker.records.crc import crc32c

from .errors import InvalidProducerEpochError, OutOfOrderSequenceError

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


class ProducerEntry:
    __slots__ = ("epoch", "batches", "last_timestamp")

    def __init__(self, epoch: int, last_timestamp: int):
        self.epoch = epoch
        self.batches: collections.deque[CachedBatch] = collections.deque(maxlen=CACHED_BATCHES)
        self.last_timestamp = last_timestamp

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1


class ProducerState:
    """The producers of one partition log, keyed by producer id."""

    def __init__(self, directory: str):
        self.directory = directory
        self.producers: dict[int, ProducerEntry] = {}

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

    def update(self, header: BatchHeader, first_offset: int) -> None:
        """Remember a batch that was just appended at ``first_offset``."""
        if header.producer_id == NO_PRODUCER_ID:
            return
        entry = self.producers.get(header.producer_id)
        if header.is_control:  # a marker of a newer epoch (a fenced producer's abort) fences the older one
            if entry is None or header.producer_epoch > entry.epoch:
                self.producers[header.producer_id] = ProducerEntry(header.producer_epoch, header.max_timestamp)
            return
        if entry is None or header.producer_epoch != entry.epoch:
            entry = self.producers[header.producer_id] = ProducerEntry(header.producer_epoch, header.max_timestamp)
        entry.batches.append(
            CachedBatch(
                header.base_sequence, header.last_sequence, first_offset, first_offset + header.last_offset_delta
            )
        )
        entry.last_timestamp = max(entry.last_timestamp, header.max_timestamp)

    def remove_before(self, offset: int) -> None:
        """Forget producers whose last batch is below ``offset`` (deleted by retention), and older snapshots."""
        for producer_id in [p for p, e in self.producers.items() if e.batches and e.batches[-1].last_offset < offset]:
            del self.producers[producer_id]
        for snapshot_offset in self.snapshot_offsets():
            if snapshot_offset < offset:
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
                -1,
                -1,
            )
            for producer_id, entry in self.producers.items()
            if entry.batches
            for last in (entry.batches[-1],)
        )
        count = struct.pack(">i", len(entries) // _SNAPSHOT_ENTRY.size)
        body = count + entries
        data = struct.pack(">hI", _SNAPSHOT_VERSION, crc32c(body)) + body
        write_atomically(self._snapshot_path(offset), data)

    def load(
        self, log_end_offset: int, replay: Callable[[int], Iterable[BatchHeader]], clean_shutdown: bool = False
    ) -> None:
        """Load the newest snapshot at or below the log end (dropping newer or corrupt ones), then
        ``replay(from_offset)`` must yield the headers of the batches from that offset on.

        After a clean shutdown nothing is replayed: the log was closed with a snapshot at its end
        if it had any producer, so without one it had none (and a large log is not read through)."""
        start = 0
        for offset in reversed(self.snapshot_offsets()):
            path = self._snapshot_path(offset)
            if offset > log_end_offset or not self._read_snapshot(path):
                os.unlink(path)
                continue
            start = offset
            break
        if clean_shutdown and start != log_end_offset:
            self.producers.clear()
            return
        for header in replay(start):
            self.update(header, header.base_offset)

    def _read_snapshot(self, path: str) -> bool:
        with open(path, "rb") as f:
            data = f.read()
        if len(data) < _SNAPSHOT_HEADER.size:
            return False
        version, crc, count = _SNAPSHOT_HEADER.unpack_from(data)
        body = data[6:]
        if version != _SNAPSHOT_VERSION or crc32c(body) != crc or len(body) != 4 + count * _SNAPSHOT_ENTRY.size:
            return False
        self.producers.clear()
        for producer_id, epoch, last_sequence, last_offset, delta, timestamp, _, _ in _SNAPSHOT_ENTRY.iter_unpack(
            body[4:]
        ):
            entry = self.producers[producer_id] = ProducerEntry(epoch, timestamp)
            entry.batches.append(CachedBatch(last_sequence - delta, last_sequence, last_offset - delta, last_offset))
        return True
