"""The aborted-transaction index of one segment: Kafka's ``.txnindex`` file.

One fixed 34-byte big-endian entry per transaction aborted by a marker in the segment: version
INT16 (0), producer id INT64, first offset INT64 (the transaction's first batch), last offset
INT64 (the ABORT marker's offset) and last stable offset INT64 (the first offset of the earliest
transaction still open when the marker was written, else the marker's offset + 1). Entries come
in increasing last offset. The file is created by the first entry; a segment without aborted
transactions has none.

``load`` checks the file (whole entries, version 0, increasing last offsets inside the segment)
and raises CorruptIndexError otherwise: the partition log then rebuilds it from the log.
"""

import os
import struct
from typing import NamedTuple

from broker.common.files import fsync_directory

from .errors import CorruptIndexError

TXN_INDEX_SUFFIX = ".txnindex"
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size
_VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    """The ``.txnindex`` at ``path``; its entries are kept in memory (aborts are rare)."""

    def __init__(self, path: str):
        self.path = path
        self.entries: list[AbortedTxn] = []

    def load(self, base_offset: int, next_offset: int) -> None:
        """Read the file (none means no entries); CorruptIndexError if it is torn or inconsistent
        with a segment holding ``[base_offset, next_offset)``."""
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            self.entries = []
            return
        if len(data) % _ENTRY.size:
            raise CorruptIndexError(f"{self.path}: {len(data)} bytes is not a whole number of entries")
        entries = []
        previous = base_offset - 1
        for version, producer_id, first_offset, last_offset, last_stable in _ENTRY.iter_unpack(data):
            if version != _VERSION:
                raise CorruptIndexError(f"{self.path}: entry version {version}")
            if not previous < last_offset < next_offset or first_offset > last_offset:
                raise CorruptIndexError(f"{self.path}: entry ending at {last_offset} is out of order or place")
            entries.append(AbortedTxn(producer_id, first_offset, last_offset, last_stable))
            previous = last_offset
        self.entries = entries

    def append(self, txn: AbortedTxn) -> None:
        """Add an entry (its last offset above every other) and write it to the file."""
        if self.entries and txn.last_offset <= self.entries[-1].last_offset:
            raise ValueError(f"{self.path}: aborted transaction at {txn.last_offset} is not after the last entry")
        created = not os.path.exists(self.path)
        with open(self.path, "ab") as f:
            f.write(_ENTRY.pack(_VERSION, *txn))
        if created:
            fsync_directory(os.path.dirname(self.path))
        self.entries.append(txn)

    def truncate_from(self, offset: int) -> None:
        """Drop the entries whose marker is at or after ``offset`` (the log is rebuilt from there)."""
        kept = [txn for txn in self.entries if txn.last_offset < offset]
        if len(kept) == len(self.entries) and os.path.exists(self.path):
            return
        self.entries = kept
        if kept:
            with open(self.path, "wb") as f:
                f.write(b"".join(_ENTRY.pack(_VERSION, *txn) for txn in kept))
        else:
            self.delete()

    def flush(self) -> None:
        if os.path.exists(self.path):
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """The aborted transactions overlapping ``[fetch_offset, upper_bound)``, and whether the
        search is complete (an entry's last stable offset reached ``upper_bound``: no later
        segment can hold an overlapping one), as Kafka's ``collectAbortedTxns``."""
        found = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def rename(self, path: str) -> None:
        if os.path.exists(self.path):
            os.rename(self.path, path)
        self.path = path

    def delete(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def parse_entries(data: bytes) -> list[tuple[int, AbortedTxn]]:
    """``(version, entry)`` of every whole entry of ``.txnindex`` bytes, unchecked (dump-log)."""
    usable = len(data) - len(data) % _ENTRY.size
    return [(entry[0], AbortedTxn(*entry[1:])) for entry in _ENTRY.iter_unpack(data[:usable])]
