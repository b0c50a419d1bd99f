"""One log segment: a ``.log`` file of entries plus its ``.index``, ``.timeindex`` and ``.txnindex``.

Files are named by the 20-digit base offset. The segment appends whole batches at its end, keeps
the sparse indexes up to date (an entry once more than ``index.interval.bytes`` were appended
since the last one), finds the batch containing an offset or the first record at a timestamp,
and can rebuild its indexes (and drop a torn or corrupt tail) by scanning and checking its
``.log`` (``recover``). The ``.log`` let go while idle is fsynced first if it has unsynced writes
(``write_back``); a failure is the segment's ``write_back_error``. The ``.txnindex`` (aborted
transactions) is loaded and rebuilt by the partition log, which knows the producers' state.
"""

import os
from collections.abc import Sequence
from typing import BinaryIO

from broker.common.clock import Clock, wall_clock_ms
from broker.records import record_set
from broker.records.batch import NO_TIMESTAMP

from .errors import CorruptIndexError, InvalidEntryError, LogStorageError
from .file_records import EntryHeader, FileSlice, iter_headers, iter_valid_entries
from .index import RELATIVE_OFFSET_MAX, OffsetIndex, TimeIndex
from .open_files import OPEN_FILES
from .transaction_index import TXN_INDEX_SUFFIX, TransactionIndex
from .write_back import WriteBack

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"  # a segment the cleaner is writing
SWAP_SUFFIX = ".swap"  # a cleaned segment complete on disk, replacing the segments it was cleaned from
_IOV_MAX = os.sysconf("SC_IOV_MAX")  # buffers one pwritev takes

Buffer = bytes | bytearray | memoryview


def filename_prefix(offset: int) -> str:
    """Kafka's segment file name stem: the base offset zero-padded to 20 digits."""
    return f"{offset:020d}"


class LogSegment:
    """A segment of a partition log, starting at ``base_offset``."""

    def __init__(
        self,
        directory: str,
        base_offset: int,
        index_interval_bytes: int,
        max_index_bytes: int,
        suffix: str = "",
        clock: Clock = wall_clock_ms,
    ):
        """``suffix`` follows every file name (``.cleaned``, ``.swap``) for a segment not in a log yet;
        ``clock`` stamps ``created_ms`` (what ``segment.ms`` measures when records carry no timestamp)."""
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.suffix = suffix
        stem = os.path.join(directory, filename_prefix(base_offset))
        self.log_path = stem + LOG_SUFFIX + suffix
        # The file object owns the descriptor: slices handed to readers hold it too, so a deleted
        # or released segment's descriptor stays open (and is never reused) until the last reader
        # lets go. It is opened on first use and released when idle (open_files).
        self._file: BinaryIO | None = None
        self._closed = False
        self._write_back = WriteBack(self.log_path)
        # (next offset, size) as one value, so a reader on another thread sees both of one append
        self.end = (base_offset, os.fstat(self.file.fileno()).st_size)
        self.offset_index = OffsetIndex(stem + INDEX_SUFFIX + suffix, base_offset, max_index_bytes)
        self.time_index = TimeIndex(stem + TIME_INDEX_SUFFIX + suffix, base_offset, max_index_bytes)
        self.txn_index = TransactionIndex(stem + TXN_INDEX_SUFFIX + suffix)
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset
        self.first_batch_timestamp: int | None = None
        self.created_ms = clock()
        self._bytes_since_last_index_entry = 0

    @classmethod
    def create(
        cls,
        directory: str,
        base_offset: int,
        index_interval_bytes: int,
        max_index_bytes: int,
        suffix: str = "",
        clock: Clock = wall_clock_ms,
    ) -> "LogSegment":
        """A new, empty segment (any files left with this base offset are emptied)."""
        segment = cls(directory, base_offset, index_interval_bytes, max_index_bytes, suffix, clock)
        os.ftruncate(segment.file.fileno(), 0)
        segment.size = 0
        segment.offset_index.reset()
        segment.time_index.reset()
        segment.txn_index.delete()
        return segment

    def load(self) -> None:
        """Load the indexes and the state of an existing segment.

        Raises CorruptIndexError or InvalidEntryError when the indexes are missing entries, fail
        their sanity check, or do not match the ``.log``; ``recover`` then rebuilds them.
        """
        for index in (self.offset_index, self.time_index):
            if index.was_missing and self.size:
                raise CorruptIndexError(f"{index.path} is missing")
            index.load()
        self._load_state_from_tail()
        for index in (self.offset_index, self.time_index):
            index.discard()  # opened again by the first lookup or append that needs it

    # -- state ---------------------------------------------------------------------------

    @property
    def next_offset(self) -> int:
        return self.end[0]

    @next_offset.setter
    def next_offset(self, offset: int) -> None:
        self.end = (offset, self.end[1])

    @property
    def size(self) -> int:
        return self.end[1]

    @size.setter
    def size(self, size: int) -> None:
        self.end = (self.end[0], size)

    @property
    def file(self) -> BinaryIO:
        """The open ``.log`` file (opened again if it was released); hold it while using its descriptor."""
        opened = self._file
        if opened is None:
            if self._closed:
                raise LogStorageError(f"{self.log_path} is closed")
            try:
                opened = open(os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644), "r+b", buffering=0)
            except OSError as exc:
                raise LogStorageError(f"cannot open {self.log_path}: {exc.strerror or exc}") from exc
            self._file = opened
        OPEN_FILES.used(self)
        return opened

    def release(self) -> None:
        """Let go of the ``.log`` file (fsynced first if written since the last fsync); it closes
        once no reader holds it (open_files)."""
        self._write_back.release(self._file, self._drop_file)

    def _drop_file(self) -> None:
        self._file = None

    @property
    def write_back_error(self) -> LogStorageError | None:
        """The LogStorageError of a write-back that failed when the ``.log`` was let go, or None."""
        return self._write_back.error

    def _load_state_from_tail(self) -> None:
        """Recompute next offset and max timestamp from the last index entries and the bytes after them."""
        if self.offset_index.last_position > self.size:
            raise CorruptIndexError(f"{self.offset_index.path}: points past the end of {self.log_path}")
        last_entry = self.time_index.last_entry
        if last_entry is not None:
            self.max_timestamp, self.offset_of_max_timestamp = last_entry
        start = self.offset_index.last_position
        log_file = self.file
        for _, header in iter_headers(log_file.fileno(), start, self.size):
            self._observe(header)
            self.next_offset = header.last_offset + 1
        if self.size and self.next_offset == self.base_offset:
            raise CorruptIndexError(f"{self.offset_index.path}: no batch found after its last entry")
        if last_entry is not None and last_entry[1] >= self.next_offset:
            raise CorruptIndexError(f"{self.time_index.path}: points past the end of {self.log_path}")
        self._bytes_since_last_index_entry = self.size - start
        for _, header in iter_headers(log_file.fileno(), 0, self.size):
            self.first_batch_timestamp = header.max_timestamp
            break

    def _observe(self, header: EntryHeader) -> None:
        """Account for a batch now in the file: the largest timestamp and its offset."""
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.last_offset

    def _index(self, position: int, header: EntryHeader) -> None:
        """Add index entries for the batch at ``position`` if enough bytes passed since the last."""
        self._observe(header)
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(header.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += header.size

    @property
    def largest_timestamp(self) -> int:
        """The largest record timestamp, or the file's modification time if no record has one."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return int(os.stat(self.log_path).st_mtime * 1000)

    # -- writing -------------------------------------------------------------------------

    def has_index_room(self, batch_count: int) -> bool:
        return self.offset_index.has_room(batch_count) and self.time_index.has_room(batch_count)

    def append(self, batches: Sequence[tuple[EntryHeader, Sequence[Buffer]]]) -> None:
        """Write ``(header, buffers)`` batches (offsets assigned) at the end of the file, as one unit.

        The ``.log`` bytes, the index entries, the next offset and the size all change, or none
        does: disk blocks for the index entries are reserved first, and on any failure the file
        and the indexes are cut back to where they were and LogStorageError is raised. Readers see
        the new batches only once all of it is done (the next offset and the size move last, together).
        """
        position = self.size
        total = sum(header.size for header, _ in batches)
        before = (
            self.max_timestamp,
            self.offset_of_max_timestamp,
            self.first_batch_timestamp,
            self._bytes_since_last_index_entry,
            len(self.offset_index),
            len(self.time_index),
        )
        if self.write_back_error is not None:
            raise self.write_back_error
        try:
            self.offset_index.reserve(len(batches))
            self.time_index.reserve(len(batches))
            with self._write_back.writing():
                _write_all(self.file.fileno(), [buf for _, buffers in batches for buf in buffers], position, total)
            at = position
            for header, _ in batches:
                if self.first_batch_timestamp is None:
                    self.first_batch_timestamp = header.max_timestamp
                self._index(at, header)
                at += header.size
        except (OSError, LogStorageError) as exc:
            self._undo_append(position, before)
            reason = exc.strerror or exc if isinstance(exc, OSError) else exc
            raise LogStorageError(f"cannot append to {self.log_path}: {reason}") from exc
        self.end = (batches[-1][0].last_offset + 1, position + total)

    def _undo_append(self, position: int, before: tuple[int, int, int | None, int, int, int]) -> None:
        (
            self.max_timestamp,
            self.offset_of_max_timestamp,
            self.first_batch_timestamp,
            self._bytes_since_last_index_entry,
            offset_entries,
            time_entries,
        ) = before
        self.offset_index.truncate_entries(offset_entries)
        self.time_index.truncate_entries(time_entries)
        try:
            os.truncate(self.log_path, position)
        except OSError:
            pass  # the next recovery truncates the partial entry at the same place

    def should_roll(
        self,
        batch_size: int,
        max_timestamp: int,
        max_offset: int,
        now_ms: int,
        segment_bytes: int,
        roll_ms: int,
        batch_count: int = 1,
    ) -> bool:
        """Kafka's roll rule: full file, full index, offset out of int32 range, or aged past roll_ms."""
        if self.size == 0:
            return False
        if self.size > segment_bytes - batch_size:
            return True
        if not self.has_index_room(batch_count):
            return True
        if max_offset - self.base_offset > RELATIVE_OFFSET_MAX:
            return True
        if self.first_batch_timestamp is not None and self.first_batch_timestamp >= 0:
            waited = max_timestamp - self.first_batch_timestamp
        else:
            waited = now_ms - self.created_ms
        return waited > roll_ms

    def on_become_inactive(self) -> None:
        """Called when a newer segment takes over: make the time index end with the max timestamp,
        and trim the preallocated indexes to their entries. (A full time index goes without: the
        max timestamp is also found from the ``.log`` when the segment is loaded.)"""
        if self.time_index.has_room(1):
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.offset_index.trim()
        self.time_index.trim()

    # -- reading -------------------------------------------------------------------------

    def translate_offset(self, offset: int, max_position: int | None = None) -> tuple[int, EntryHeader] | None:
        """``(position, header)`` of the first batch whose last offset is >= ``offset``, or None."""
        end = self.size if max_position is None else min(max_position, self.size)
        _, start = self.offset_index.lookup(offset)
        log_file = self.file
        for position, header in iter_headers(log_file.fileno(), start, end):
            if header.last_offset >= offset:
                return position, header
        return None

    def read(
        self, offset: int, max_bytes: int, max_position: int | None = None, min_one_batch: bool = True
    ) -> FileSlice | None:
        """Whole batches from the one containing ``offset``: at most ``max_bytes`` but at least one
        batch when ``min_one_batch``, never past ``max_position``. None if nothing is there."""
        end = self.size if max_position is None else min(max_position, self.size)
        found = self.translate_offset(offset, end)
        if found is None:
            return None
        start, first = found
        limit = min(end, start + max_bytes)
        if min_one_batch:
            limit = max(limit, start + first.size)
        if start + first.size > limit:
            return None
        log_file = self.file
        stop = start + first.size
        if stop < limit:
            # every batch before an indexed position at or below the limit ends within the limit
            stop = max(stop, self.offset_index.floor_position(limit))
            for position, header in iter_headers(log_file.fileno(), stop, end):
                if position + header.size > limit:
                    break
                stop = position + header.size
        return FileSlice(log_file, start, stop - start)

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with timestamp >= ``timestamp`` (and offset >=
        ``starting_offset``), or None."""
        search_from = max(self.time_index.lookup(timestamp), starting_offset)
        _, start = self.offset_index.lookup(search_from)
        log_file = self.file
        for position, header in iter_headers(log_file.fileno(), start, self.size):
            if header.max_timestamp < timestamp:
                continue
            entry = os.pread(log_file.fileno(), header.size, position)
            for record in record_set.decode_entry(entry, verify_crc=False).records:
                if record.timestamp >= timestamp and record.offset >= starting_offset:
                    return record.offset, record.timestamp
        return None

    # -- recovery ---------------------------------------------------------

    def recover(self) -> int:
        """Rebuild the indexes by checking every entry; cut the file at the first invalid one.

        Returns the number of bytes truncated (0 if the whole file was valid).
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.next_offset = self.base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = self.base_offset
        self.first_batch_timestamp = None
        self._bytes_since_last_index_entry = 0
        log_file = self.file
        file_size = os.fstat(log_file.fileno()).st_size
        valid = 0
        try:
            for position, header, _ in iter_valid_entries(log_file.fileno(), 0, file_size):
                if header.last_offset < self.next_offset or header.last_offset - self.base_offset > RELATIVE_OFFSET_MAX:
                    raise InvalidEntryError(position, f"offset {header.last_offset} does not belong here")
                if self.first_batch_timestamp is None:
                    self.first_batch_timestamp = header.max_timestamp
                self._index(position, header)
                self.next_offset = header.last_offset + 1
                valid = position + header.size
        except InvalidEntryError:
            pass
        self.size = valid
        if valid < file_size:
            os.ftruncate(log_file.fileno(), valid)
        return file_size - valid

    def truncate_to(self, offset: int) -> None:
        """Cut the file before the batch holding ``offset`` (keeping the batches that end below it),
        then rebuild the indexes from what is left. Nothing to do if no batch ends at or after it.
        A crash between the two steps leaves indexes pointing past the file, which loading detects."""
        found = self.translate_offset(offset)
        if found is None:
            return
        os.ftruncate(self.file.fileno(), found[0])
        self.recover()

    # -- file lifecycle ------------------------------------------------------------------

    def flush(self) -> None:
        if self._closed:
            return
        self._write_back.fsync(self.file)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        """Trim the indexes and close the files; slices still held by readers fail cleanly (closed
        file) from then on, and the segment cannot be used again."""
        try:
            self.offset_index.close()
        finally:
            self.time_index.close()
            self.discard()

    def discard(self) -> None:
        """Close the files without trimming anything (the log is being deleted: a reader still
        streaming from it is cut off rather than keep its space in use)."""
        log_file = self._let_go()
        if log_file is not None:
            log_file.close()

    def _let_go(self) -> BinaryIO | None:
        """Stop using the files for good; return the ``.log`` file object, if open."""
        self._closed = True
        log_file, self._file = self._file, None
        OPEN_FILES.forget(self)
        self.offset_index.discard()
        self.time_index.discard()
        return log_file

    def rename_for_deletion(self) -> None:
        """Add ``.deleted`` to every file name (the first step of an asynchronous delete)."""
        self.change_suffix(self.suffix + DELETED_SUFFIX)

    def change_suffix(self, suffix: str) -> None:
        """Rename every file from the current suffix to ``suffix``, the ``.log`` last (the loader
        goes by the ``.log``: once it is renamed, the indexes are too). The files stay open."""
        for index in (self.offset_index, self.time_index):
            if os.path.exists(index.path):
                index.rename(index.path[: len(index.path) - len(self.suffix)] + suffix)
        self.txn_index.rename(self.txn_index.path[: len(self.txn_index.path) - len(self.suffix)] + suffix)
        new_log_path = self.log_path[: len(self.log_path) - len(self.suffix)] + suffix
        os.rename(self.log_path, new_log_path)
        self.log_path = new_log_path
        self.suffix = suffix

    def delete(self) -> None:
        """Remove the files. The ``.log`` stays open for readers holding slices of it; it is closed
        when the last reference to it goes."""
        self._let_go()
        for path in (self.log_path, self.offset_index.path, self.time_index.path, self.txn_index.path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, next_offset={self.next_offset})"


def _write_all(fd: int, buffers: Sequence[Buffer], position: int, total: int) -> None:
    """Write ``total`` bytes of ``buffers`` at ``position``, going on after short writes."""
    written = 0
    while written < total:
        n = os.pwritev(fd, buffers[:_IOV_MAX], position + written)
        if n == 0:
            raise OSError("write returned 0 bytes")
        written += n
        buffers = _skip(buffers, n)


def _skip(buffers: Sequence[Buffer], count: int) -> list[memoryview]:
    """The buffers left to write after ``count`` bytes were written."""
    out = []
    for buf in buffers:
        view = memoryview(buf)
        if count >= len(view):
            count -= len(view)
            continue
        out.append(view[count:])
        count = 0
    return out
