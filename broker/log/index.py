"""The sparse per-segment indexes: ``.index`` (offset -> position) and ``.timeindex`` (time -> offset).

Both are Kafka's formats: fixed-size big-endian entries, offsets stored relative to the segment's
base offset. As in Kafka, lookups binary-search the files memory-mapped, so the page cache holds
them (and may evict them) and memory does not grow with the log; entries are written with pwrite
through the same page cache. A file is opened and mapped on first use and let go when idle
(``open_files``).

The index of the segment being appended to is preallocated as Kafka does: its file is
``segment.index.bytes`` long, entries first and zeros after, and it is trimmed to its entries
when the segment rolls or closes. Disk blocks for the next entries are reserved (fallocate)
before the log bytes they describe are written, so an index write cannot meet a full disk once a
batch is in the ``.log``. After a crash, the zero-filled tail is not counted as entries. A file
that fails the sanity check on load is reported as corrupt, and the segment rebuilds it.
"""

import bisect
import errno
import mmap
import operator
import os
import struct
import threading
from array import array
from collections.abc import Callable
from typing import BinaryIO

from .errors import CorruptIndexError
from .open_files import OPEN_FILES

RELATIVE_OFFSET_MAX = 2**31 - 1
_RESERVE_BYTES = 64 * 1024  # disk blocks reserved ahead of the entries at a time
_BLOCK = 64  # entries per block: the summary of an open index holds every 64th entry

Entry = tuple[int, int]  # an index entry's two fields


class _SparseIndex:
    """Shared mechanics: a mapped file of fixed-size entries in order, zeros after the last."""

    ENTRY: struct.Struct
    _ORDERS: tuple[Callable[[int, int], bool], Callable[[int, int], bool]]  # each field against the one before
    _fields: str  # the struct codes of one entry's fields
    _block_format: struct.Struct  # _BLOCK entries

    def __init__(self, path: str, base_offset: int, max_index_bytes: int):
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self.ENTRY.size)
        try:
            self._length_at_open = os.stat(path).st_size
            self.was_missing = False
        except FileNotFoundError:
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o644))
            self._length_at_open = 0
            self.was_missing = True
        self._entries = 0
        self._last: Entry | None = None  # the last entry as stored (relative offsets)
        self._open_file: BinaryIO | None = None
        self._map: mmap.mmap | None = None
        self._summary: tuple[array[int], array[int]] | None = None  # every _BLOCK-th entry, while the file is open
        self._summary_lock = threading.Lock()
        self._reserved = 0  # bytes at the start of the file known to have disk blocks

    def __len__(self) -> int:
        return self._entries

    @property
    def is_full(self) -> bool:
        return self._entries >= self.max_entries

    def has_room(self, count: int) -> bool:
        return self._entries + count <= self.max_entries

    @property
    def size_in_bytes(self) -> int:
        return self._entries * self.ENTRY.size

    @property
    def _max_bytes(self) -> int:
        return self.max_entries * self.ENTRY.size

    # -- the open file and the mapping -------------------------------------------------

    def _file(self) -> BinaryIO:
        """The open index file (opened again if it was released); hold it while using its descriptor."""
        opened = self._open_file
        if opened is None:
            opened = self._open_file = open(self.path, "r+b", buffering=0)
        OPEN_FILES.used(self)
        return opened

    def _mapping(self, min_length: int = 0) -> mmap.mmap | None:
        """The file mapped read-only, whole and at least ``min_length`` long (None while it is empty).

        Entries are written with pwrite, through the same page cache: writing into a mapping made
        each first touch of a page a page fault that waits on the filesystem's journal."""
        mapped = self._map
        if mapped is None or len(mapped) < min_length:
            mapped = self._map = _map_whole(self._file())
        OPEN_FILES.used(self)
        return mapped

    def release(self) -> None:
        """Let go of the file, the mapping and the summary (readers still using them keep them until
        they finish)."""
        self._open_file = None
        self._map = None
        self._summary = None
        self._summary = None

    # -- loading -------------------------------------------------------------------------

    def load(self) -> None:
        """Count the entries and check them; raise CorruptIndexError if they fail the sanity check."""
        if self._length_at_open == 0:
            return  # an empty index is not opened at all (most of them, with many small partitions)
        mapped = self._mapping()
        size = self.ENTRY.size
        length = len(mapped) if mapped is not None else 0
        if length % size:
            raise CorruptIndexError(f"{self.path}: length {length} is not a multiple of {size}")
        count = entries_before_zero_tail(mapped, length // size, size) if mapped is not None else 0
        if count and mapped is not None:
            self._check_first(*self._from_entry(*self.ENTRY.unpack_from(mapped, 0)))
            self._check_order(mapped, count)
        self._summary = None
        self._entries = count
        self._last = self.ENTRY.unpack_from(mapped, (count - 1) * size) if count and mapped is not None else None
        self._reserved = count * size

    def _check_order(self, mapped: mmap.mmap, count: int) -> None:
        """Raise CorruptIndexError unless both fields of the entries are in order (``_ORDERS``),
        checked a block at a time with C-level comparisons."""
        width = len(self._fields)
        previous: tuple[int, ...] | None = None
        for first in range(0, count, _BLOCK):
            entries = min(_BLOCK, count - first)
            block_format = self._block_format if entries == _BLOCK else struct.Struct(">" + self._fields * entries)
            values = block_format.unpack_from(mapped, first * self.ENTRY.size)
            for field, in_order in enumerate(self._ORDERS):
                column = values[field::width]
                if previous is not None:
                    column = (previous[field],) + column
                if not all(map(in_order, column, column[1:])):
                    raise CorruptIndexError(f"{self.path}: entries {first} to {first + entries - 1} are not in order")
            previous = values[-width:]

    # -- writing -------------------------------------------------------------------------

    def reserve(self, count: int) -> None:
        """Make sure the next ``count`` entries have disk blocks (OSError, e.g. ENOSPC, if not)."""
        needed = (self._entries + count) * self.ENTRY.size
        if needed <= self._reserved:
            return
        end = min(self._max_bytes, max(needed, self._reserved + _RESERVE_BYTES))
        fd = self._file().fileno()
        if os.fstat(fd).st_size < self._max_bytes:
            os.ftruncate(fd, self._max_bytes)  # the preallocated length; the blocks come below
        try:
            os.posix_fallocate(fd, self._reserved, end - self._reserved)
        except OSError as exc:
            if exc.errno != errno.ENOSPC or end == needed:
                raise
            end = needed  # no room for a whole reserve: just these entries
            os.posix_fallocate(fd, self._reserved, end - self._reserved)
        self._reserved = end

    def _append(self, fields: Entry) -> None:
        self.reserve(1)
        os.pwrite(self._file().fileno(), self.ENTRY.pack(*fields), self._entries * self.ENTRY.size)
        self._last = fields
        self._entries += 1

    def truncate_entries(self, count: int) -> None:
        """Drop the entries from ``count`` on (undoing an append that failed)."""
        if count >= self._entries:
            return
        size = self.ENTRY.size
        end = self._entries * size
        self._entries = count
        self._summary = None
        os.pwrite(self._file().fileno(), bytes(end - count * size), count * size)
        mapped = self._mapping(count * size)
        self._last = self.ENTRY.unpack_from(mapped, (count - 1) * size) if count and mapped is not None else None

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self._map = None
        self._summary = None
        self._entries = 0
        self._last = None
        self._reserved = 0
        os.ftruncate(self._file().fileno(), 0)

    def trim(self) -> None:
        """Cut the preallocated zeros off the file (on roll and on close)."""
        self._map = None  # readers never touch bytes past the entries, which stay
        os.ftruncate(self._file().fileno(), self.size_in_bytes)
        self._reserved = self.size_in_bytes

    # -- lookups -------------------------------------------------------------------------

    def _floor(self, key: int, field: int) -> tuple[int, mmap.mmap | None]:
        """``(i, mapping)``: i is the last entry whose ``field`` (as stored) is <= ``key``, or -1.

        A bisection of the summary (every ``_BLOCK``-th entry, in memory while the file is open)
        finds the block, and one unpack of the block's entries finishes the search."""
        count = self._entries
        if count == 0:
            return -1, None
        size = self.ENTRY.size
        mapped = self._mapping(count * size)
        if mapped is None:
            return -1, None
        block = bisect.bisect_right(self._summary_of(mapped, count)[field], key) - 1
        if block < 0:
            return -1, mapped
        first = block * _BLOCK
        entries = min(_BLOCK, count - first)
        block_format = self._block_format if entries == _BLOCK else struct.Struct(">" + self._fields * entries)
        column = block_format.unpack_from(mapped, first * size)[field :: len(self._fields)]
        return first + bisect.bisect_right(column, key) - 1, mapped

    def _summary_of(self, mapped: mmap.mmap, count: int) -> "tuple[array[int], array[int]]":
        """``(first fields, second fields)`` of every ``_BLOCK``-th entry below ``count``, extended
        as entries are appended."""
        with self._summary_lock:
            summary = self._summary
            if summary is None:
                summary = self._summary = (array("q"), array("q"))
            keys, values = summary
            for i in range(len(keys) * _BLOCK, count, _BLOCK):
                key, value = self.ENTRY.unpack_from(mapped, i * self.ENTRY.size)
                keys.append(key)
                values.append(value)
        return summary

    # -- file lifecycle ------------------------------------------------------------------

    def flush(self) -> None:
        os.fsync(self._file().fileno())

    def close(self) -> None:
        """Trim the file and let go of it."""
        try:
            self.trim()
        finally:
            self.discard()

    def discard(self) -> None:
        """Let go of the file, without trimming it, until the next use (or for good: it is being deleted)."""
        self.release()
        OPEN_FILES.forget(self)

    def rename(self, new_path: str) -> None:
        os.rename(self.path, new_path)
        self.path = new_path

    def _from_entry(self, first: int, second: int) -> Entry:
        """An entry as stored -> as the index's users see it (relative offsets made absolute)."""
        raise NotImplementedError

    def _check_first(self, first: int, second: int) -> None:
        """Raise CorruptIndexError if the first entry (as users see it) is out of range."""
        raise NotImplementedError

    def _relative(self, offset: int) -> int:
        relative = offset - self.base_offset
        if not 0 <= relative <= RELATIVE_OFFSET_MAX:
            raise ValueError(f"offset {offset} does not fit an index based at {self.base_offset}")
        return relative


def entries_before_zero_tail(mapped: mmap.mmap | bytes, slots: int, size: int) -> int:
    """How many of the ``slots`` entries of ``size`` bytes in ``mapped`` come before the zero-filled
    tail of a preallocated file (entries are in increasing order, so no entry but the first can be
    all zeros, and the tail is found by bisection)."""
    zero = bytes(size)
    low, high = 0, slots
    while low < high:
        middle = (low + high) // 2
        if mapped[middle * size : (middle + 1) * size] == zero:
            high = middle
        else:
            low = middle + 1
    return low


class OffsetIndex(_SparseIndex):
    """``.index``: entries ``(relative offset INT32, position INT32)``.

    An entry maps the *last* offset of a batch to the file position where that batch starts.
    """

    ENTRY = struct.Struct(">ii")
    _ORDERS = (operator.lt, operator.lt)  # offsets and positions both increase
    _fields = "ii"
    _block_format = struct.Struct(">" + _fields * _BLOCK)

    def _to_entry(self, offset: int, position: int) -> Entry:
        return self._relative(offset), position

    def _from_entry(self, relative_offset: int, position: int) -> Entry:
        return self.base_offset + relative_offset, position

    def _check_first(self, offset: int, position: int) -> None:
        if offset < self.base_offset or position < 0:
            raise CorruptIndexError(f"{self.path}: entry 0 ({offset}, {position}) is out of range")

    def append(self, offset: int, position: int) -> None:
        if self._last is not None and offset - self.base_offset <= self._last[0]:
            raise ValueError(
                f"index entry for offset {offset} is not after the last one ({self.base_offset + self._last[0]})"
            )
        self._append(self._to_entry(offset, position))

    def lookup(self, offset: int) -> tuple[int, int]:
        """``(offset, position)`` of the last entry at or below ``offset``; the segment start if none."""
        i, mapped = self._floor(offset - self.base_offset, 0)
        if i < 0 or mapped is None:
            return self.base_offset, 0
        return self._from_entry(*self.ENTRY.unpack_from(mapped, i * self.ENTRY.size))

    def floor_position(self, position: int) -> int:
        """The largest indexed batch position at or below ``position`` (0 if none)."""
        i, mapped = self._floor(position, 1)
        if i < 0 or mapped is None:
            return 0
        position_found: int = self.ENTRY.unpack_from(mapped, i * self.ENTRY.size)[1]
        return position_found

    @property
    def last_position(self) -> int:
        return self._last[1] if self._last is not None else 0


class TimeIndex(_SparseIndex):
    """``.timeindex``: entries ``(timestamp INT64, relative offset INT32)``, timestamps increasing.

    An entry says: the largest timestamp seen up to and including ``offset`` is ``timestamp``.
    """

    ENTRY = struct.Struct(">qi")
    _ORDERS = (operator.lt, operator.le)  # timestamps increase, offsets never go back
    _fields = "qi"
    _block_format = struct.Struct(">" + _fields * _BLOCK)

    def _to_entry(self, timestamp: int, offset: int) -> Entry:
        return timestamp, self._relative(offset)

    def _from_entry(self, timestamp: int, relative_offset: int) -> Entry:
        return timestamp, self.base_offset + relative_offset

    def _check_first(self, timestamp: int, offset: int) -> None:
        if offset < self.base_offset:
            raise CorruptIndexError(f"{self.path}: entry 0 points below the base offset")

    def would_append(self, timestamp: int) -> bool:
        return timestamp >= 0 and (self._last is None or timestamp > self._last[0])

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Append ``(timestamp, offset)`` if the timestamp is larger than the last entry's."""
        if self.would_append(timestamp):
            self._append(self._to_entry(timestamp, offset))

    def lookup(self, timestamp: int) -> int:
        """The offset to start searching from for the first record with a timestamp >= ``timestamp``."""
        i, mapped = self._floor(timestamp, 0)
        if i < 0 or mapped is None:
            return self.base_offset
        return self._from_entry(*self.ENTRY.unpack_from(mapped, i * self.ENTRY.size))[1]

    @property
    def last_entry(self) -> tuple[int, int] | None:
        return self._from_entry(*self._last) if self._last is not None else None


def _map_whole(index_file: BinaryIO) -> mmap.mmap | None:
    """The whole file mapped read-only (None while it is empty). A roll may trim the file between
    the size seen and the mapping (mmap then refuses a length past the end): look again."""
    while True:
        length = os.fstat(index_file.fileno()).st_size
        if not length:
            return None
        try:
            return mmap.mmap(index_file.fileno(), length, access=mmap.ACCESS_READ)
        except ValueError:  # shorter now: trimmed meanwhile
            if os.fstat(index_file.fileno()).st_size >= length:
                raise
