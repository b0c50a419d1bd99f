"""The sparse per-segment indexes: ``.index`` (offset -> position) and ``.timeindex`` (time -> offset).

Both are Kafka's formats: fixed-size big-endian entries, offsets stored relative to the segment's
base offset. Entries are kept in memory (arrays, binary-searched) and appended to the file as they
are added, so the file never holds anything but whole entries written in order. The files are
exactly as long as their entries (no preallocation). A file that fails the sanity check on load
is reported as corrupt, and the segment rebuilds it from its ``.log``.
"""

import bisect
import os
import struct
from array import array

from .errors import CorruptIndexError

RELATIVE_OFFSET_MAX = 2**31 - 1


class _SparseIndex:
    """Shared mechanics: an append-only file of fixed-size entries mirrored in two arrays."""

    ENTRY: struct.Struct

    def __init__(self, path: str, base_offset: int, max_index_bytes: int):
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self.ENTRY.size)
        self._keys = array("q")
        self._values = array("q")
        self.was_missing = not os.path.exists(path)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def is_full(self) -> bool:
        return len(self._keys) >= self.max_entries

    @property
    def size_in_bytes(self) -> int:
        return len(self._keys) * self.ENTRY.size

    def load(self) -> None:
        """Read the entries from the file; raise CorruptIndexError if they fail the sanity check."""
        data = os.pread(self._fd, os.fstat(self._fd).st_size, 0)
        if len(data) % self.ENTRY.size:
            raise CorruptIndexError(f"{self.path}: length {len(data)} is not a multiple of {self.ENTRY.size}")
        keys, values = array("q"), array("q")
        for fields in self.ENTRY.iter_unpack(data):
            key, value = self._from_entry(*fields)
            keys.append(key)
            values.append(value)
        self._check(keys, values)
        self._keys, self._values = keys, values

    def _append(self, key: int, value: int) -> None:
        entry = self.ENTRY.pack(*self._to_entry(key, value))
        os.pwrite(self._fd, entry, self.size_in_bytes)
        self._keys.append(key)
        self._values.append(value)

    def _floor(self, key: int) -> int:
        """Index of the last entry whose key is <= ``key``, or -1."""
        return bisect.bisect_right(self._keys, key) - 1

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        del self._keys[:]
        del self._values[:]
        os.ftruncate(self._fd, 0)

    def flush(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def rename(self, new_path: str) -> None:
        os.rename(self.path, new_path)
        self.path = new_path

    def _relative(self, offset: int) -> int:
        relative = offset - self.base_offset
        if not 0 <= relative <= RELATIVE_OFFSET_MAX:
            raise ValueError(f"offset {offset} does not fit an index based at {self.base_offset}")
        return relative


class OffsetIndex(_SparseIndex):
    """``.index``: entries ``(relative offset INT32, position INT32)``.

    An entry maps the *last* offset of a batch to the file position where that batch starts.
    """

    ENTRY = struct.Struct(">ii")

    def _to_entry(self, offset, position):
        return self._relative(offset), position

    def _from_entry(self, relative_offset, position):
        return self.base_offset + relative_offset, position

    def _check(self, offsets, positions):
        for i in range(len(offsets)):
            if offsets[i] < self.base_offset or positions[i] < 0:
                raise CorruptIndexError(f"{self.path}: entry {i} ({offsets[i]}, {positions[i]}) is out of range")
            if i and (offsets[i] <= offsets[i - 1] or positions[i] <= positions[i - 1]):
                raise CorruptIndexError(f"{self.path}: entry {i} is not after entry {i - 1}")

    def append(self, offset: int, position: int) -> None:
        if self._keys and offset <= self._keys[-1]:
            raise ValueError(f"index entry for offset {offset} is not after the last one ({self._keys[-1]})")
        self._append(offset, position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """``(offset, position)`` of the last entry at or below ``offset``; the segment start if none."""
        i = self._floor(offset)
        if i < 0:
            return self.base_offset, 0
        return self._keys[i], self._values[i]

    def floor_position(self, position: int) -> int:
        """The largest indexed batch position at or below ``position`` (0 if none)."""
        i = bisect.bisect_right(self._values, position) - 1
        return self._values[i] if i >= 0 else 0

    @property
    def last_position(self) -> int:
        return self._values[-1] if self._values else 0



class TimeIndex(_SparseIndex):
    """``.timeindex``: entries ``(timestamp INT64, relative offset INT32)``, timestamps increasing.

    An entry says: the largest timestamp seen up to and including ``offset`` is ``timestamp``.
    """

    ENTRY = struct.Struct(">qi")

    def _to_entry(self, timestamp, offset):
        return timestamp, self._relative(offset)

    def _from_entry(self, timestamp, relative_offset):
        return timestamp, self.base_offset + relative_offset

    def _check(self, timestamps, offsets):
        for i in range(len(timestamps)):
            if offsets[i] < self.base_offset:
                raise CorruptIndexError(f"{self.path}: entry {i} points below the base offset")
            if i and (timestamps[i] <= timestamps[i - 1] or offsets[i] < offsets[i - 1]):
                raise CorruptIndexError(f"{self.path}: entry {i} is not after entry {i - 1}")

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Append ``(timestamp, offset)`` if the timestamp is larger than the last entry's."""
        if timestamp < 0 or (self._keys and timestamp <= self._keys[-1]):
            return
        self._append(timestamp, offset)

    def lookup(self, timestamp: int) -> int:
        """The offset to start searching from for the first record with a timestamp >= ``timestamp``."""
        i = self._floor(timestamp)
        return self._values[i] if i >= 0 else self.base_offset

    @property
    def last_entry(self) -> tuple[int, int] | None:
        return (self._keys[-1], self._values[-1]) if self._keys else None
