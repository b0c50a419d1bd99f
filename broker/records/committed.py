"""Which fetched entries a reader hands on, as Kafka's consumer decides (sans I/O).

Control batches (transaction markers) are never handed on. Under read_committed, the batches of
aborted transactions are not either: a Fetch response at isolation level 1 lists the aborted
transactions overlapping its records as ``(producer_id, first_offset)``; walking the entries in
offset order, a listed producer becomes *aborted* once an entry with a producer id reaches that
first offset, its transactional batches are dropped while it is, and its ABORT marker ends it.

A ``ReadFilter`` holds this state for one partition read consecutively, across fetches (feed each
response's list with ``add_aborted``, then every entry of its records, in order, to ``keeps``).
A reader that jumps forward (records deleted under it) starts a new filter.
"""

import heapq
import struct
from collections.abc import Iterable
from typing import NamedTuple

from . import batch
from .buffers import Bytes
from .errors import CorruptRecordError
from .record_set import EntryHeader

_CONTROL_KEY = struct.Struct(">hh")  # version, type


class AbortedTransaction(NamedTuple):
    """One entry of a Fetch response's ``aborted_transactions``."""

    producer_id: int
    first_offset: int


class ReadFilter:
    """Kafka's consumer-side filter for one partition: ``keeps(entry, header)`` says whether the data
    records of an entry are handed on. Entries must come in offset order, every one of them."""

    def __init__(self, read_committed: bool) -> None:
        self.read_committed = read_committed
        self._pending: list[tuple[int, int]] = []  # heap of (first_offset, producer_id), not reached yet
        self._aborting: set[int] = set()  # producers whose aborted transaction is being walked

    def add_aborted(self, aborted: Iterable[AbortedTransaction]) -> None:
        """Take in the aborted transactions a Fetch response lists (ignored under read_uncommitted)."""
        if self.read_committed:
            for producer_id, first_offset in aborted:
                heapq.heappush(self._pending, (first_offset, producer_id))

    def keeps(self, entry: Bytes, header: EntryHeader) -> bool:
        """Whether the records of ``entry`` (one complete entry, ``header`` its header) reach the
        reader; updates the state. Legacy entries always do, control batches never."""
        if not isinstance(header, batch.BatchHeader):
            return True
        if self.read_committed and header.producer_id != batch.NO_PRODUCER_ID:
            while self._pending and self._pending[0][0] <= header.last_offset:
                self._aborting.add(heapq.heappop(self._pending)[1])
            if header.is_control:
                if _is_abort_marker(entry):
                    self._aborting.discard(header.producer_id)
            elif header.is_transactional and header.producer_id in self._aborting:
                return False
        return not header.is_control


def _is_abort_marker(entry: Bytes) -> bool:
    """Whether a control batch's first record is an ABORT marker (other control types are not)."""
    records = batch.decode(entry, verify_crc=False).records
    if not records:
        return False
    key = records[0].key
    if key is None or len(key) < _CONTROL_KEY.size:
        raise CorruptRecordError(f"control record at offset {records[0].offset} has a key of {len(key or b'')} bytes")
    control_type: int = _CONTROL_KEY.unpack_from(key)[1]
    return control_type == batch.ControlType.ABORT
