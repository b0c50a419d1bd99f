"""The walker of v2 records in Python: the twin of the C walker (``recordwalk.h``).

``walk(records, count)`` reads the records section of one batch (decompressed) and yields each of
its ``count`` records as a ``RecordView``, checking as it goes what the C walker checks, in the
same order, and failing with the same words (``RecordWalkError``):

* varints of at most ten bytes, decoded to their exact (up to 70-bit) value;
* a negative key, value or header-value length means null; a negative header-key length or
  header count is an error;
* every field lies inside its record, every record inside the section, a record's fields end
  exactly where its length says, and nothing is left over after the last record.

Its users: ``batch.decode_records`` (and through it the broker's and the Spark source's pure-Python
decoding), ``record_check`` and ``retain`` when the C extension ``_recordwalk`` was not built.
"""

from collections.abc import Iterator
from typing import NamedTuple

from .buffers import Bytes
from .errors import CorruptRecordError
from .varint import read_varint

# what is wrong with a record (recordwalk.h's rw_reason says the same)
LENGTH_CUT = "its length is cut short"
LENGTH_OVERRUN = "its length overruns its batch"
EMPTY = "it is empty"
TIMESTAMP_DELTA_CUT = "its timestamp delta runs past the record"
OFFSET_DELTA_CUT = "its offset delta runs past the record"
KEY_OVERRUN = "its key runs past the record"
VALUE_OVERRUN = "its value runs past the record"
HEADER_COUNT_CUT = "its header count runs past the record"
HEADER_COUNT_NEGATIVE = "its header count is negative"
HEADER_KEY_NULL = "a header key is null"
HEADER_KEY_OVERRUN = "a header key runs past the record"
HEADER_VALUE_OVERRUN = "a header value runs past the record"
FIELDS_SHORT = "its fields end before its length says"
# what is wrong with the section as a whole
COUNT_NEGATIVE = "the record count is negative"
LEFT_OVER = "bytes are left over after the last record"


class RecordView(NamedTuple):
    """One record as it lies in its section: ``section[start:end]`` are its bytes."""

    start: int
    end: int
    attributes: int
    timestamp_delta: int
    offset_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


class RecordWalkError(CorruptRecordError):
    """A records section that does not hold what its batch says: ``index`` is the first bad record
    (-1 when the fault is the section's), ``reason`` what is wrong with it."""

    def __init__(self, message: str, index: int = -1, reason: str = ""):
        super().__init__(message)
        self.index = index
        self.reason = reason

    @classmethod
    def at(cls, index: int, reason: str) -> "RecordWalkError":
        """The error for record ``index`` (-1: the section), worded as the C walker's callers word it."""
        where = f"record {index}" if index >= 0 else "the batch"
        return cls(f"{where} is invalid: {reason}", index, reason)


def walk(records: Bytes, count: int) -> Iterator[RecordView]:
    """Each of the ``count`` records of ``records`` (a records section), checked before it is yielded."""
    if count < 0:
        raise RecordWalkError.at(-1, COUNT_NEGATIVE)
    section = bytes(records)  # no copy when it is bytes already; indexing bytes is the fastest
    end = len(section)
    pos = 0
    for index in range(count):
        start = pos
        found = read_varint(section, pos, end)
        if found is None:
            raise RecordWalkError.at(index, LENGTH_CUT)
        length, pos = found
        if length < 0 or length > end - pos:
            raise RecordWalkError.at(index, LENGTH_OVERRUN)
        record_end = pos + length
        if length == 0:
            raise RecordWalkError.at(index, EMPTY)
        attributes = section[pos]
        found = read_varint(section, pos + 1, record_end)
        if found is None:
            raise RecordWalkError.at(index, TIMESTAMP_DELTA_CUT)
        timestamp_delta, pos = found
        found = read_varint(section, pos, record_end)
        if found is None:
            raise RecordWalkError.at(index, OFFSET_DELTA_CUT)
        offset_delta, pos = found
        key, pos = _optional_bytes(section, pos, record_end, index, KEY_OVERRUN)
        value, pos = _optional_bytes(section, pos, record_end, index, VALUE_OVERRUN)
        found = read_varint(section, pos, record_end)
        if found is None:
            raise RecordWalkError.at(index, HEADER_COUNT_CUT)
        header_count, pos = found
        if header_count < 0:
            raise RecordWalkError.at(index, HEADER_COUNT_NEGATIVE)
        headers = []
        for _ in range(header_count):
            found = read_varint(section, pos, record_end)
            if found is None:
                raise RecordWalkError.at(index, HEADER_KEY_OVERRUN)
            key_length, pos = found
            if key_length < 0:
                raise RecordWalkError.at(index, HEADER_KEY_NULL)
            if key_length > record_end - pos:
                raise RecordWalkError.at(index, HEADER_KEY_OVERRUN)
            header_key = str(section[pos : pos + key_length], "utf-8", "replace")
            header_value, pos = _optional_bytes(section, pos + key_length, record_end, index, HEADER_VALUE_OVERRUN)
            headers.append((header_key, header_value))
        if pos != record_end:
            raise RecordWalkError.at(index, FIELDS_SHORT)
        yield RecordView(start, record_end, attributes, timestamp_delta, offset_delta, key, value, tuple(headers))
    if pos != end:
        raise RecordWalkError.at(-1, LEFT_OVER)


def _optional_bytes(section: bytes, pos: int, record_end: int, index: int, overrun: str) -> tuple[bytes | None, int]:
    """The length-prefixed bytes at ``pos`` (None for a negative length) and the position after them."""
    found = read_varint(section, pos, record_end)
    if found is None:
        raise RecordWalkError.at(index, overrun)
    length, pos = found
    if length < 0:
        return None, pos
    if length > record_end - pos:
        raise RecordWalkError.at(index, overrun)
    return section[pos : pos + length], pos + length
