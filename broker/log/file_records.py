"""Walking the entries of a ``.log`` file by position, without loading the file into memory.

``iter_headers`` parses only headers (for offset and time lookups); ``iter_entries`` also reads
every entry whole (for dump-log); ``iter_valid_entries`` checks each one's CRC too (for recovery).
They read the file in chunks that start small (for lookups) and double up to 1 MiB (for long scans),
and raise InvalidEntryError at the first bytes that are not a
complete (or, for the last one, valid) entry.
"""

import os
from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

from broker.records import record_set
from broker.records.batch import HEADER_SIZE, BatchHeader
from broker.records.errors import CorruptRecordError
from broker.records.legacy import LegacyHeader

from .errors import InvalidEntryError

_FIRST_CHUNK = 8 * 1024  # a lookup scans at most ~index.interval.bytes (4 KiB) of headers
_MAX_CHUNK = 1024 * 1024  # a long scan (recovery, dump-log) doubles its reads up to this

EntryHeader = BatchHeader | LegacyHeader  # a v2 batch's, or a legacy (v0/v1) message's


class FileSlice(NamedTuple):
    """A byte range of a segment file: what a fetch sends (with sendfile) or reads.

    It holds the segment's file object, which keeps the file open even after the segment is
    deleted, for as long as the slice lives.
    """

    file: BinaryIO
    position: int
    size: int

    def read(self) -> bytes:
        return os.pread(self.file.fileno(), self.size, self.position)

    def pieces(self, piece_size: int) -> Iterator["FileSlice"]:
        """The slice as consecutive slices of at most ``piece_size`` bytes (to read one at a time)."""
        for offset in range(0, self.size, piece_size):
            yield FileSlice(self.file, self.position + offset, min(piece_size, self.size - offset))


def iter_headers(fd: int, start: int, end: int) -> Iterator[tuple[int, EntryHeader]]:
    """Yield ``(position, header)`` for the entries in ``[start, end)`` of the file."""
    for pos, header, _ in _walk(fd, start, end, whole=False):
        yield pos, header


def iter_entries(fd: int, start: int, end: int) -> Iterator[tuple[int, EntryHeader, bytes]]:
    """Yield ``(position, header, entry bytes)`` for each entry; only the framing is checked."""
    for pos, header, entry in _walk(fd, start, end, whole=True):
        assert entry is not None
        yield pos, header, entry


def iter_valid_entries(fd: int, start: int, end: int) -> Iterator[tuple[int, EntryHeader, bytes]]:
    """Yield ``(position, header, entry bytes)`` for each entry, each checked whole (size and CRC)."""
    for pos, header, entry in iter_entries(fd, start, end):
        try:
            record_set.validate_entry(entry)
        except CorruptRecordError as exc:
            raise InvalidEntryError(pos, str(exc)) from None
        yield pos, header, entry


def _walk(fd: int, start: int, end: int, whole: bool) -> Iterator[tuple[int, EntryHeader, bytes | None]]:
    pos = start
    buf = b""
    buf_start = start
    chunk = _FIRST_CHUNK
    while pos < end:
        rel = pos - buf_start
        if len(buf) - rel < HEADER_SIZE:
            buf = os.pread(fd, min(chunk, end - pos), pos)
            buf_start, rel = pos, 0
            chunk = min(2 * chunk, _MAX_CHUNK)
        try:
            header: EntryHeader = record_set.parse_entry_header(buf, rel)
        except CorruptRecordError as exc:
            raise InvalidEntryError(pos, str(exc)) from None
        if pos + header.size > end:
            raise InvalidEntryError(pos, f"entry of {header.size} bytes runs past the end of the data at {end}")
        entry = None
        if whole:
            if rel + header.size <= len(buf):
                entry = buf[rel : rel + header.size]
            else:
                entry = os.pread(fd, header.size, pos)
        yield pos, header, entry
        pos += header.size
